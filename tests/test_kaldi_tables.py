"""Kaldi table specifiers (ark:, ark,t:, scp: with offsets, pipes, stdin; text and binary) in
score-wer, import-nbest --from kaldi, select-text and the Kaldi table writer; archives written
by kaldiio (and binary cost archives in Kaldi's BasicHolder<float> layout) read back equal."""

from __future__ import annotations

import gzip
import shutil
import struct

import numpy as np
import pytest
from conftest import ROOT, assert_one_line_error, run_cli, run_proc

kaldiio = pytest.importorskip("kaldiio")

from asrpriv.io import kaldi_tables  # noqa: E402

KALDI = ROOT / "examples" / "importers" / "kaldi"

REF = {"u1": "the cat sat", "u2": "on the mat", "u3": ""}
HYP = {"u1": "the cat sat down", "u2": "on a mat", "u3": "uh"}


def _symbols():
    words = sorted({w for t in (*REF.values(), *HYP.values()) for w in t.split()})
    return {w: i for i, w in enumerate(["<eps>", *words])}


def _write_words_txt(path, sym):
    path.write_text("".join(f"{w} {i}\n" for w, i in sym.items()), encoding="utf-8")
    return str(path)


def _kaldi_text(table):
    return "".join(f"{k} {v}".rstrip() + "\n" for k, v in table.items())


def _score(args, input=None):
    r = run_cli(["score-wer", "--format", "json", *args], input=input)
    assert r.exit_code == 0, r.stderr
    import json

    data = json.loads(r.stdout)
    return {k: data[k] for k in ("wer", "substitutions", "deletions", "insertions", "ref_words")
            if k in data}


def test_text_binary_scp_and_pipe_read_back_equal(tmp_path):
    sym = _symbols()
    words = _write_words_txt(tmp_path / "words.txt", sym)
    ref = tmp_path / "ref.txt"
    ref.write_text(_kaldi_text(REF), encoding="utf-8")
    hyp = tmp_path / "hyp.txt"
    hyp.write_text(_kaldi_text(HYP), encoding="utf-8")
    ids = {k: np.array([sym[w] for w in v.split()], dtype=np.int32) for k, v in HYP.items()}
    # binary int32 archive with an scp of byte offsets, and a text archive, both by kaldiio
    kaldiio.save_ark(str(tmp_path / "hyp.ark"), ids, scp=str(tmp_path / "hyp.scp"))
    kaldiio.save_ark(str(tmp_path / "hyp_t.ark"), ids, text=True)
    scp_lines = (tmp_path / "hyp.scp").read_text().splitlines()
    assert all(":" in line.split()[1] for line in scp_lines)  # offsets
    with gzip.open(tmp_path / "hyp.txt.gz", "wt", encoding="utf-8") as f:
        f.write(_kaldi_text(HYP))

    # the library reads every form back equal to the words written
    expect = {k: v.split() for k, v in HYP.items()}
    inv = {str(i): w for w, i in sym.items()}
    for spec in (f"ark:{tmp_path}/hyp.ark", f"scp:{tmp_path}/hyp.scp", f"ark,t:{tmp_path}/hyp_t.ark"):
        got = {e.key: e.value for e in kaldi_tables.read_tokens(spec, inv)}
        assert got == expect, spec
    for spec in (f"ark,t:{hyp}", f"ark:gunzip -c {tmp_path}/hyp.txt.gz |", f"ark:{hyp}"):
        got = {e.key: e.value for e in kaldi_tables.read_tokens(spec)}
        assert got == expect, spec

    # score-wer: every form of HYP scores equal to plain Kaldi text
    base = _score(["--ref", str(ref), "--hyp", str(hyp)])
    assert base["substitutions"] == 1 and base["insertions"] == 2
    assert _score(["--ref", f"ark,t:{ref}", "--hyp", "ark,t:-"], input=_kaldi_text(HYP)) == base
    assert _score(["--ref", f"ark,t:{ref}", "--hyp", f"ark:{tmp_path}/hyp.ark", "--words", words]) == base
    assert _score(["--ref", str(ref), "--hyp", f"scp:{tmp_path}/hyp.scp", "--words", words]) == base
    assert _score(["--ref", str(ref), "--hyp", f"ark:gunzip -c {tmp_path}/hyp.txt.gz |"]) == base


def test_binary_word_ids_without_words_is_one_line_error(tmp_path):
    kaldiio.save_ark(str(tmp_path / "h.ark"), {"u1": np.array([1, 2], dtype=np.int32)})
    (tmp_path / "ref.txt").write_text("u1 a b\n")
    r = run_proc(["score-wer", "--ref", str(tmp_path / "ref.txt"), "--hyp", f"ark:{tmp_path}/h.ark"])
    assert_one_line_error(r, "binary value where a token vector", "--words")


def test_failing_pipe_is_an_error(tmp_path):
    (tmp_path / "ref.txt").write_text("u1 a b\n")
    r = run_proc(["score-wer", "--ref", str(tmp_path / "ref.txt"), "--hyp",
                  f"ark:gunzip -c {tmp_path}/missing.gz |"])
    assert r.returncode == 2  # the command's own message first (as with Kaldi), then ours
    assert r.stderr.decode().splitlines()[-1].endswith("exited with status 1")


def _float_ark(path, table):
    """Kaldi's binary BaseFloat archive: 'key ' then '\\0B' '\\4' float32 (BasicHolder<float>)."""
    with open(path, "wb") as f:
        for k, v in table.items():
            f.write(k.encode() + b" \0B\x04" + struct.pack("<f", v))


def test_import_kaldi_binary_tables_equal_text(tmp_path):
    """nbest-to-linear's default (binary) archives import equal to their text form."""
    text = run_cli(["import-nbest", "--from", "kaldi", "--words", str(KALDI / "words.txt"), str(KALDI)])
    assert text.exit_code == 0, text.stderr
    d = tmp_path / "bin"
    d.mkdir()
    sym = {}
    for line in (KALDI / "words.txt").read_text().splitlines():
        w, i = line.split()
        sym[w] = int(i)
    ids = {}
    for line in (KALDI / "words.int").read_text().splitlines():
        k, *rest = line.split()
        ids[k] = np.array([int(x) for x in rest], dtype=np.int32)
    kaldiio.save_ark(str(d / "words.int"), ids)
    for name in ("ac_cost", "lm_cost"):
        costs = {}
        for line in (KALDI / name).read_text().splitlines():
            k, v = line.split()
            costs[k] = float(v)
        _float_ark(d / name, costs)
    binary = run_cli(["import-nbest", "--from", "kaldi", "--words", str(KALDI / "words.txt"), str(d)])
    assert binary.exit_code == 0, binary.stderr
    rows_t = [line.split("\t") for line in text.stdout.splitlines()[1:]]
    rows_b = [line.split("\t") for line in binary.stdout.splitlines()[1:]]
    assert len(rows_t) == len(rows_b) > 10
    for a, b in zip(rows_t, rows_b):
        assert (a[0], a[1], a[4]) == (b[0], b[1], b[4])
        assert abs(float(a[2]) - float(b[2])) <= 1e-6 * max(1.0, abs(float(a[2])))  # float32
        assert abs(float(a[3]) - float(b[3])) <= 1e-6 * max(1.0, abs(float(a[3])))


def test_import_kaldi_nbest_archive_from_stdin_and_specifier(tmp_path):
    archive = "u1-1\n0 1 a 1,2,\n1 2 b 0.5,0.5,\n2\n\nu1-2\n0 1 c 3,1,\n1\n\n"
    p = tmp_path / "nbest.txt"
    p.write_text(archive)
    outs = []
    for path, stdin in (("-", archive), ("ark,t:-", archive), (f"ark,t:{p}", None), (str(p), None)):
        r = run_cli(["import-nbest", "--from", "kaldi", path], input=stdin)
        assert r.exit_code == 0, (path, r.stderr)
        outs.append(r.stdout)
    assert len(set(outs)) == 1
    assert outs[0].splitlines()[1:] == ["u1\t1\t-2.5\t-1.5\ta b", "u1\t2\t-1.0\t-3.0\tc"]


def test_select_text_reads_specifiers(tmp_path):
    p = tmp_path / "text"
    p.write_text(_kaldi_text(HYP))
    plain = run_cli(["select-text", "--count-words", str(p)])
    assert plain.exit_code == 0, plain.stderr
    for spec in (f"ark,t:{p}", f"ark:cat {p} |"):
        r = run_cli(["select-text", "--count-words", spec])
        assert r.exit_code == 0, r.stderr
        assert r.stdout == plain.stdout
    r = run_cli(["select-text", "--id-regex", "^u2", "ark,t:-"], input=_kaldi_text(HYP))
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "u2 on a mat\n"


def test_writer_round_trip(tmp_path):
    sym = _symbols()
    inv = {str(i): w for w, i in sym.items()}
    entries = [(k, v.split()) for k, v in HYP.items()]
    # text archive: Kaldi text
    kaldi_tables.write_table(f"ark,t:{tmp_path}/a.txt", entries)
    assert (tmp_path / "a.txt").read_text() == "u1 the cat sat down\nu2 on a mat\nu3 uh\n"
    # binary int32 archive with scp: kaldiio reads it, offsets included
    kaldi_tables.write_table(f"ark,scp:{tmp_path}/b.ark,{tmp_path}/b.scp", entries, sym)
    loaded = dict(kaldiio.load_ark(str(tmp_path / "b.ark")))
    assert {k: [inv[str(i)] for i in v] for k, v in loaded.items()} == dict(entries)
    from_scp = kaldiio.load_scp(str(tmp_path / "b.scp"))
    assert {k: [inv[str(i)] for i in from_scp[k]] for k in from_scp} == dict(entries)


def test_srilm_list_on_stdin(tmp_path):
    src = ROOT / "examples" / "importers" / "srilm" / "nbest1"
    files = sorted(str(p) for p in src.iterdir() if p.is_file())
    direct = run_cli(["import-nbest", "--from", "srilm", str(src)])
    piped = run_cli(["import-nbest", "--from", "srilm", "-"], input="\n".join(files) + "\n")
    assert direct.exit_code == 0 and piped.exit_code == 0, piped.stderr
    assert piped.stdout == direct.stdout
    one = open(files[0], encoding="utf-8").read() if not files[0].endswith(".gz") else \
        gzip.open(files[0], "rt").read()
    # one N-best list on standard input (zcat utt.gz | ...): scored under the utterance id
    # 'stdin', as there is no file name to take it from (issue 40's `zcat x.gz |` case)
    r = run_proc(["import-nbest", "--from", "srilm", "-"], input=one)
    assert r.returncode == 0, r.stderr
    rows = r.stdout.decode().splitlines()[1:]
    assert rows and all(row.split("\t")[0] == "stdin" for row in rows)
    assert len(rows) == len([ln for ln in one.splitlines() if ln.strip() and not ln.startswith("NBestList")])


def test_drop_tokens_literal_and_conventions(tmp_path):
    from asrpriv.io.tokens import parse_drop

    assert parse_drop("=@reject@") == {"@reject@"}
    assert parse_drop("=default") == {"default"}
    assert parse_drop("==x") == {"=x"}
    assert {"[laugh]", "[cough]", "[breath]", "[laughs]", "[inaudible]"} <= parse_drop("default")
    assert "[laugh]" in parse_drop("swbd") and "[laughs]" in parse_drop("chime")
    assert "<unk>" not in parse_drop("default") and "[redacted]" not in parse_drop("default")
    ref = tmp_path / "ref.txt"
    ref.write_text("u1 a b c\n")
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("u1 a @reject@ b [laugh] c\n")
    assert _score(["--ref", str(ref), "--hyp", str(hyp)])["insertions"] == 2
    got = _score(["--ref", str(ref), "--hyp", str(hyp), "--drop-tokens", "default,=@reject@"])
    assert got["insertions"] == 0 and got["wer"] == 0


@pytest.mark.skipif(shutil.which("gunzip") is None, reason="needs gunzip")
def test_specifier_parsing_errors():
    from asrpriv.errors import AsrprivError

    assert kaldi_tables.is_specifier("ark,t:-") and kaldi_tables.is_specifier("scp:x.scp")
    assert not kaldi_tables.is_specifier("text") and not kaldi_tables.is_specifier("C:/x")
    assert not kaldi_tables.is_specifier("data/ark:x")
    with pytest.raises(AsrprivError, match="output pair"):
        kaldi_tables.parse("ark,scp:a.ark,a.scp")


def test_select_nbest_best_as_kaldi_table(tmp_path):
    """--best as a binary word-id archive (what Kaldi's compute-wer reads with int2sym) and as
    a text archive; both read back by kaldiio / score-wer equal to the plain 1-best text."""
    tsv = tmp_path / "n.tsv"
    tsv.write_text("utt_id\trank\tscore\ttext\nu1\t1\t-1\tthe cat\nu1\t2\t-2\ta cat\nu2\t1\t-1\ton a mat\n")
    sym = {w: i for i, w in enumerate(["<eps>", "a", "cat", "mat", "on", "the"])}
    words = _write_words_txt(tmp_path / "words.txt", sym)
    plain = run_cli(["select-nbest", "--best", str(tsv)])
    assert plain.stdout == "u1 the cat\nu2 on a mat\n"
    r = run_cli(["select-nbest", "--best", "--out-format", "kaldi", "--words", words,
                 "-o", f"ark:{tmp_path}/best.ark", str(tsv)])
    assert r.exit_code == 0, r.stderr
    inv = {i: w for w, i in sym.items()}
    got = {k: " ".join(inv[int(i)] for i in v) for k, v in kaldiio.load_ark(str(tmp_path / "best.ark"))}
    assert got == {"u1": "the cat", "u2": "on a mat"}
    r = run_cli(["select-nbest", "--best", "--out-format", "kaldi", "-o", "ark,t:-", str(tsv)])
    assert r.stdout == plain.stdout
    r = run_cli(["select-text", "--out-format", "kaldi", "-o", f"ark,t:{tmp_path}/sel.txt",
                 f"ark:{tmp_path}/best.ark"])
    assert r.exit_code == 2 and "binary value where a token vector" in r.stderr  # ids need --words
    r = run_cli(["select-text", "--words", words, f"ark:{tmp_path}/best.ark"])
    assert r.exit_code == 0, r.stderr
    assert r.stdout == plain.stdout


def test_large_archives_cross_buffer_boundaries(tmp_path):
    """Thousands of entries of varied sizes (keys and values straddle the reader's buffer
    ends), binary and text, plain and through a pipe, read back equal to what kaldiio wrote."""
    table = {f"spk{i % 7}-utt{i:05d}": np.arange(i % 53, dtype=np.int32) * 3 + 1 for i in range(3000)}
    kaldiio.save_ark(str(tmp_path / "big.ark"), table)
    text = "".join(f"{k} {' '.join(map(str, v))}\n" for k, v in table.items())
    (tmp_path / "big.txt").write_text(text)
    want = {k: [int(x) for x in v] for k, v in table.items()}
    for spec in (f"ark:{tmp_path}/big.ark", f"ark:cat {tmp_path}/big.ark |", f"ark,t:{tmp_path}/big.txt"):
        got = {e.key: list(e.value) for e in kaldi_tables.iter_table(spec, "int32s")}
        assert got == want, spec
        assert list(got) == list(table), spec  # archive order kept
