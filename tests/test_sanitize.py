"""sanitize: entity replacement by class (paper 003 §2.1) on the AMI gold spans."""

from __future__ import annotations

import math
import random

import pytest

from conftest import AMI, assert_one_line_error, run_cli, run_proc
from asrpriv.sanitize.lexicon import LongestMatchTagger
from asrpriv.sanitize.spans import read_spans
from asrpriv.sanitize.transform import Sanitizer, pool_from_spans

TEXT = AMI / "train_text"
SPANS = AMI / "ne" / "train_ne.tsv"
SELECTED = {"PER", "LOC", "ORG", "TIME", "NUM"}


def read_text(path) -> dict[str, list[str]]:
    out = {}
    for line in open(path, encoding="utf-8"):
        fields = line.split()
        out[fields[0]] = fields[1:]
    return out


def outside(words, spans):
    """The words of a line outside its spans, in order, with a marker per span."""
    out, pos = [], 0
    for s in spans:
        out += words[pos:s.start] + ["|"]
        pos = s.end
    return out + words[pos:]


@pytest.fixture(scope="module")
def keep0(tmp_path_factory):
    d = tmp_path_factory.mktemp("san")
    out, sout = d / "out.txt", d / "out_spans.tsv"
    res = run_cli(["sanitize", "--spans", str(SPANS), "--keep", "0", "--seed", "3",
                   "--spans-out", str(sout), str(TEXT), "-o", str(out)])
    assert res.exit_code == 0, res.stderr
    return out, sout, res.stderr


def test_keep_one_leaves_text_unchanged(tmp_path):
    out = tmp_path / "out.txt"
    res = run_cli(["sanitize", "--spans", str(SPANS), "--keep", "1", str(TEXT), "-o", str(out)])
    assert res.exit_code == 0
    assert out.read_bytes() == TEXT.read_bytes()


def test_keep_zero_replaces_every_selected_span_from_its_class_pool(keep0):
    out, sout, stderr = keep0
    before, after = read_text(TEXT), read_text(out)
    assert before.keys() == after.keys()
    spans_in, spans_out = read_spans(str(SPANS)), read_spans(str(sout))
    pool = pool_from_spans(spans_in, SELECTED)
    assert spans_in.keys() == spans_out.keys()
    replaced = 0
    for utt, words in before.items():
        if utt not in spans_in:
            assert after[utt] == words
            continue
        a, b = spans_in[utt], spans_out[utt]
        assert len(a) == len(b)
        for s, t in zip(a, b):
            assert after[utt][t.start:t.end] == t.words()  # output spans re-extract correctly
            assert t.cls == s.cls
            if s.cls in SELECTED:
                assert t.type == "SANITIZED" and t.text in pool[s.cls]
                replaced += 1
            else:
                assert (t.text, t.type, t.end - t.start) == (s.text, s.type, s.end - s.start)
        # words outside the spans are untouched; word count = others + replacements
        assert outside(after[utt], b) == outside(words, a)
        assert len(after[utt]) == len(words) + sum((t.end - t.start) - (s.end - s.start)
                                                   for s, t in zip(a, b))
    assert replaced == sum(1 for v in spans_in.values() for s in v if s.cls in SELECTED) == 6304
    assert "PER 1018/1018" in stderr and "ART 3351" in stderr


def test_seeded_runs_repeat_and_unseeded_differ(tmp_path, keep0):
    out = tmp_path / "again.txt"
    run_cli(["sanitize", "-q", "--spans", str(SPANS), "--seed", "3", str(TEXT), "-o", str(out)])
    assert out.read_bytes() == keep0[0].read_bytes()
    runs = [run_cli(["sanitize", "-q", "--spans", str(SPANS), "--keep", "0.5", str(TEXT)]).stdout
            for _ in range(2)]
    assert runs[0] != runs[1]


def test_keep_probability_is_honoured():
    spans = read_spans(str(SPANS))
    text = read_text(TEXT)
    san = Sanitizer(SELECTED, 0.3, pool_from_spans(spans, SELECTED), random.Random(7))
    for utt, v in spans.items():
        san.apply(utt, text[utt], v)
    n = sum(san.report.selected.values())
    k = sum(san.report.replaced.values())
    sd = math.sqrt(n * 0.7 * 0.3)
    assert abs(k - 0.7 * n) < 4 * sd


def test_tag_writes_one_class_token_per_selected_span(tmp_path):
    sout = tmp_path / "s.tsv"
    res = run_cli(["sanitize", "--spans", str(SPANS), "--tag", "--classes", "PER,TIME",
                   "--spans-out", str(sout), str(TEXT)])
    lines = {l.split(" ", 1)[0]: l.split()[1:] for l in res.stdout.splitlines()}
    assert lines["ES2002a_00003"][26] == "<TIME>" and lines["ES2002a_00003"][45] == "<PER>"
    for utt, spans in read_spans(str(sout)).items():
        for s in spans:
            assert lines[utt][s.start:s.end] == s.words()
            if s.cls in ("PER", "TIME"):
                assert s.words() == [f"<{s.cls}>"]


def test_lexicon_longest_match(tmp_path):
    tagger = LongestMatchTagger([("PER", "john"), ("PER", "john smith"), ("LOC", "new york city"),
                                 ("LOC", "new york")])
    assert tagger.tag("i met john smith in new york today john".split()) == [
        (2, 4, "PER"), (5, 7, "LOC"), (8, 9, "PER")]
    lex = tmp_path / "lex.tsv"
    lex.write_text("PER\tjohn smith\nPER\tmary\nLOC\tparis\n")
    text = tmp_path / "t.txt"
    text.write_text("u1 hello john smith from paris\nu2 nothing here\n")
    res = run_cli(["sanitize", "--lexicon", str(lex), "--seed", "1", str(text)])
    u1, u2 = res.stdout.splitlines()
    w = u1.split()
    assert w[:2] == ["u1", "hello"] and w[-1] == "paris" and w[-2] == "from"
    assert " ".join(w[2:-2]) in ("john smith", "mary")
    assert u2 == "u2 nothing here"


@pytest.mark.parametrize("row, needle", [
    ("ES2002a_00003\t47\t48\tPER\tPROJECT_MANAGER\tlaurA", "differs from words 47..48"),
    ("ES2002a_00003\t27\t28\tNUM\tCARDINAL\tfive", "overlaps"),
    ("NOPE_00001\t0\t1\tPER\tX\tfoo", "NOPE_00001 is not in"),
])
def test_bad_spans_one_line_error(tmp_path, row, needle):
    spans = tmp_path / "spans.tsv"
    spans.write_text("utt_id\tstart\tend\tclass\ttype\ttext\n"
                     "ES2002a_00003\t26\t29\tTIME\tDURATION\ttwenty five minutes\n"
                     + row + "\n")
    text = tmp_path / "text"
    text.write_text("".join(l for l in open(TEXT) if l.startswith("ES2002a_0000")))
    out = tmp_path / "out.txt"
    proc = run_proc(["sanitize", "--spans", str(spans), str(text), "-o", str(out)])
    line = assert_one_line_error(proc, "asrpriv sanitize:", "spans.tsv:3:", needle)
    assert not out.exists(), line
