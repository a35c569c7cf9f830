"""train-ngram: interpolated modified Kneser-Ney (lmplz-style) against hand-worked numbers, an
independent textbook implementation, kenlm, normalization, and real AMI text."""

from __future__ import annotations

import io
import math
from collections import Counter, defaultdict
from fractions import Fraction as F
from pathlib import Path

import pytest

from conftest import AMI, assert_one_line_error, run_cli, run_proc

kenlm = pytest.importorskip("kenlm")

from asrpriv.ngram import read_arpa, train, train_arpa  # noqa: E402
from asrpriv.ngram.counting import read_sentences  # noqa: E402

TRAIN_TEXT = AMI / "train_text"
DEV_REF = AMI / "dev" / "ref.txt"

# ---------------------------------------------------------------------------------------------
# (2) A hand-worked bigram model
# ---------------------------------------------------------------------------------------------

HAND_CORPUS = ["a b c", "a b c", "a b", "b c d", "a c", "d a b", "c c", "a b a b", "b e", "e b",
               "e b", "a f", "d c", "c d", "b c", "a d e d", "g a g", "h", "c h"]

#: bigram counts of HAND_CORPUS, listed by hand (each sentence framed as <s> ... </s>)
HAND_BIGRAMS = {
    ("<s>", "a"): 7, ("<s>", "b"): 3, ("<s>", "c"): 3, ("<s>", "d"): 2, ("<s>", "e"): 2,
    ("<s>", "g"): 1, ("<s>", "h"): 1,
    ("a", "b"): 6, ("a", "c"): 1, ("a", "d"): 1, ("a", "f"): 1, ("a", "g"): 1,
    ("b", "</s>"): 5, ("b", "a"): 1, ("b", "c"): 4, ("b", "e"): 1,
    ("c", "</s>"): 6, ("c", "c"): 1, ("c", "d"): 2, ("c", "h"): 1,
    ("d", "</s>"): 3, ("d", "a"): 1, ("d", "c"): 1, ("d", "e"): 1,
    ("e", "</s>"): 1, ("e", "b"): 2, ("e", "d"): 1,
    ("f", "</s>"): 1, ("g", "</s>"): 1, ("g", "a"): 1, ("h", "</s>"): 2,
}


def _bigram_table(corpus):
    table = Counter()
    for line in corpus:
        s = ["<s>"] + line.split() + ["</s>"]
        table.update(zip(s, s[1:]))
    return dict(table)


def test_hand_worked_bigram_kneser_ney():
    assert _bigram_table(HAND_CORPUS) == HAND_BIGRAMS  # the hand listing is right

    # Bigram count-of-counts (highest order: raw counts):
    #   count 1: <s> g, <s> h, a c, a d, a f, a g, b a, b e, c c, c h, d a, d c, d e, e </s>,
    #            e d, f </s>, g </s>, g a            -> n1 = 18
    #   count 2: <s> d, <s> e, c d, e b, h </s>      -> n2 = 5
    #   count 3: <s> b, <s> c, d </s>                -> n3 = 3
    #   count 4: b c                                 -> n4 = 1
    # C&G Eq. (26): Y = n1 / (n1 + 2 n2) = 18 / 28 = 9/14
    #   D1 = 1 - 2 Y n2/n1 = 1 - 2 (9/14)(5/18) = 9/14
    #   D2 = 2 - 3 Y n3/n2 = 2 - 3 (9/14)(3/5) = 59/70
    #   D3 = 3 - 4 Y n4/n3 = 3 - 4 (9/14)(1/3) = 15/7
    Y2 = F(18, 18 + 2 * 5)
    D2_ = (1 - 2 * Y2 * F(5, 18), 2 - 3 * Y2 * F(3, 5), 3 - 4 * Y2 * F(1, 3))
    assert D2_ == (F(9, 14), F(59, 70), F(15, 7))

    # Unigram adjusted counts = continuation counts (number of distinct left words, <s> included):
    #   </s>: b c d e f g h = 7;  c: <s> a b c d = 5;  a: <s> b d g = 4;  d: <s> a c e = 4;
    #   b: <s> a e = 3;  e: <s> b d = 3;  g: <s> a = 2;  h: <s> c = 2;  f: a = 1;  <unk>, <s>: 0
    cont = {"</s>": 7, "c": 5, "a": 4, "d": 4, "b": 3, "e": 3, "g": 2, "h": 2, "f": 1}
    # n1 = 1 (f), n2 = 2 (g h), n3 = 2 (b e), n4 = 2 (a d): Y = 1/5
    #   D1 = 1 - 2 (1/5)(2/1) = 1/5,  D2 = 2 - 3 (1/5)(2/2) = 7/5,  D3 = 3 - 4 (1/5)(2/2) = 11/5
    Y1 = F(1, 1 + 2 * 2)
    D1_ = (1 - 2 * Y1 * F(2, 1), 2 - 3 * Y1 * F(2, 2), 3 - 4 * Y1 * F(2, 2))
    assert D1_ == (F(1, 5), F(7, 5), F(11, 5))

    model = train([s.split() for s in HAND_CORPUS], order=2)
    assert model.orders[1].count_of_counts == (18, 5, 3, 1)
    assert model.orders[0].count_of_counts == (1, 2, 2, 2)
    for got, want in zip(model.orders[1].discounts + model.orders[0].discounts, D2_ + D1_):
        assert got == pytest.approx(float(want), abs=1e-12)

    def disc(count, D):
        return 0 if count == 0 else D[min(count, 3) - 1]

    # Unigrams: denominator = sum of continuation counts = 31 (the number of bigram types);
    # gamma() = (D1*1 + D2*2 + D3*6) / 31 = 16.2/31, shared uniformly over |V| = 10 words
    # (<unk> </s> a b c d e f g h; <s> excluded).
    denom1 = sum(cont.values())
    assert denom1 == 31 == len(HAND_BIGRAMS)
    gamma0 = (D1_[0] * 1 + D1_[1] * 2 + D1_[2] * 6) / denom1
    assert gamma0 == F(162, 310)
    V = 10

    def p1(w):
        c = cont.get(w, 0)
        return F(c - disc(c, D1_)) / denom1 + gamma0 / V

    assert p1("a") == F(342, 3100)         # (4 - 11/5)/31 + 1.62/31
    assert p1("<unk>") == F(162, 3100)     # only the uniform share
    assert sum(p1(w) for w in ["<unk>", "</s>", "a", "b", "c", "d", "e", "f", "g", "h"]) == 1

    # Context "a": a b 6, a c 1, a d 1, a f 1, a g 1 -> denominator 10, N1 = 4, N3+ = 1
    #   gamma(a) = (4 D1 + D3) / 10 = 33/70
    gamma_a = (4 * D2_[0] + D2_[2]) / 10
    assert gamma_a == F(33, 70)
    p_b_a = (6 - D2_[2]) / 10 + gamma_a * p1("b")
    p_c_a = (1 - D2_[0]) / 10 + gamma_a * p1("c")
    p_e_a = gamma_a * p1("e")                   # unseen after "a": back-off
    # Context "<s>": counts 7 3 3 2 2 1 1 -> denominator 19, N1 = 2, N2 = 2, N3+ = 3
    gamma_s = (2 * D2_[0] + 2 * D2_[1] + 3 * D2_[2]) / 19
    p_a_s = (7 - D2_[2]) / 19 + gamma_s * p1("a")

    lm = read_arpa_text(train_arpa([s.split() for s in HAND_CORPUS], order=2, precision=12))
    log = lambda x: math.log10(float(x))  # noqa: E731
    assert lm.ngrams[0][("a",)][0] == pytest.approx(log(p1("a")), abs=1e-11)
    assert lm.ngrams[0][("<unk>",)][0] == pytest.approx(log(p1("<unk>")), abs=1e-11)
    assert lm.ngrams[0][("<s>",)][0] == -99
    assert lm.ngrams[0][("a",)][1] == pytest.approx(log(gamma_a), abs=1e-11)
    assert lm.ngrams[0][("<s>",)][1] == pytest.approx(log(gamma_s), abs=1e-11)
    assert lm.ngrams[1][("a", "b")][0] == pytest.approx(log(p_b_a), abs=1e-11)
    assert lm.prob("c", ["a"]) == pytest.approx(log(p_c_a), abs=1e-11)
    assert lm.prob("e", ["a"]) == pytest.approx(log(p_e_a), abs=1e-11)
    assert lm.prob("a", ["<s>"]) == pytest.approx(log(p_a_s), abs=1e-11)
    assert ("a", "e") not in lm.ngrams[1]
    assert lm.ngrams[0][("</s>",)][1] is None  # </s> is never a context
    assert lm.counts() == [11, 31]


def read_arpa_text(text: str):
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".arpa", delete=False, encoding="utf-8") as f:
        f.write(text)
    try:
        return read_arpa(f.name)
    finally:
        Path(f.name).unlink()


# ---------------------------------------------------------------------------------------------
# An independent textbook implementation (dicts of tuples), compared on real text
# ---------------------------------------------------------------------------------------------

def textbook_kneser_ney(sentences, N):
    """Interpolated modified KN written from Chen & Goodman, independently of the library.

    Returns {ngram tuple: (log10 p, log10 backoff or None)} as an lmplz-style ARPA would hold.
    """
    raw = [Counter() for _ in range(N + 1)]  # raw[n][ngram]
    for words in sentences:
        s = ["<s>"] + list(words) + ["</s>"]
        for n in range(1, N + 1):
            for i in range(len(s) - n + 1):
                raw[n][tuple(s[i:i + n])] += 1
    vocab = {g[0] for g in raw[1]} | {"<unk>"}
    # adjusted counts: raw for order N and for n-grams starting with <s>, else the number of
    # distinct words seen to the left
    adj = [None] * (N + 1)
    adj[N] = dict(raw[N])
    for n in range(N - 1, 0, -1):
        left = Counter(g[1:] for g in raw[n + 1])
        adj[n] = {g: (c if g[0] == "<s>" else left.get(g, 0)) for g, c in raw[n].items()}
    adj[1][("<s>",)] = 0
    adj[1].setdefault(("<unk>",), 0)
    prob, gamma = {}, {}
    for n in range(1, N + 1):
        hist = Counter(c for c in adj[n].values() if 1 <= c <= 4)  # n_k: exactly k
        n1, n2, n3, n4 = hist[1], hist[2], hist[3], hist[4]
        Y = n1 / (n1 + 2 * n2)
        D = {1: 1 - 2 * Y * n2 / n1, 2: 2 - 3 * Y * n3 / n2, 3: 3 - 4 * Y * n4 / n3}
        d = lambda c: 0.0 if c == 0 else D[min(c, 3)]  # noqa: E731
        denom, mass = defaultdict(float), defaultdict(float)
        for g, c in adj[n].items():
            denom[g[:-1]] += c
            mass[g[:-1]] += d(c)
        for h in denom:
            gamma[h] = mass[h] / denom[h]
        for g, c in adj[n].items():
            h = g[:-1]
            lower = 1.0 / (len(vocab) - 1) if n == 1 else prob[g[1:]]
            prob[g] = (c - d(c)) / denom[h] + gamma[h] * lower
    out = {}
    for g, p in prob.items():
        logp = -99.0 if g == ("<s>",) else math.log10(p)
        bow = math.log10(gamma[g]) if (len(g) < N and g in gamma) else None
        out[g] = (logp, bow)
    return out


def ami_sentences(limit=None, skip=0, meetings=None, exclude=None):
    out = []
    for i, (_lineno, utt, words) in enumerate(_iter_text(TRAIN_TEXT)):
        if i < skip:
            continue
        meeting = utt.split("_")[0]
        if meetings is not None and meeting[:2] not in meetings:
            continue
        if exclude is not None and meeting[:2] in exclude:
            continue
        if words:
            out.append(words)
        if limit and len(out) >= limit:
            break
    return out


def _iter_text(path):
    from asrpriv.io.kaldi import iter_text

    return iter_text(str(path))


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_matches_textbook_implementation_on_ami(order):
    sentences = ami_sentences(limit=3000)
    want = textbook_kneser_ney(sentences, order)
    got = train(sentences, order).to_arpa_model()
    have = {g: e for table in got.ngrams for g, e in table.items()}
    assert set(have) == set(want)
    for g, (p, b) in want.items():
        gp, gb = have[g]
        assert gp == pytest.approx(p, abs=1e-9), g
        if b is None:
            assert gb is None, g
        else:
            assert gb == pytest.approx(b, abs=1e-9), g


# ---------------------------------------------------------------------------------------------
# (1) normalization and (3) kenlm agreement
# ---------------------------------------------------------------------------------------------

def kenlm_prob(model, word, context):
    """log10 p(word | context) from kenlm with explicit states (context oldest first)."""
    state, out = kenlm.State(), kenlm.State()
    ctx = list(context)
    if ctx and ctx[0] == "<s>":
        model.BeginSentenceWrite(state)
        ctx = ctx[1:]
    else:
        model.NullContextWrite(state)
    for w in ctx:
        model.BaseScore(state, w, out)
        state, out = out, state
    return model.BaseScore(state, word, out)


@pytest.fixture(scope="module")
def ami_lm(tmp_path_factory):
    path = tmp_path_factory.mktemp("lm") / "ami3.arpa"
    train_arpa(ami_sentences(limit=20000), order=3, output=str(path))
    return path


CONTEXTS = [(), ("<s>",), ("okay",), ("the",), ("<s>", "okay"), ("the", "remote"), ("remote", "control"),
            ("zzzunseen",), ("okay", "zzzunseen"), ("zzzunseen", "the"), ("<s>", "zzzunseen"), ("</s>",)]


def test_normalized_own_reader_and_kenlm(ami_lm):
    lm = read_arpa(str(ami_lm))
    km = kenlm.Model(str(ami_lm))
    vocab = [w for w in lm.vocabulary if w != "<s>"]
    assert "<unk>" in vocab and "</s>" in vocab
    for ctx in CONTEXTS[:-1]:
        own = [lm.prob(w, ctx) for w in vocab]
        ken = [kenlm_prob(km, w, ctx) for w in vocab]
        assert math.fsum(10.0 ** x for x in own) == pytest.approx(1.0, abs=1e-6), ctx
        assert math.fsum(10.0 ** x for x in ken) == pytest.approx(1.0, abs=1e-6), ctx
        # kenlm stores float32: agreement to float32 precision
        assert max(abs(a - b) for a, b in zip(own, ken)) < 1e-5, ctx


@pytest.mark.parametrize("order", [2, 4])
def test_normalized_other_orders(tmp_path, order):
    path = tmp_path / "lm.arpa"
    train_arpa(ami_sentences(limit=5000), order=order, output=str(path), precision=10)
    lm = read_arpa(str(path))
    vocab = [w for w in lm.vocabulary if w != "<s>"]
    for ctx in [(), ("<s>",), ("<s>", "okay", "so"), ("we", "have", "to"), ("i", "think"), ("qq", "qq", "qq")]:
        total = math.fsum(10.0 ** lm.prob(w, ctx) for w in vocab)
        assert total == pytest.approx(1.0, abs=1e-8), ctx


def test_kenlm_sentence_scores_equal_own_reader(ami_lm):
    lm = read_arpa(str(ami_lm))
    km = kenlm.Model(str(ami_lm))
    sentences = list(read_sentences(str(DEV_REF), ids=True))[:300]
    for words in sentences:
        ours = lm.score_sentence(words)
        theirs = km.score(" ".join(words), bos=True, eos=True)
        assert ours == pytest.approx(theirs, abs=1e-4 + 1e-6 * abs(ours))
        full = list(km.full_scores(" ".join(words)))
        ctx = ["<s>"]
        for (logp, _ngram_len, _oov), w in zip(full, words + ["</s>"]):
            assert lm.prob(w, ctx[-2:]) == pytest.approx(logp, abs=1e-5)
            ctx.append(w)


# ---------------------------------------------------------------------------------------------
# (4) perplexity on real AMI text
# ---------------------------------------------------------------------------------------------

def test_ami_perplexity_plausible(tmp_path):
    # train on the scenario meetings (ES, IS, TS) of train_text, evaluate on held-out
    # non-scenario meetings of train_text and on the AMI dev references
    path = tmp_path / "lm.arpa"
    proc = run_proc(["train-ngram", "--ids", "--order", "3", str(TRAIN_TEXT), "-o", str(path)], check=True)
    assert b"n-grams" in proc.stderr
    lm_full = read_arpa(str(path))
    dev = list(read_sentences(str(DEV_REF), ids=True))
    ppl_dev, tokens, oov = lm_full.perplexity(dev)
    assert tokens == sum(len(s) + 1 for s in dev)
    assert 60 < ppl_dev < 250, ppl_dev
    km = kenlm.Model(str(path))
    ken_total = sum(km.score(" ".join(s)) for s in dev)
    assert 10 ** (-ken_total / tokens) == pytest.approx(ppl_dev, rel=1e-5)

    scenario = ami_sentences(meetings={"ES", "IS", "TS"})
    other = ami_sentences(exclude={"ES", "IS", "TS"})[:5000]
    lm_sc = train(scenario, 3).to_arpa_model()
    lm_uni = train(scenario, 1).to_arpa_model()
    ppl3, _, _ = lm_sc.perplexity(other)
    ppl1, _, _ = lm_uni.perplexity(other)
    ppl3_dev, _, _ = lm_sc.perplexity(dev)
    assert 100 < ppl3 < 600, ppl3       # out-of-domain (non-scenario) meetings: higher
    assert ppl3 < 0.5 * ppl1            # a trigram beats a unigram by far
    assert ppl3_dev < ppl3              # the dev set is scenario meetings (ES, IS)


# ---------------------------------------------------------------------------------------------
# CLI: file and pipe, --vocab, determinism, bad input
# ---------------------------------------------------------------------------------------------

SMALL = "".join(" ".join(s) + "\n" for s in ami_sentences(limit=3000))


def test_cli_file_and_pipe_agree(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text(SMALL, encoding="utf-8")
    out = tmp_path / "lm.arpa"
    result = run_cli(["train-ngram", str(text), "-o", str(out), "-q"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    piped = run_proc(["train-ngram", "-q"], input=SMALL, check=True)
    assert piped.stdout.decode() == out.read_text(encoding="utf-8")
    header, sep, _ = piped.stdout.partition(b"\n\\data\\\nngram 1=")
    assert sep and all(line.startswith(b"#") for line in header.splitlines())  # privacy record only
    assert b"#private_raw=" in header  # text not declared --public is private data
    assert kenlm.Model(str(out)).order == 3
    # Kaldi text with --ids gives the same model as the same words without ids
    kaldi = "".join(f"utt{i:05d} {line}" for i, line in enumerate(io.StringIO(SMALL)))
    with_ids = run_proc(["train-ngram", "--ids", "-q"], input=kaldi, check=True)
    assert with_ids.stdout == piped.stdout


def test_cli_vocab_closed(tmp_path):
    vocab = tmp_path / "vocab.txt"
    frequent = [w for w, c in Counter(SMALL.split()).most_common() if c >= 3]  # frequent first
    assert "the" in frequent and "think" in frequent
    vocab.write_text("\n".join(frequent + ["neverseenword"]) + "\n", encoding="utf-8")
    out = tmp_path / "lm.arpa"
    proc = run_proc(["train-ngram", "--vocab", str(vocab), "-o", str(out)], input=SMALL, check=True)
    assert b"mapped to <unk>" in proc.stderr
    lm = read_arpa(str(out))
    assert sorted(lm.vocabulary) == sorted(["<unk>", "<s>", "</s>", "neverseenword"] + frequent)
    assert lm.ngrams[0][("<unk>",)][1] is not None  # <unk> is a trained word, a context
    km = kenlm.Model(str(out))
    vocab_words = [w for w in lm.vocabulary if w != "<s>"]
    for ctx in [(), ("<s>",), ("<unk>",), ("i", "think"), ("<s>", "<unk>"), ("<unk>", "<unk>")]:
        assert math.fsum(10.0 ** lm.prob(w, ctx) for w in vocab_words) == pytest.approx(1.0, abs=1e-6)
        assert math.fsum(10.0 ** kenlm_prob(km, w, ctx) for w in vocab_words) == pytest.approx(1.0, abs=1e-6)
    # the unseen listed word gets exactly the uniform share of the unigram back-off mass
    assert lm.prob("neverseenword") < lm.prob(frequent[-1])
    assert lm.prob("some-oov-word") == lm.prob("<unk>") > lm.prob(frequent[-1])


def test_tiny_text_needs_fallback():
    proc = run_proc(["train-ngram"], input="a b c\n")
    assert_one_line_error(proc, "asrpriv train-ngram:", "discount", "--discount-fallback")
    ok = run_proc(["train-ngram", "--discount-fallback", "-q"], input="a b c\n", check=True)
    lm = read_arpa_text(ok.stdout.decode())
    assert lm.counts() == [6, 4, 3]
    vocab = [w for w in lm.vocabulary if w != "<s>"]
    assert math.fsum(10 ** lm.prob(w, ["<s>"]) for w in vocab) == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("data, needles", [
    (b"", ["<stdin>", "empty input"]),
    (b"\n  \n", ["<stdin>", "empty input"]),
    (b"hello world\n\xff\xfe bad\n", ["<stdin>:2:", "UTF-8"]),
    (b"hello\x00world\n", ["<stdin>:1:", "binary"]),
    (b"hello world\nthe <s> again\n", ["<stdin>:2:", "<s>"]),
])
def test_bad_input_one_line_error(data, needles):
    assert_one_line_error(run_proc(["train-ngram"], input=data), *needles)


def test_bad_input_files(tmp_path):
    assert_one_line_error(run_proc(["train-ngram", str(tmp_path / "missing.txt")]), "missing.txt")
    binary = tmp_path / "model.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    assert_one_line_error(run_proc(["train-ngram", str(binary)]), "model.bin:1:")
    kaldi = tmp_path / "text"
    kaldi.write_text("utt1 hello\n utt2 bad\n", encoding="utf-8")
    assert_one_line_error(run_proc(["train-ngram", "--ids", str(kaldi)]), "text:2:")
    empty_vocab = tmp_path / "vocab"
    empty_vocab.write_text("\n", encoding="utf-8")
    assert_one_line_error(run_proc(["train-ngram", "--vocab", str(empty_vocab)], input=SMALL), "vocab")
    # a failed run leaves no output behind
    out = tmp_path / "out.arpa"
    run_proc(["train-ngram", "-o", str(out)], input=b"\xff\n")
    assert not out.exists() and not list(tmp_path.glob(".out.arpa.*"))


def test_bad_order_is_usage_error():
    proc = run_proc(["train-ngram", "--order", "0"], input="a b\n")
    assert proc.returncode == 2


def test_deterministic():
    a = train_arpa(ami_sentences(limit=2000), order=3)
    b = train_arpa(ami_sentences(limit=2000), order=3)
    assert a == b
