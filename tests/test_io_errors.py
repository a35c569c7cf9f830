"""Bad inputs give one stderr line naming FILE:LINE, exit 2, no traceback; -o is atomic."""

from __future__ import annotations

import pytest

from conftest import AMI, LIBRI, assert_one_line_error, run_proc
from asrpriv.io.counts import read_counts
from asrpriv.io.kaldi import read_map, read_text
from asrpriv.io.nbest import NbestReader

HEADER = "utt_id\tclient\trank\tam_score\tlm_score\ttext\n"
ROW = "u1\tc1\t1\t-10.5\t-3.25\thello world\n"


@pytest.mark.parametrize("content, where, what", [
    (HEADER + "u1\tc1\t1\t-10.5\thello\n", ":2:", "expected 6 tab-separated columns, got 5"),
    (HEADER + "u1\tc1\t1\tabc\t-3\thello\n", ":2:", "am_score: expected a number"),
    ("u1\tc1\t1\t-10\t-3\thello\n", ":1:", "header lacks required column"),
    ("", "", "empty input"),
    (HEADER + ROW + "u2\tc1\t1\t-1\t-1\tx\n" + ROW.replace("\t1\t", "\t2\t"), ":4:", "not contiguous"),
    (HEADER + ROW + ROW, ":3:", "duplicate rank 1"),
    (HEADER + "u1\tc1\t0\t-1\t-1\tx\n", ":2:", "rank: expected >= 1"),
])
def test_bad_nbest(tmp_path, content, where, what):
    path = tmp_path / "bad.tsv"
    path.write_text(content)
    for args, stdin in (([str(path)], None), ([], content)):
        proc = run_proc(["count-unigrams", *args], input=stdin)
        name = str(path) if args else "<stdin>"
        assert_one_line_error(proc, f"asrpriv count-unigrams: {name}{where}", what)


def test_binary_garbage_and_non_utf8(tmp_path):
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(HEADER.encode() + b"\x00\x01\x02\xff\xfe binary\n")
    assert_one_line_error(run_proc(["count-unigrams", str(garbage)]), f"{garbage}:2:", "binary data")
    latin = tmp_path / "latin1.tsv"
    latin.write_bytes(HEADER.encode() + ROW.encode() + "u2\tc1\t1\t-1\t-1\tcaf\xe9\n".encode("latin-1"))
    assert_one_line_error(run_proc(["count-unigrams", str(latin)]), f"{latin}:3:", "not valid UTF-8")
    text = tmp_path / "latin1.txt"
    text.write_bytes(b"ok line\n" * 3 + "caf\xe9\n".encode("latin-1"))
    assert_one_line_error(run_proc(["count-unigrams", "--text", str(text)]), f"{text}:4:", "UTF-8")


def test_verbose_shows_traceback(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text(HEADER + "u1\tc1\tx\t-1\t-1\thello\n")
    proc = run_proc(["count-unigrams", "--verbose", str(path)])
    assert proc.returncode == 2
    assert b"Traceback" in proc.stderr


def test_bad_counts_file(tmp_path):
    bad = tmp_path / "bad.counts"
    bad.write_text("#unit=utterance\nhello\t1\nworld\tmany\n")
    assert_one_line_error(run_proc(["aggregate", str(bad)]), f"{bad}:3:", "count: expected a number")
    neg = tmp_path / "neg.counts"
    neg.write_text("hello\t-1\n")
    assert_one_line_error(run_proc(["aggregate", str(neg)]), f"{neg}:1:", ">= 0")


def test_atomic_output_leaves_nothing_on_failure(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text(HEADER + "".join(f"u{i}\tc\t1\t-1\t-1\tw{i}\n" for i in range(1000)) + "oops\n")
    out = tmp_path / "out.counts"
    proc = run_proc(["count-unigrams", str(bad), "-o", str(out)])
    assert proc.returncode == 2
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [bad] or sorted(p.name for p in tmp_path.iterdir()) == ["bad.tsv"]


def test_bundled_real_data_reads_without_error():
    for nbest in (AMI / "dev" / "nbest.tsv", LIBRI / "test-clean.nbest.tsv", LIBRI / "test-other.nbest.tsv"):
        reader = NbestReader(str(nbest))
        utts = list(reader)
        assert len(utts) > 900
        assert all(u.hyps[0].rank == 1 for u in utts)
    assert len(list(NbestReader(str(AMI / "dev" / "nbest.tsv")))) == 986
    ref = read_text(str(AMI / "dev" / "ref.txt"))
    assert len(ref) == 986 and sum(len(w) for w in ref.values()) == 11048
    assert len(read_map(str(AMI / "dev" / "utt2client"))) == 986
    train = read_text(str(AMI / "train_text"))
    assert len(train) == 67317 and sum(len(w) for w in train.values()) == 807031
    for name in ("test-clean", "test-other"):
        assert len(read_text(str(LIBRI / f"{name}.ref.txt"))) in (2620, 2939)
        read_text(str(LIBRI / f"{name}.rnnt_baseline.txt"))
        read_map(str(LIBRI / f"{name}.utt2spk"))


def test_unknown_columns_are_kept(tmp_path):
    path = tmp_path / "x.tsv"
    path.write_text("utt_id\textra\ttext\nu1\tfoo bar\thello\nu1\tbaz\tworld\n")
    reader = NbestReader(str(path))
    utt = next(iter(reader))
    assert [reader.column(h, "extra") for h in utt.hyps] == ["foo bar", "baz"]
    assert [h.rank for h in utt.hyps] == [1, 2]


def test_counts_roundtrip_is_exact(tmp_path):
    from asrpriv.io.counts import write_counts

    counts = {"a": 206.3544921875, "b": 0.1353352832366127, "c": 3.0}
    path = tmp_path / "c.counts"
    with open(path, "w") as f:
        write_counts(f, {"unit": "utterance"}, counts)
    meta, back = read_counts(str(path))
    assert back == counts and meta == {"format": "asrpriv-counts/2", "unit": "utterance"}
