"""ARPA reader/writer: exact round trip, back-off queries worked by hand, kenlm agreement, errors."""

from __future__ import annotations

import gzip
import io
import math

import pytest

from asrpriv.errors import InputError
from asrpriv.ngram.arpa import ArpaModel, read_arpa

# A hand-made trigram ARPA (not normalized; numbers chosen to make the back-off arithmetic
# visible), with odd number spellings: exponents, trailing zeros, a missing back-off.
HAND_ARPA = """
\\data\\
ngram 1=6
ngram 2=4
ngram 3=2

\\1-grams:
-1.5\t<unk>
-99\t<s>\t-0.25
-0.75\t</s>
-0.5\ta\t-0.125
-1.25\tb\t-2.5e-01
-1.0000000001\tc

\\2-grams:
-0.3\t<s> a\t-0.0625
-0.4\ta b\t-0.5
-0.6\tb </s>
-0.8\tb c\t0

\\3-grams:
-0.05\t<s> a b
-0.07\ta b c

\\end\\
"""


@pytest.fixture
def hand_path(tmp_path):
    path = tmp_path / "hand.arpa"
    path.write_text(HAND_ARPA, encoding="utf-8")
    return path


def test_reads_entries_and_backoffs(hand_path):
    lm = read_arpa(str(hand_path))
    assert lm.order == 3
    assert lm.counts() == [6, 4, 2]
    assert lm.vocabulary == ["<unk>", "<s>", "</s>", "a", "b", "c"]
    assert lm.ngrams[0][("b",)] == (-1.25, -0.25)
    assert lm.ngrams[0][("c",)] == (-1.0000000001, None)
    assert lm.ngrams[1][("b", "c")] == (-0.8, 0.0)


def test_backoff_queries_by_hand(hand_path):
    lm = read_arpa(str(hand_path))
    # listed trigram
    assert lm.prob("b", ["<s>", "a"]) == -0.05
    # "a b </s>" not listed: bow(a b) + p(</s> | b) = -0.5 + -0.6
    assert lm.prob("</s>", ["a", "b"]) == pytest.approx(-1.1)
    # "a b a": bow(a b) + [ "b a" not listed: bow(b) + p(a) ] = -0.5 - 0.25 - 0.5
    assert lm.prob("a", ["a", "b"]) == pytest.approx(-1.25)
    # history "c a" is not listed (bow 0), "a c" not listed: bow(a) + p(c)
    assert lm.prob("c", ["c", "a"]) == pytest.approx(-0.125 - 1.0000000001)
    # OOV word and OOV history map to <unk>: p(<unk>) after bow(<unk>)=0
    assert lm.prob("zzz", ["yyy"]) == -1.5
    # only the last order-1 words of the history matter
    assert lm.prob("b", ["c", "c", "<s>", "a"]) == -0.05
    # sentence: p(a|<s>) + p(b|<s> a) + p(</s>|a b)
    assert lm.score_sentence(["a", "b"]) == pytest.approx(-0.3 - 0.05 - 1.1)
    assert lm.score_sentence(["a", "b"], eos=False) == pytest.approx(-0.35)
    # without <s>: p(a) + p(b|a) + p(</s>|a b)
    assert lm.score_sentence(["a", "b"], bos=False) == pytest.approx(-0.5 - 0.4 - 1.1)


def test_round_trip_is_exact(hand_path, tmp_path):
    lm = read_arpa(str(hand_path))
    out = tmp_path / "again.arpa"
    lm.write(str(out))
    again = read_arpa(str(out))
    assert again.ngrams == lm.ngrams  # every number and key, and missing back-offs stay missing
    assert list(again.ngrams[0]) == list(lm.ngrams[0])  # file order kept
    text = out.read_text(encoding="utf-8")
    assert "-99\t<s>\t-0.25\n" in text and "-1.0000000001\tc\n" in text
    # writing the re-read model gives the same bytes
    buffer = io.StringIO()
    again.write(buffer)
    assert buffer.getvalue() == text


def test_round_trip_trained_full_precision(tmp_path):
    from asrpriv.ngram import train

    sentences = [line.split() for line in (
        "the remote control is red", "the remote is small", "a red button", "the button is small",
        "we need a remote", "is the remote red", "the red one", "a small red remote control")]
    model = train(sentences, 3, discount_fallback=True)
    exact = model.to_arpa_model()
    path = tmp_path / "lm.arpa"
    model.write(str(path), precision=None)  # repr: exact doubles
    back = read_arpa(str(path))
    assert back.ngrams == exact.ngrams
    # the 7-digit file reads back to within rounding of the exact numbers
    model.write(str(path))
    rounded = read_arpa(str(path))
    for table_a, table_b in zip(rounded.ngrams, exact.ngrams):
        for key, (p, b) in table_b.items():
            assert table_a[key][0] == pytest.approx(p, abs=5.1e-8)
            assert (table_a[key][1] is None) == (b is None)


def test_gzip_and_kenlm_agree(hand_path, tmp_path):
    kenlm = pytest.importorskip("kenlm")
    gz = tmp_path / "hand.arpa.gz"
    gz.write_bytes(gzip.compress(HAND_ARPA.encode()))
    lm = read_arpa(str(gz))
    km = kenlm.Model(str(hand_path))
    for sentence in (["a", "b"], ["a", "b", "a", "b", "c"], ["c", "zzz", "a"], [], ["b"]):
        full = list(km.full_scores(" ".join(sentence)))
        ctx = ["<s>"]
        for (logp, _n, _oov), w in zip(full, sentence + ["</s>"]):
            assert lm.prob(w, ctx) == pytest.approx(logp, abs=1e-6)
            ctx.append(w)
        assert lm.score_sentence(sentence) == pytest.approx(km.score(" ".join(sentence)), abs=1e-5)


@pytest.mark.slow
def test_bundled_real_arpa_reads(data_dir):
    """The bundled pocketsphinx bigram (2M bigrams) reads; spot-check with kenlm."""
    kenlm = pytest.importorskip("kenlm")
    path = data_dir / "ami" / "firstpass-en-us-2gram.arpa.gz"
    if not path.exists():
        pytest.skip("bundled ARPA missing")
    lm = read_arpa(str(path))
    assert lm.order == 2 and lm.counts() == [72547, 2051511]
    km = kenlm.Model(str(path))
    for sentence in ("so this is our kick off meeting", "the remote control should be red"):
        assert lm.score_sentence(sentence.split()) == pytest.approx(km.score(sentence), abs=1e-4)


@pytest.mark.parametrize("text, needles", [
    ("", ["empty input"]),
    ("hello\n", [":1:", "\\data\\"]),
    ("\\data\\\nngram 1=1\n\n\\1-grams:\n-1 a\n", ["missing \\end\\"]),
    ("\\data\\\nngram 1=2\n\n\\1-grams:\n-1 a\n\\end\\\n", [":6:", "declares 2 1-grams"]),
    ("\\data\\\nngram 1=1\n\n\\1-grams:\nx a\n\\end\\\n", [":5:", "number"]),
    ("\\data\\\nngram 1=1\n\n\\1-grams:\n-1 a b c\n\\end\\\n", [":5:", "fields"]),
    ("\\data\\\nngram 1=2\n\n\\1-grams:\n-1 a\n-2 a\n\\end\\\n", [":6:", "duplicate"]),
    ("\\data\\\nngram 1=1\nngram 2=0\n\n\\1-grams:\n-1 a\n\\end\\\n", ["declares 2 orders"]),
])
def test_malformed_arpa_errors(tmp_path, text, needles):
    path = tmp_path / "bad.arpa"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_arpa(str(path))
    for needle in needles:
        assert needle in str(err.value.format_message())


def test_model_needs_unigrams():
    with pytest.raises(ValueError):
        ArpaModel([{}])
    assert math.isinf(ArpaModel([{("a",): (-1.0, None)}]).prob("b"))  # no <unk>: -inf
