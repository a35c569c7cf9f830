"""asrpriv.api.score_wer for other toolchains: lists or dicts, hits/S/D/I, alignments,
signature, errors naming the argument, and its docstring examples run as doctests."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import jiwer
import pytest

import asrpriv
from asrpriv import api
from asrpriv.errors import AsrprivError
from conftest import AMI, run_cli


def test_docstring_examples_run():
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = [t for obj in (api.score_wer, api.WerResult, api.UtteranceAlignment)
             for t in finder.find(obj, globs={"api": api}) if t.examples]
    assert tests
    for t in tests:
        runner.run(t)
    assert runner.summarize(verbose=False).failed == 0


def _kaldi(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        utt, _, text = line.partition(" ")
        if utt:
            out[utt] = text
    return out


def test_lists_equal_dicts_equal_cli_and_jiwer_hits(tmp_path):
    ref_path, hyp_path = AMI / "dev" / "ref.txt", AMI / "dev" / "decoder_1best.txt"
    ref, hyp = _kaldi(ref_path), _kaldi(hyp_path)
    ids = [u for u in ref if u in hyp][:400]
    refs, hyps = [ref[u] for u in ids], [hyp[u] for u in ids]
    by_list = api.score_wer(refs, hyps)
    by_dict = api.score_wer({u: ref[u] for u in ids}, {u: hyp[u] for u in ids})
    fields = ("wer", "hits", "substitutions", "deletions", "insertions", "ref_words",
              "sentences", "sentence_errors", "signature")
    assert [getattr(by_list, f) for f in fields] == [getattr(by_dict, f) for f in fields]
    # the CLI on the same utterances
    r, h = tmp_path / "ref.txt", tmp_path / "hyp.txt"
    r.write_text("".join(f"{u} {ref[u]}\n" for u in ids))
    h.write_text("".join(f"{u} {hyp[u]}\n" for u in ids))
    res = run_cli(["score-wer", "--format", "json", "--ref", str(r), "--hyp", str(h)])
    assert res.exit_code == 0, res.stderr
    cli = json.loads(res.stdout)
    assert [cli[k] for k in ("correct", "substitutions", "deletions", "insertions", "ref_words")] \
        == [by_list.hits, by_list.substitutions, by_list.deletions, by_list.insertions,
            by_list.ref_words]
    assert cli["signature"] == by_list.signature
    # jiwer (unit weights) counts the same reference words
    m = jiwer.process_words([r.lower() for r in refs], [h.lower() for h in hyps])
    assert m.hits + m.substitutions + m.deletions == by_list.ref_words
    assert by_list.hits + by_list.substitutions + by_list.deletions == by_list.ref_words
    assert by_list.signature.endswith(f"version:{asrpriv.__version__}")


def test_alignments_agree_with_counts():
    r = api.score_wer(["a b c d", "x y", "p"], ["a c d e", "", "p"])
    assert [a.id for a in r.alignments] == ["0", "1", "2"]
    for op, attr in (("C", "hits"), ("S", "substitutions"), ("D", "deletions"), ("I", "insertions")):
        assert sum(a.count(op) for a in r.alignments) == getattr(r, attr)
    assert r.alignments[0].pairs() == [("C", "a", "a"), ("D", "b", None), ("C", "c", "c"),
                                       ("C", "d", "d"), ("I", None, "e")]
    assert r.alignments[1].pairs() == [("D", "x", None), ("D", "y", None)]


@pytest.mark.parametrize("refs, hyps, needle", [
    (["a"], ["a", "b"], "refs and hyps differ in length (1 and 2)"),
    (b"a b", ["a b"], "refs: expected a string, a list of strings or a dict"),
    (["a"], 3, "hyps: expected a string, a list of strings or a dict"),
    (["a"], {"0": "a"}, "two lists or two dicts"),
    (["a", 3], ["a", "b"], "refs['1']: expected a string or a list of words, got int"),
    ({"u": "a"}, {"v": "a"}, "hyps: id 'v' is not in refs"),
    ([], [], "refs: empty"),
    (None, ["a"], "refs: missing"),
])
def test_errors_name_the_argument(refs, hyps, needle):
    with pytest.raises(AsrprivError) as err:
        api.score_wer(refs, hyps)
    assert needle in str(err.value)
    assert "--" not in str(err.value)  # no CLI flag in an API error


def test_py_typed_ships():
    root = Path(api.__file__).resolve().parent
    assert (root / "py.typed").exists()
    setup_cfg = (root.parents[1] / "setup.cfg").read_text()
    assert "py.typed" in setup_cfg


def test_api_errors_name_arguments_not_cli_options():
    """Issue 27: an API caller is told the argument it passed, not a CLI flag."""
    import pytest

    from asrpriv import api

    with pytest.raises(api.AsrprivError) as err:
        api.count_text(["a b"], max_l1=float("nan"))
    assert "max_l1" in str(err.value) and "--" not in str(err.value)
    with pytest.raises(api.AsrprivError) as err:
        api.count_unigrams(api.CountSettings(input="-", max_l1=2.0 ** 60, grid=1.0, output=None))
    assert "max_l1" in str(err.value) and "--max-l1" not in str(err.value)
