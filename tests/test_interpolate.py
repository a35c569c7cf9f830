"""``asrpriv interpolate``: EM weights (compute-best-mix) and static ARPA mixtures (-mix-lm)."""

from __future__ import annotations

import json
import math

import kenlm
import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from asrpriv.mixture.em import estimate_weights, mix_logprobs
from asrpriv.ngram import train
from asrpriv.ngram.arpa import read_arpa
from asrpriv.ngram.counting import read_sentences
from conftest import AMI, run_cli, run_proc

LN10 = math.log(10.0)


def one_line_error(res, *needles):
    assert res.exit_code == 2, (res.exit_code, res.stdout, res.stderr)
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture(scope="module")
def slices():
    sents = list(read_sentences(str(AMI / "train_text"), ids=True))
    return sents[:400], sents[400:800], sents[2000:2300]


@pytest.fixture(scope="module")
def lms(tmp_path_factory, slices):
    """Two small 3-grams (different vocabularies) and a held-out text."""
    tmp = tmp_path_factory.mktemp("lms")
    a, b, held = slices
    paths = []
    for name, sents in (("a", a), ("b", b)):
        p = tmp / f"{name}.arpa"
        train(sents, 3, discount_fallback=True).write(str(p))
        paths.append(str(p))
    text = tmp / "held.txt"
    text.write_text("".join(" ".join(s) + "\n" for s in held))
    return paths[0], paths[1], str(text)


# ---------------------------------------------------------------- EM

def test_em_recovers_generating_weights_on_synthetic_streams():
    rng = np.random.default_rng(3)
    v, n, lam = 300, 40000, np.array([0.25, 0.6, 0.15])
    dists = rng.dirichlet(np.full(v, 0.3), size=3)
    comp = rng.choice(3, size=n, p=lam)
    u = rng.random(n)
    cdf = np.cumsum(dists, axis=1)
    tokens = np.minimum((cdf[comp] < u[:, None]).sum(axis=1), v - 1)
    logp = np.log(dists[:, tokens])
    fit = estimate_weights(logp, tol=1e-9)
    assert fit.converged
    assert np.allclose(fit.weights, lam, atol=0.03)
    # independent check: the EM point is the maximum-likelihood point (scipy on the simplex
    # edge through it: moving weight between components 0 and 1 cannot raise the likelihood)
    def nll(x):
        w = fit.weights.copy()
        s = w[0] + w[1]
        w[0], w[1] = x * s, (1 - x) * s
        return -mix_logprobs(logp, w).sum()
    best = minimize_scalar(nll, bounds=(1e-6, 1 - 1e-6), method="bounded", options={"xatol": 1e-10})
    assert best.x * (fit.weights[0] + fit.weights[1]) == pytest.approx(fit.weights[0], abs=1e-4)
    assert -fit.ln_mix.sum() <= nll(0.5) + 1e-6


def _bigram_matrix(model, vocab):
    """P(w | prev) for every prev in vocab (and <s>) over vocab, by back-off queries."""
    return np.array([[10.0 ** model.prob(w, (prev,)) for w in vocab] for prev in vocab])


def test_em_recovers_weights_of_text_sampled_from_two_real_arpas(tmp_path, slices):
    a, b, _ = slices
    a, b = a[:150], b[:150]
    vocab = sorted({w for s in a + b for w in s})
    paths = []
    for name, sents in (("a", a), ("b", b)):
        p = tmp_path / f"{name}.arpa"
        train(sents, 2, vocab=vocab, discount_fallback=True).write(str(p))
        paths.append(str(p))
    models = [read_arpa(p) for p in paths]
    words = [w for w in models[0].vocabulary if w != "<s>"]
    ctx = words + ["<s>"]
    lam = 0.35
    mats = [np.array([[10.0 ** m.prob(w, (c,)) for w in words] for c in ctx]) for m in models]
    mix = lam * mats[0] + (1 - lam) * mats[1]
    assert np.allclose(mix.sum(axis=1), 1.0, atol=1e-6)  # shared vocabulary: both normalize
    rng = np.random.default_rng(7)
    eos, start = words.index("</s>"), len(ctx) - 1
    lines, tokens = [], 0
    while tokens < 8000:
        prev, sent = start, []
        while True:
            w = int(rng.choice(len(words), p=mix[prev] / mix[prev].sum()))
            tokens += 1
            if w == eos or len(sent) > 40:
                break
            sent.append(words[w])
            prev = w
        lines.append(" ".join(sent))
    text = tmp_path / "sampled.txt"
    text.write_text("\n".join(lines) + "\n")
    res = run_cli(["interpolate", "-q", "--lm", paths[0], "--lm", paths[1], "--heldout", str(text)])
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["weights"][0] == pytest.approx(lam, abs=0.05)
    assert sum(out["weights"]) == pytest.approx(1.0, abs=1e-12)
    assert out["converged"] and out["tolerance"] == 1e-6


def test_interpolate_json_matches_perplexity_with_those_weights(lms):
    a, b, held = lms
    res = run_cli(["interpolate", "-q", "--lm", a, "--lm", b, "--heldout", held])
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert len(out["weights"]) == 2 and out["tokens"] == out["words"] + out["sentences"]
    assert out["perplexity"] < min(out["component_perplexities"])
    weights = ",".join(repr(w) for w in out["weights"])
    ppl = json.loads(run_cli(["perplexity", "-q", "--json", "--lm", a, "--lm", b, "--weights", weights,
                              held]).stdout)
    assert ppl["ppl"] == pytest.approx(out["perplexity"], rel=1e-9)
    # --oov exclude: SRILM's convention, tokens outside both vocabularies left out
    ex = json.loads(run_cli(["interpolate", "-q", "--lm", a, "--lm", b, "--heldout", held,
                             "--oov", "exclude"]).stdout)
    assert ex["tokens"] == out["tokens"] - out["oovs"]


# ---------------------------------------------------------------- static mixture

@pytest.fixture(scope="module")
def tiny(tmp_path_factory, slices):
    """Two tiny 3-grams with different vocabularies, and their static mixture."""
    tmp = tmp_path_factory.mktemp("tiny")
    a, b, _ = slices
    paths = []
    for name, sents in (("a", a[:60]), ("b", b[:60])):
        p = tmp / f"{name}.arpa"
        train(sents, 3, discount_fallback=True).write(str(p))
        paths.append(str(p))
    mixed = tmp / "mix.arpa"
    res = run_cli(["interpolate", "-q", "--lm", paths[0], "--lm", paths[1], "--weights", "0.3,0.7",
                   "-o", str(mixed), "--precision", "10"])
    assert res.exit_code == 0, res.stderr
    return paths, str(mixed)


def test_static_mixture_normalizes_in_every_context(tiny):
    _, mixed = tiny
    mix = read_arpa(mixed)
    vocab = mix.vocabulary
    contexts = [()] + [k for table in mix.ngrams[:-1] for k in table]
    assert len(contexts) > 300
    worst = 0.0
    for ctx in contexts:
        total = math.fsum(10.0 ** mix.prob(w, ctx) for w in vocab)
        worst = max(worst, abs(total - 1.0))
    assert worst < 1e-6


def test_static_mixture_equals_dynamic_interpolation_on_listed_ngrams(tiny):
    paths, mixed = tiny
    comps = [read_arpa(p) for p in paths]
    mix = read_arpa(mixed)
    vocab_sets = [set(c.vocabulary) for c in comps]
    assert vocab_sets[0] != vocab_sets[1]
    union = {n for c in comps for table in c.ngrams for n in table}
    listed = {n for table in mix.ngrams for n in table}
    assert union <= listed  # the union of the n-grams (closed: nothing added for KN models)
    checked = 0
    for table in mix.ngrams:
        for key, (logp, _bow) in table.items():
            if key[-1] == "<s>":
                assert logp == -99
                continue
            ctx, w = key[:-1], key[-1]
            # P_k through k's own back-off; a predicted word outside k's vocabulary: 0
            dyn = math.fsum(lam * (10.0 ** c.prob(w, ctx) if w in vs else 0.0)
                            for lam, c, vs in zip((0.3, 0.7), comps, vocab_sets))
            assert logp == pytest.approx(math.log10(dyn), abs=1e-9), key
            checked += 1
    assert checked == sum(mix.counts()) - 1


def test_kenlm_loads_the_mixture_and_agrees(tiny, slices):
    paths, mixed = tiny
    mix = read_arpa(mixed)
    km = kenlm.Model(mixed)
    _, _, held = slices
    for sent in held[:100]:
        assert km.score(" ".join(sent)) == pytest.approx(mix.score_sentence(sent), abs=1e-4)
    # where every LM knows every word, sentence scores of the mixture's listed n-grams
    # equal kenlm's dynamic interpolation; on backed-off n-grams they differ (SRILM's approximation)
    ka, kb = (kenlm.Model(p) for p in paths)
    state_a, state_b, state_m = kenlm.State(), kenlm.State(), kenlm.State()
    ka.BeginSentenceWrite(state_a)
    kb.BeginSentenceWrite(state_b)
    km.BeginSentenceWrite(state_m)
    word = next(k[1] for k in mix.ngrams[1] if k[0] == "<s>" and k[1] in ka and k[1] in kb)
    o = kenlm.State()
    dyn = math.log10(0.3 * 10 ** ka.BaseScore(state_a, word, o) + 0.7 * 10 ** kb.BaseScore(state_b, word, o))
    assert km.BaseScore(state_m, word, o) == pytest.approx(dyn, abs=1e-5)


def test_static_mixture_of_the_2m_bigram_arpa(tmp_path, lms):
    a, _, held = lms
    out = tmp_path / "big.arpa"
    proc = run_proc(["interpolate", "-q", "--lm", str(AMI / "firstpass-en-us-2gram.arpa.gz"), "--lm", a,
                     "--weights", "0.5,0.5", "-o", str(out)])
    assert proc.returncode == 0, proc.stderr
    km = kenlm.Model(str(out))
    assert km.order == 3
    sent = open(held).readline().split()
    # the first word after <s> is a listed bigram of both: the mixture is the dynamic value there
    fp = kenlm.Model(str(AMI / "firstpass-en-us-2gram.arpa.gz"))
    small = kenlm.Model(a)
    w = sent[0]
    assert w in fp and w in small
    s, o = kenlm.State(), kenlm.State()
    fp.BeginSentenceWrite(s)
    p1 = fp.BaseScore(s, w, o)
    small.BeginSentenceWrite(s)
    p2 = small.BaseScore(s, w, o)
    km.BeginSentenceWrite(s)
    assert km.BaseScore(s, w, o) == pytest.approx(math.log10(0.5 * 10 ** p1 + 0.5 * 10 ** p2), abs=1e-5)


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("args,needles", [
    (["--weights", "0.3,0.6"], ["sum to 0.9"]),
    (["--weights", "0.3,0.3,0.4"], ["3 weights for 2 LMs"]),
    (["--weights", "a,b"], ["comma-separated numbers"]),
])
def test_bad_weights(lms, tmp_path, args, needles):
    a, b, _ = lms
    out = tmp_path / "m.arpa"
    res = run_cli(["interpolate", "--lm", a, "--lm", b, *args, "-o", str(out)])
    one_line_error(res, *needles)
    assert not out.exists()


def test_bad_lm_and_empty_heldout(lms, tmp_path):
    a, _, held = lms
    bad = tmp_path / "bad.arpa"
    bad.write_text("not an lm\n")
    one_line_error(run_cli(["interpolate", "--lm", a, "--lm", str(bad), "--heldout", held]), "bad.arpa")
    one_line_error(run_cli(["interpolate", "--lm", a, "--lm", str(bad), "--weights", "0.5,0.5",
                            "-o", str(tmp_path / "m.arpa")]), "bad.arpa:1", "expected \\data\\")
    assert not (tmp_path / "m.arpa").exists()
    one_line_error(run_cli(["interpolate", "--lm", a, "--lm", str(tmp_path / "none.arpa"),
                            "--heldout", held]), "none.arpa", "no such file")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    one_line_error(run_cli(["interpolate", "--lm", a, "--lm", a, "--heldout", str(empty)]), "empty input")
    one_line_error(run_cli(["interpolate", "--lm", a, "--heldout", held]), "two --lm")


@pytest.mark.parametrize("text,line,needle", [
    ("\\data\\\nngram 1=2\n\n\\1-grams:\n-1\ta\n-1\ta\n\n\\end\\\n", 6, "duplicate 1-gram"),
    ("\\data\\\nngram 1=2\nngram 2=2\n\n\\1-grams:\n-1\ta\n-1\tb\n\n\\2-grams:\n-1\ta b\n-2\ta b\n\n\\end\\\n",
     11, "duplicate 2-gram 'a b'"),
    ("\\data\\\nngram 1=3\n\n\\1-grams:\n-1\ta\n-1\tb\n\n\\end\\\n", 8, "declares 3 1-grams"),
    ("\\data\\\nngram 1=1\n\n\\1-grams:\n-1\ta\n", 5, "missing \\end\\"),
    ("\\data\\\nngram 1=1\n\n\\1-grams:\nx\ta\n\n\\end\\\n", 5, "expected a number"),
])
def test_packed_reader_errors(tmp_path, text, line, needle):
    from asrpriv.errors import InputError
    from asrpriv.ngram.packed import read_packed

    p = tmp_path / "x.arpa"
    p.write_text(text)
    with pytest.raises(InputError) as err:
        read_packed(str(p))
    assert err.value.line == line and needle in err.value.detail


def test_perplexity_warns_when_many_words_are_oov(tmp_path):
    from conftest import run_proc

    arpa = tmp_path / "tiny.arpa"
    arpa.write_text("\\data\\\nngram 1=4\nngram 2=1\n\n\\1-grams:\n-99\t<s>\t0\n-0.5\t</s>\n"
                    "-0.5\ta\t0\n-0.5\t<unk>\n\n\\2-grams:\n-0.3\t<s> a\n\n\\end\\\n",
                    encoding="utf-8")  # kenlm needs order >= 2
    proc = run_proc(["perplexity", "--lm", str(arpa)], input="a zz yy\na\n")
    assert proc.returncode == 0, proc.stderr
    assert b"50.0% of the words are outside the vocabulary" in proc.stderr
    proc = run_proc(["perplexity", "--lm", str(arpa)], input="a a a\n")
    assert b"outside the vocabulary" not in proc.stderr
