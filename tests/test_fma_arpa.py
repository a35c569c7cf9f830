"""fma-adapt --arpa: FMA of ARPA models (paper 003 Eq. 1-2) checked by brute force over the vocabulary.

The brute force is independent of :mod:`asrpriv.ngram.fma`: the background is queried word by
word through :class:`asrpriv.ngram.arpa.ArpaModel` (pure-Python back-off), the formula is
applied to every word of the vocabulary and normalized by summing; the adapted ARPA written by
the CLI is read back the same way and compared, and kenlm loads it and must agree.
"""

from __future__ import annotations

import gzip
import itertools
import math
import random
import re

import numpy as np
import pytest

from conftest import AMI, assert_one_line_error, run_cli, run_proc

PRIOR = 0.1  # the CLI's default --prior

# A 3-gram that does not normalize (no context sums to 1), has no <unk>, gives <s> a unigram
# probability, and misses lower-order n-grams: "a d" and "d a" (suffixes of listed trigrams),
# "b d" (the context of "b d a"), and "a b" is listed without a back-off weight.
HAND_ARPA = """\\data\\
ngram 1=6
ngram 2=6
ngram 3=4

\\1-grams:
-1.0\t<s>\t-0.30
-0.7\t</s>
-0.6\ta\t-0.25
-0.9\tb\t-0.1
-0.5\tc\t0.2
-1.2\td

\\2-grams:
-0.3\t<s> a\t-0.2
-0.4\ta b
-0.2\tb c\t-0.15
-0.8\tc a\t0.1
-0.5\td b\t-0.3
-0.6\ta </s>

\\3-grams:
-0.1\t<s> a b
-0.2\ta b c
-0.35\tc a d
-0.05\tb d a

\\end\\
"""


def _read_counts(path):
    from asrpriv.io.counts import read_counts

    return read_counts(str(path))[1]


def brute_marginals(bg, counts, prior=PRIOR, oov_to_unk=False):
    """P_B (ARPA unigrams renormalized without <s>) and P_A (interpolated relative frequency)."""
    pred = [w for w in bg.vocabulary if w != "<s>"]
    p_b = {w: 10 ** bg.prob(w) for w in pred}
    total = sum(p_b.values())
    p_b = {w: p / total for w, p in p_b.items()}
    c_a = dict.fromkeys(pred, 0.0)
    for word, c in counts.items():
        target = word if word in c_a else ("<unk>" if oov_to_unk and "<unk>" in c_a else None)
        if target is not None and word != "<s>":
            c_a[target] += max(c, 0.0)
    mass = sum(c_a.values())
    p_a = {w: (1 - prior) * c_a[w] / mass + prior * p_b[w] for w in pred}
    return pred, p_b, p_a


def brute_adapted(bg, h, pred, p_b, p_a, beta, reversed_):
    """P_A(.|h) over ``pred``: the formula on every word, normalized by summing."""
    if reversed_:
        q = np.array([(10 ** bg.prob(w, h) / p_b[w]) ** beta * p_a[w] for w in pred])
    else:
        q = np.array([(p_a[w] / p_b[w]) ** beta * 10 ** bg.prob(w, h) for w in pred])
    return q / q.sum()


def kenlm_logprob(model, h, w):
    import kenlm

    state, out = kenlm.State(), kenlm.State()
    if h and h[0] == "<s>":
        model.BeginSentenceWrite(state)
        h = h[1:]
    else:
        model.NullContextWrite(state)
    for word in h:
        model.BaseScore(state, word, out)
        state, out = out, state
    return model.BaseScore(state, w, out)


def check_against_brute_force(bg_path, out_path, counts, beta, reversed_, contexts, kenlm_check=True,
                              kenlm_every=1, oov_to_unk=False):
    from asrpriv.ngram.arpa import read_arpa

    bg, out = read_arpa(str(bg_path)), read_arpa(str(out_path))
    pred, p_b, p_a = brute_marginals(bg, counts, oov_to_unk=oov_to_unk)
    assert out.prob("<s>") == -99  # never predicted
    ken = None
    if kenlm_check:
        import kenlm

        ken = kenlm.Model(str(out_path))
    worst = 0.0
    for i, h in enumerate(contexts):
        want = brute_adapted(bg, h, pred, p_b, p_a, beta, reversed_)
        got = np.array([10 ** out.prob(w, h) for w in pred])
        assert abs(got.sum() - 1) < 1e-6, (h, got.sum())
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, err_msg=str(h))
        if ken is not None and i % kenlm_every == 0 and "<s>" not in h[1:] and "</s>" not in h:
            ours = [out.prob(w, h) for w in pred]
            theirs = [kenlm_logprob(ken, h, w) for w in pred]
            worst = max(worst, float(np.max(np.abs(np.subtract(ours, theirs)))))
    assert worst < 1e-4


def all_contexts(bg):
    """The empty context and every listed n-gram below the top order (as a history)."""
    return [()] + [key for table in bg.ngrams[:-1] for key in table]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A 3-gram trained by train-ngram on a slice of AMI, and adaptation counts of adapt refs."""
    d = tmp_path_factory.mktemp("fma")
    lines = (AMI / "train_text").read_text().splitlines()[:80]
    (d / "train.txt").write_text("\n".join(lines) + "\n")
    assert run_cli(["train-ngram", "--ids", "--public", "-q", str(d / "train.txt"), "-o", str(d / "bg.arpa")]).exit_code == 0
    refs = (AMI / "adapt" / "ref.txt").read_text().splitlines()[:120]
    (d / "adapt.txt").write_text("\n".join(refs) + "\n")
    assert run_cli(["count-unigrams", "--text", "--ids", "-q", str(d / "adapt.txt"),
                    "-o", str(d / "adapt.counts")]).exit_code == 0
    (d / "hand.arpa").write_text(HAND_ARPA)
    (d / "hand.counts").write_text("a\t3\nb\t0\nd\t5\n</s>\t2\nzebra\t4\n<s>\t9\n")
    return d


def adapt(d, bg, counts, beta, reversed_=False, name="out.arpa", extra=()):
    args = ["fma-adapt", "-q", "--arpa", str(d / bg), "--adapt", str(d / counts), "--beta", str(beta),
            *(["--reversed"] if reversed_ else []), *extra, "-o", str(d / name)]
    result = run_cli(args)
    assert result.exit_code == 0, result.stderr
    return d / name


@pytest.mark.parametrize("reversed_,oov_to_unk", [(False, False), (True, True)],
                         ids=["standard-oov-dropped", "reversed-oov-to-unk"])
def test_trained_3gram_every_context_matches_brute_force(trained, reversed_, oov_to_unk):
    from asrpriv.ngram.arpa import read_arpa

    out = adapt(trained, "bg.arpa", "adapt.counts", 0.6, reversed_,
                extra=["--oov-to-unk"] if oov_to_unk else [])
    bg = read_arpa(str(trained / "bg.arpa"))
    counts = _read_counts(trained / "adapt.counts")
    assert any(w not in bg.vocabulary for w in counts)  # OOV adaptation words exist
    contexts = all_contexts(bg)
    assert len(contexts) > 500
    check_against_brute_force(trained / "bg.arpa", out, counts, 0.6, reversed_, contexts, kenlm_every=7,
                              oov_to_unk=oov_to_unk)


@pytest.mark.parametrize("beta", [0.0, 0.5, 1.3])
@pytest.mark.parametrize("reversed_", [False, True], ids=["standard", "reversed"])
def test_hand_arpa_missing_contexts_not_normalized(trained, beta, reversed_):
    """Every history of up to 2 words (listed or not) of a non-normalizing ARPA without <unk>."""
    out = adapt(trained, "hand.arpa", "hand.counts", beta, reversed_)
    words = ["<s>", "</s>", "a", "b", "c", "d"]
    contexts = [()] + [(w,) for w in words] + [(u, w) for u in words for w in words]
    check_against_brute_force(trained / "hand.arpa", out, _read_counts(trained / "hand.counts"), beta,
                              reversed_, contexts)
    text = out.read_text()
    for added in ("a d", "d a", "b d"):  # closure: kenlm must find the trigrams
        assert re.search(rf"\t{added}\t", text), added


def test_beta_zero_is_the_background_exactly(trained):
    from asrpriv.ngram.arpa import read_arpa

    out = adapt(trained, "bg.arpa", "adapt.counts", 0.0, extra=["--precision", "12"])
    bg, ad = read_arpa(str(trained / "bg.arpa")), read_arpa(str(out))
    for n, table in enumerate(bg.ngrams):
        assert set(ad.ngrams[n]) == set(table)  # train-ngram's model is closed: nothing added
        for key, (logp, bow) in table.items():
            assert ad.ngrams[n][key][0] == pytest.approx(logp, abs=2e-7)  # bg written with 7 digits
            if n < bg.order - 1:
                assert ad.ngrams[n][key][1] == pytest.approx(bow or 0.0, abs=2e-7)


@pytest.mark.parametrize("reversed_,beta", [(False, 0.7), (True, 1.0)])
def test_adaptation_marginal_equal_to_background_changes_nothing(trained, reversed_, beta):
    from asrpriv.ngram.arpa import read_arpa

    bg = read_arpa(str(trained / "bg.arpa"))
    pred, p_b, _ = brute_marginals(bg, {"a": 1})
    (trained / "same.counts").write_text("".join(f"{w}\t{1e6 * p_b[w]!r}\n" for w in pred))
    out = read_arpa(str(adapt(trained, "bg.arpa", "same.counts", beta, reversed_, name="same.arpa",
                              extra=["--precision", "12"])))
    for n, table in enumerate(bg.ngrams):
        for key, (logp, _bow) in table.items():
            assert out.ngrams[n][key][0] == pytest.approx(logp, abs=1e-6)


def test_reversed_beta_zero_is_the_adaptation_unigram(trained):
    from asrpriv.ngram.arpa import read_arpa

    out = read_arpa(str(adapt(trained, "bg.arpa", "adapt.counts", 0.0, True, name="r0.arpa")))
    bg = read_arpa(str(trained / "bg.arpa"))
    pred, _, p_a = brute_marginals(bg, _read_counts(trained / "adapt.counts"))
    for h in [(), ("<s>",), ("i", "think"), ("the",)]:
        got = np.array([10 ** out.prob(w, h) for w in pred])
        np.testing.assert_allclose(got, [p_a[w] for w in pred], rtol=1e-6)


def test_privacy_history_and_noisy_counts(trained, tmp_path):
    """Noisy (unclamped, negative) counts: clipped to 0; the output carries their history;
    seeded noise is refused without the test flag."""
    import kenlm

    from asrpriv.ngram.arpa import read_arpa

    vocab = tmp_path / "vocab.txt"
    bg = read_arpa(str(trained / "bg.arpa"))
    vocab.write_text("\n".join(w for w in bg.vocabulary if w not in ("<s>", "</s>")) + "\n")
    raw = tmp_path / "raw.counts"
    run_proc(["count-unigrams", "--text", "--ids", "--max-l1", "20", "-o", str(raw),
              str(trained / "adapt.txt")], check=True)
    noisy = tmp_path / "noisy.counts"
    run_proc(["add-noise", "--epsilon", "0.5", "--vocab", str(vocab), "--no-clamp", "--seed", "3",
              "-o", str(noisy), str(raw)], check=True)
    counts = _read_counts(noisy)
    assert min(counts.values()) < 0
    out = tmp_path / "noisy.arpa"
    args = ["fma-adapt", "--arpa", str(trained / "bg.arpa"), "--adapt", str(noisy), "--beta", "0.5",
            "-o", str(out)]
    assert_one_line_error(run_proc(args), "seeded")
    assert not out.exists()
    proc = run_proc(args[:1] + ["--allow-seeded-test-noise"] + args[1:], check=True)
    assert "clipped to 0" in proc.stderr.decode()
    header = [line for line in out.read_text().splitlines() if line.startswith("#")]
    noisy_meta = dict(line[1:].split("=", 1) for line in noisy.read_text().splitlines() if line.startswith("#"))
    out_meta = dict(line[1:].split("=", 1) for line in header)
    assert out_meta["privacy_history"] == noisy_meta["privacy_history"]
    assert out_meta["seeded"] == "1" and out_meta["epsilon"] == "0.5"
    assert out_meta["variant"] == "standard" and out_meta["beta"] == "0.5"
    kenlm.Model(str(out))  # kenlm skips the '#' lines before \data\
    contexts = [(), ("<s>",), ("the",), ("i", "think")]
    check_against_brute_force(trained / "bg.arpa", out, counts, 0.5, False, contexts)


def test_background_counts_marginal(trained):
    """--background COUNTS: P_B(w) = add-1/2 smoothed counts over the vocabulary (no <s>)."""
    from asrpriv.ngram.arpa import read_arpa

    (trained / "bgc.counts").write_text("a\t10\nb\t1\nc\t4\n</s>\t6\nunknown\t3\n")
    out = read_arpa(str(adapt(trained, "hand.arpa", "hand.counts", 0.8, extra=[
        "--background", str(trained / "bgc.counts"), "--precision", "12"], name="bgc.arpa")))
    bg = read_arpa(str(trained / "hand.arpa"))
    pred = ["</s>", "a", "b", "c", "d"]
    c_b = {"</s>": 6, "a": 10, "b": 1, "c": 4, "d": 0}  # 'unknown': no <unk>, dropped
    p_b = {w: (c_b[w] + 0.5) / (21 + 2.5) for w in pred}
    c_a = {"</s>": 2, "a": 3, "b": 0, "c": 0, "d": 5}
    p_a = {w: 0.9 * c_a[w] / 10 + 0.1 * p_b[w] for w in pred}
    for h in [(), ("a",), ("c", "a"), ("b", "d")]:
        q = np.array([(p_a[w] / p_b[w]) ** 0.8 * 10 ** bg.prob(w, h) for w in pred])
        got = np.array([10 ** out.prob(w, h) for w in pred])
        np.testing.assert_allclose(got, q / q.sum(), rtol=1e-9)


def test_firstpass_2m_bigram_random_contexts():
    """The 2M-bigram ARPA: 200 random contexts (and the empty one), brute force over 72k words,
    computed in-process from the arrays (the writer is checked on the small models)."""
    from asrpriv.ngram.fma import adapt_arpa, marginals
    from asrpriv.ngram.packed import read_packed

    model = read_packed(str(AMI / "firstpass-en-us-2gram.arpa.gz"))
    words = model.words
    refs = (AMI / "adapt" / "ref.txt").read_text().split()
    counts: dict[str, float] = {}
    for w in refs:
        counts[w] = counts.get(w, 0) + 1
    marg = marginals(model, counts, PRIOR)
    v = len(words)
    uni, big = model.orders
    # background distribution of each context, brute force over the vocabulary
    bow = np.nan_to_num(uni.bow, nan=0.0)
    order_ctx = np.argsort(big.ids[:, 0], kind="stable")
    starts = np.searchsorted(big.ids[order_ctx, 0], np.arange(v + 1))
    rng = random.Random(7)
    contexts = rng.sample(range(v), 200)
    for reversed_, beta in ((False, 0.5), (True, 0.75)):
        out = adapt_arpa(model, marg, beta, reversed_)
        o_uni, o_big = out.orders
        assert len(o_big.logp) == len(big.logp)  # closed already
        o_bow = o_uni.bow
        o_codes = o_big.ids[:, 0].astype(np.int64) * v + o_big.ids[:, 1]
        keep = np.ones(v, dtype=bool)
        keep[words.index("<s>")] = False
        pb, pa = marg.background, marg.adaptation

        def formula(logp_h):
            with np.errstate(divide="ignore", invalid="ignore"):
                if reversed_:
                    q = np.where(keep, (10.0 ** logp_h / pb) ** beta * pa, 0.0)
                else:
                    q = np.where(keep, (pa / pb) ** beta * 10.0 ** logp_h, 0.0)
            return q / q.sum()

        def dist(logp_uni, bow_h, rows_w, rows_logp):
            logp = logp_uni + bow_h
            logp[rows_w] = rows_logp
            return logp

        got0 = 10.0 ** np.where(keep, o_uni.logp, -np.inf)
        np.testing.assert_allclose(got0, formula(uni.logp), rtol=1e-9)
        for h in contexts:
            sel = order_ctx[starts[h]:starts[h + 1]]
            want = formula(dist(uni.logp.copy(), bow[h], big.ids[sel, 1], big.logp[sel]))
            lo, hi = np.searchsorted(o_codes, [h * v, (h + 1) * v])
            got = 10.0 ** dist(o_uni.logp.copy(), o_bow[h], o_big.ids[lo:hi, 1], o_big.logp[lo:hi])
            got[~keep] = 0.0
            assert abs(got.sum() - 1) < 1e-6
            np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-300)


# ------------------------------------------------------------------ bad input

BAD_ARPAS = {
    "counts_lie": (HAND_ARPA.replace("ngram 2=6", "ngram 2=7"), 22, "declares 7 2-grams"),
    "no_end": (HAND_ARPA.replace("\\end\\\n", ""), 27, "missing \\end\\"),
    "duplicate": (HAND_ARPA.replace("-0.6\ta </s>", "-0.6\tb c"), 20, "duplicate 2-gram"),
    "not_a_number": (HAND_ARPA.replace("-0.2\tb c\t-0.15", "-0.2\tb c\tx0.15"), 17, "expected a number"),
}


@pytest.mark.parametrize("case", sorted(BAD_ARPAS))
def test_bad_arpa_one_line_error_no_output(trained, tmp_path, case):
    text, line, needle = BAD_ARPAS[case]
    bad = tmp_path / "bad.arpa.gz"
    with gzip.open(bad, "wt") as f:
        f.write(text)
    out = tmp_path / "out.arpa"
    proc = run_proc(["fma-adapt", "--arpa", str(bad), "--adapt", str(trained / "hand.counts"),
                     "--beta", "0.5", "-o", str(out)])
    assert_one_line_error(proc, f"bad.arpa.gz:{line}:", needle)
    assert not out.exists()


def test_counts_without_overlap_one_line_error(trained, tmp_path):
    counts = tmp_path / "other.counts"
    counts.write_text("#format=asrpriv-counts/2\nzebra\t3\n<unk>\t2\n")
    out = tmp_path / "out.arpa"
    proc = run_proc(["fma-adapt", "--arpa", str(trained / "bg.arpa"), "--adapt", str(counts),
                     "--beta", "0.5", "-o", str(out)])
    assert_one_line_error(proc, "other.counts:2:", "ARPA vocabulary")
    assert not out.exists()


def test_factor_mode_unchanged_and_mode_errors(trained):
    counts = str(trained / "adapt.counts")
    result = run_cli(["fma-adapt", "--background", counts, "--global", counts, "--personal", counts])
    assert result.exit_code == 0
    rows = [line.split("\t") for line in result.stdout.splitlines() if not line.startswith("#")]
    assert all(math.isclose(float(f), 0.0, abs_tol=1e-12) for _, f in rows)  # qbar = u: factor 1
    assert "beta=0.25" in result.stdout
    assert_one_line_error(run_proc(["fma-adapt", "--adapt", counts]), "--arpa")
    assert_one_line_error(run_proc(["fma-adapt", "--arpa", str(trained / "bg.arpa")]), "--adapt")


def test_fast_arpa_reader_equals_line_reader(trained, tmp_path):
    """The bulk path gives the line reader's arrays exactly, and declines every malformed file (so
    the line reader reports it with its line)."""
    from asrpriv.ngram import packed

    commented = tmp_path / "c.arpa"
    commented.write_text("# a comment\n#k=v\n\n" + HAND_ARPA.replace("-0.1\t<s> a b", "-1e-2 \t <s>  a b "))
    adapted = adapt(trained, "hand.arpa", "hand.counts", 0.5, name="fast.arpa")
    for path in (trained / "hand.arpa", trained / "bg.arpa", adapted, commented):
        fast = packed._read_bulk(str(path))
        assert fast is not None, path
        slow = packed._read_lines(str(path))
        assert fast.words == slow.words
        for a, b in zip(fast.orders, slow.orders, strict=True):
            assert np.array_equal(a.ids, b.ids) and np.array_equal(a.logp, b.logp)
            assert np.array_equal(a.bow, b.bow, equal_nan=True)
    for case, (text, _, _) in BAD_ARPAS.items():
        bad = tmp_path / f"{case}.arpa"
        bad.write_text(text)
        assert packed._read_bulk(str(bad)) is None, case


def _random_arpa(seed: int) -> str:
    """A random non-normalizing 4-gram with <unk>, whose lower orders miss 30% of the prefixes
    and suffixes of the higher ones (KenLM's own test ARPA is of that kind)."""
    rng = random.Random(seed)
    vocab = ["<s>", "</s>", "<unk>", "a", "b", "c", "d"]
    follow = vocab[1:]
    grams = {1: {(w,) for w in vocab}}
    for n in (2, 3, 4):
        grams[n] = {tuple([rng.choice(vocab[:1] + follow[2:]) if n == 2 else rng.choice(vocab[2:])]
                          + [rng.choice(vocab[2:]) for _ in range(n - 2)] + [rng.choice(follow)])
                    for _ in range(12 * n)}
    for n in (2, 3):
        grams[n] = {g for g in grams[n] if rng.random() > 0.3}
    lines = ["\\data\\"] + [f"ngram {n}={len(grams[n])}" for n in (1, 2, 3, 4)] + [""]
    for n in (1, 2, 3, 4):
        lines.append(f"\\{n}-grams:")
        for g in sorted(grams[n]):
            prob = -99 if g == ("<s>",) else round(rng.uniform(-2.0, -0.05), 4)
            bow = f"\t{round(rng.uniform(-1.0, 0.5), 4)}" if n < 4 and rng.random() < 0.7 else ""
            lines.append(f"{prob}\t{' '.join(g)}{bow}")
        lines.append("")
    return "\n".join(lines + ["\\end\\", ""])


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("reversed_", [False, True], ids=["standard", "reversed"])
def test_random_4gram_missing_lower_orders(trained, tmp_path, seed, reversed_):
    """Every history of up to 3 words, brute force and kenlm, on random back-off structures."""
    (tmp_path / "r.arpa").write_text(_random_arpa(seed))
    (tmp_path / "r.counts").write_text("a\t4\nb\t1\n</s>\t2\nzebra\t3\n")
    out = adapt(tmp_path, "r.arpa", "r.counts", 0.8, reversed_, extra=["--oov-to-unk"])
    words = ["<s>", "</s>", "<unk>", "a", "b", "c", "d"]
    contexts = [()] + [tuple(c) for n in (1, 2, 3) for c in itertools.product(words, repeat=n)]
    check_against_brute_force(tmp_path / "r.arpa", out, _read_counts(tmp_path / "r.counts"), 0.8,
                              reversed_, contexts, oov_to_unk=True)
    from asrpriv.ngram.arpa import read_arpa

    before, after = read_arpa(str(tmp_path / "r.arpa")).counts(), read_arpa(str(out)).counts()
    assert after[1] > before[1] and after[2] > before[2] and after[3] == before[3]  # closure added
