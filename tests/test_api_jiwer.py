"""asrpriv.api.wer and api.score_wer used as a jiwer user would use them, checked against jiwer
itself on the same inputs (issue 39: ``api.wer`` equals ``jiwer.wer`` on inputs without sclite
markup; ``score_wer`` takes jiwer's keywords and inputs, its ``wer`` in percent)."""

from __future__ import annotations

import pytest

jiwer = pytest.importorskip("jiwer")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from asrpriv import api  # noqa: E402
from asrpriv.errors import AsrprivError  # noqa: E402


def test_a_jiwer_user_gets_the_same_numbers():
    reference = "hello world"
    hypothesis = "hello duck"
    assert api.wer(reference, hypothesis) == jiwer.wer(reference, hypothesis) == 0.5

    reference = ["hello world", "i like monthy python"]
    hypothesis = ["hello duck", "i like python"]
    assert api.wer(reference, hypothesis) == jiwer.wer(reference, hypothesis)
    assert api.wer(reference=reference, hypothesis=hypothesis) == \
        jiwer.wer(reference=reference, hypothesis=hypothesis)


def test_score_wer_takes_jiwers_keywords_and_keeps_percent():
    out = jiwer.process_words(["the cat sat on the mat"], ["the cat sit on mat"])
    r = api.score_wer(reference=["the cat sat on the mat"], hypothesis=["the cat sit on mat"])
    assert (r.hits, r.substitutions, r.deletions, r.insertions) == \
        (out.hits, out.substitutions, out.deletions, out.insertions)
    assert r.wer == pytest.approx(100 * out.wer)          # a percent, as documented
    one = api.score_wer(reference="a b c", hypothesis="a x c")
    assert one.wer == pytest.approx(100 * jiwer.wer("a b c", "a x c"))


def test_generators_and_word_lists():
    refs = ["a b c", "d e"]
    hyps = ["a c", "d e f"]
    expected = jiwer.wer(refs, hyps)
    assert api.wer((r for r in refs), (h for h in hyps)) == expected
    assert api.wer([r.split() for r in refs], [h.split() for h in hyps]) == expected
    assert api.score_wer(reference=(r for r in refs), hypothesis=iter(hyps)).wer == \
        pytest.approx(100 * expected)
    assert api.score_wer([r.split() for r in refs], [h.split() for h in hyps]).wer == \
        pytest.approx(100 * expected)


@pytest.mark.parametrize("reference, hypothesis", [
    ("", "a"), ([""], ["a b"]), (["a", ""], ["a", "b"]), ("", ""), ([], []), ("  ", "a"),
])
def test_empty_references_as_jiwer(reference, hypothesis):
    """Decided: api.wer does what jiwer does (an all-empty reference gives the number of
    inserted words)."""
    assert api.wer(reference, hypothesis) == jiwer.wer(reference, hypothesis)


def test_empty_reference_in_score_wer_is_undefined_not_zero():
    r = api.score_wer([""], ["a"])
    assert r.wer is None and r.insertions == 1 and r.ref_words == 0
    assert api.score_wer([""], [""]).wer == 0.0


@pytest.mark.parametrize("call, needle", [
    (lambda: api.wer(["a"], ["a", "b"]), "reference and hypothesis differ in length (1 and 2"),
    (lambda: api.wer(None, "a"), "reference: missing"),
    (lambda: api.wer("a", 3), "hypothesis: expected a string or a list of strings"),
    (lambda: api.wer(["a", 3], ["a", "b"]), "reference[1]: expected a string or a list of words"),
    (lambda: api.score_wer(reference=["a"], hypothesis=["a", "b"]),
     "reference and hypothesis differ in length"),
    (lambda: api.score_wer(reference=["a"], hypothesis=[3]), "hypothesis['0']: expected a string"),
    (lambda: api.score_wer(["a"], ["b"], reference=["a"]), "not both"),
])
def test_errors_are_the_librarys_and_name_the_argument(call, needle):
    with pytest.raises(AsrprivError) as err:
        call()
    assert needle in str(err.value)


#: words without sclite markup; white space of several kinds, as users' strings hold it
_word = st.sampled_from(["a", "b", "c", "the", "The", "cat", "é", "x-y", "it's"])
_sep = st.sampled_from([" ", "  ", " \t ", "\n ", "\t"])


@st.composite
def _sentence(draw):
    words = draw(st.lists(_word, max_size=8))
    out = draw(st.sampled_from(["", " ", "  "]))
    for w in words:
        out += w + draw(_sep)
    return out


@settings(max_examples=200, deadline=None)
@given(pairs=st.lists(st.tuples(_sentence(), _sentence()), min_size=1, max_size=5))
def test_wer_equals_jiwer_on_random_strings(pairs):
    refs = [r for r, _h in pairs]
    hyps = [h for _r, h in pairs]
    assert api.wer(refs, hyps) == jiwer.wer(refs, hyps)
    if len(pairs) == 1:
        assert api.wer(refs[0], hyps[0]) == jiwer.wer(refs[0], hyps[0])
