"""import-nbest: every sample converts back to the AMI N-best it was made from; bad input fails
with FILE:LINE; the output feeds rescore-nbest in a pipe."""

from __future__ import annotations

import filecmp
import math
import os
import subprocess
import sys

import pytest

from conftest import AMI, ROOT, assert_one_line_error, run_cli, run_proc

SAMPLES = ROOT / "examples" / "importers"
N_UTTS = 5
LN10 = math.log(10.0)
HALF_BYTELOG = 0.5 * 1024.0 / 10000.5  # nats: SRILM bytelogs are integers


def ami_rows():
    """The first 5 utterances of our AMI N-best, read independently of asrpriv."""
    out, order = {}, []
    with open(AMI / "dev" / "nbest.tsv", encoding="utf-8") as f:
        cols = f.readline().rstrip("\n").split("\t")
        for line in f:
            r = dict(zip(cols, line.rstrip("\n").split("\t")))
            if r["utt_id"] not in order:
                if len(order) == N_UTTS:
                    break
                order.append(r["utt_id"])
            out[(r["utt_id"], int(r["rank"]))] = r
    return order, out


def parse_tsv(text: str):
    lines = text.splitlines()
    cols = lines[0].split("\t")
    return cols, [dict(zip(cols, line.split("\t"))) for line in lines[1:]]


def imported(*args) -> tuple[list[str], list[dict]]:
    res = run_cli(["import-nbest", "-q", *args])
    assert res.exit_code == 0, res.stderr
    return parse_tsv(res.stdout)


def check(cols, rows, expect_cols, score_fn, tol=1e-6, only_rank1=False):
    order, ami = ami_rows()
    assert cols == expect_cols
    keys = [(r["utt_id"], int(r["rank"])) for r in rows]
    want = [k for k in ami if not only_rank1 or k[1] == 1]
    assert keys == want  # same utterances, same ranks, same order
    for r in rows:
        a = ami[(r["utt_id"], int(r["rank"]))]
        assert r["text"] == a["text"]
        for col, value in score_fn(a).items():
            assert abs(float(r[col]) - value) <= tol, (col, r, a)


def am_lm(a):
    return {"am_score": float(a["am_score"]), "lm_score": float(a["lm_score"])}


def total(a):
    return {"score": float(a["am_score"]) + float(a["lm_score"])}


def test_samples_are_what_make_samples_writes(tmp_path):
    subprocess.run([sys.executable, str(SAMPLES / "make_samples.py"), str(tmp_path)], check=True)
    cmp = filecmp.dircmp(tmp_path, SAMPLES, ignore=["README.md", "make_samples.py", "__pycache__"])

    def diffs(c):
        out = c.left_only + c.right_only + c.diff_files
        for sub in c.subdirs.values():
            out += diffs(sub)
        return out

    assert diffs(cmp) == []


def test_kaldi_round_trip():
    check(*imported("--from", "kaldi", str(SAMPLES / "kaldi")),
          ["utt_id", "rank", "am_score", "lm_score", "text"], am_lm)


def test_kaldi_words_int_round_trip():
    check(*imported("--from", "kaldi", str(SAMPLES / "kaldi"), "--words",
                    str(SAMPLES / "kaldi" / "words.txt")),
          ["utt_id", "rank", "am_score", "lm_score", "text"], am_lm)


def test_kaldi_acoustic_scale():
    cols, rows = imported("--from", "kaldi", str(SAMPLES / "kaldi"), "--acoustic-scale", "0.1")
    check(cols, rows, ["utt_id", "rank", "am_score", "lm_score", "text"],
          lambda a: {"am_score": 0.1 * float(a["am_score"]), "lm_score": float(a["lm_score"])})


def test_espnet_round_trip():
    check(*imported("--from", "espnet", str(SAMPLES / "espnet")),
          ["utt_id", "rank", "score", "text"], total)


def test_nemo_beams_round_trip():
    check(*imported("--from", "nemo", str(SAMPLES / "nemo" / "preds_out_width20_alpha1.0_beta0.0.tsv"),
                    "--manifest", str(SAMPLES / "nemo" / "manifest.json")),
          ["utt_id", "rank", "score", "text"], total)


def test_nemo_predictions_manifest_is_the_1best():
    check(*imported("--from", "nemo", str(SAMPLES / "nemo" / "predictions.json")),
          ["utt_id", "rank", "text"], lambda a: {}, only_rank1=True)


@pytest.mark.parametrize("where", ["plain", "plain.list"])
def test_srilm_plain_round_trip(where):
    check(*imported("--from", "srilm", str(SAMPLES / "srilm" / where)),
          ["utt_id", "rank", "am_score", "lm_score", "text"], am_lm)


def test_srilm_nbestlist1_round_trip_within_half_a_bytelog():
    check(*imported("--from", "srilm", str(SAMPLES / "srilm" / "nbest1")),
          ["utt_id", "rank", "score", "text"], total, tol=HALF_BYTELOG)


def test_srilm_nbestlist2_round_trip_within_half_a_bytelog():
    check(*imported("--from", "srilm", str(SAMPLES / "srilm" / "nbest2")),
          ["utt_id", "rank", "am_score", "lm_score", "score", "text"],
          lambda a: {**am_lm(a), "score": float(a["am_score"]) + float(a["lm_score"])},
          tol=2 * HALF_BYTELOG)  # the total is the sum of two rounded sums


def test_srilm_bytelog_conversion_by_hand(tmp_path):
    # SRILM Prob.h: BytelogToLogP(b) = b * 1024 / 10000.5 / ln(10) (log10); times ln(10) = nats
    d = tmp_path / "nb"
    d.mkdir()
    (d / "u1.nbest.gz").write_bytes(__import__("gzip").compress(
        b"NBestList2.0\n(-30) a ( st: 0.00 et: 0.10 g: -5 a: -20 ) a-1 ( st: 0.02 et: 0.05 g: -1 a: -1 )"
        b" b ( st: 0.20 et: 0.30 g: -3 a: -2 )\n"))
    cols, rows = imported("--from", "srilm", str(d))
    assert [r["utt_id"] for r in rows] == ["u1"] and rows[0]["text"] == "a b"
    nats = 1024.0 / 10000.5
    assert float(rows[0]["lm_score"]) == pytest.approx(-8 * nats, abs=1e-9)
    assert float(rows[0]["am_score"]) == pytest.approx(-22 * nats, abs=1e-9)
    assert float(rows[0]["score"]) == pytest.approx(-30 * nats, abs=1e-9)


def test_icefall_is_the_1best_and_writes_refs(tmp_path):
    ref_out = tmp_path / "ref.txt"
    cols, rows = imported("--from", "icefall", str(SAMPLES / "icefall" / "recogs-dev-sample.txt"),
                          "--ref-out", str(ref_out))
    check(cols, rows, ["utt_id", "rank", "text"], lambda a: {}, only_rank1=True)
    refs = dict(line.split(None, 1) for line in open(AMI / "dev" / "ref.txt", encoding="utf-8"))
    for line in ref_out.read_text().splitlines():
        u, words = line.split(None, 1)
        assert refs[u].strip() == words


def test_tsv_mapping_round_trip():
    check(*imported("--from", "tsv", str(SAMPLES / "tsv" / "nbest.csv"),
                    "--map", "key=utt_id,hyp=text,ac=am_score,lm=lm_score,n=rank"),
          ["utt_id", "rank", "am_score", "lm_score", "text"], am_lm)


def test_tsv_log10_carried_columns_and_file_order(tmp_path):
    p = tmp_path / "x.tsv"
    p.write_text("id\tsentence\ttotal\tspeaker\nu1\ta b\t-1\tS1\nu1\ta c\t-2\tS1\nu2\t\t-0.5\tS2\n")
    cols, rows = imported("--from", "tsv", str(p), "--map", "id=utt_id,sentence=text,total=score",
                          "--log-base", "10")
    assert cols == ["utt_id", "rank", "score", "text", "speaker"]
    assert [(r["utt_id"], r["rank"], r["text"], r["speaker"]) for r in rows] == [
        ("u1", "1", "a b", "S1"), ("u1", "2", "a c", "S1"), ("u2", "1", "", "S2")]
    assert float(rows[1]["score"]) == pytest.approx(-2 * LN10, abs=1e-9)


# ------------------------------------------------------------------ malformed inputs

def _copy(src, dst):
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_kaldi_key_mismatch_is_located(tmp_path):
    d = _copy(SAMPLES / "kaldi", tmp_path / "k")
    lines = (d / "lm_cost").read_text().splitlines()
    lines[2], lines[3] = lines[3], lines[2]
    (d / "lm_cost").write_text("\n".join(lines) + "\n")
    proc = run_proc(["import-nbest", "--from", "kaldi", str(d)])
    assert_one_line_error(proc, f"{d / 'lm_cost'}:3:", "ES2011a_0001-4")
    assert proc.stdout.count(b"\n") <= 3  # stopped there


def test_kaldi_bad_cost_and_bad_key(tmp_path):
    d = _copy(SAMPLES / "kaldi", tmp_path / "k")
    (d / "ac_cost").write_text((d / "ac_cost").read_text().replace("912.0312", "nan", 1))
    assert_one_line_error(run_proc(["import-nbest", "--from", "kaldi", str(d)]),
                          f"{d / 'ac_cost'}:2:", "NaN")
    (d / "text").write_text("no_rank_here a b\n")
    assert_one_line_error(run_proc(["import-nbest", "--from", "kaldi", str(d)]),
                          f"{d / 'text'}:1:", "UTT-N")


def test_espnet_score_not_a_number(tmp_path):
    d = _copy(SAMPLES / "espnet", tmp_path / "e")
    p = d / "3best_recog" / "score"
    p.write_text(p.read_text().replace("tensor(", "tensor(x", 1))
    assert_one_line_error(run_proc(["import-nbest", "--from", "espnet", str(d)]), f"{p}:1:", "score")


def test_nemo_beams_not_a_multiple_of_the_manifest(tmp_path):
    beams = tmp_path / "b.tsv"
    beams.write_text("a\t-1\nb\t-2\nc\t-3\n")
    man = tmp_path / "m.json"
    man.write_text('{"audio_filepath": "x/u1.wav"}\n{"audio_filepath": "x/u2.wav"}\n')
    assert_one_line_error(run_proc(["import-nbest", "--from", "nemo", str(beams), "--manifest", str(man)]),
                          str(beams), "--beam-size")
    beams.write_text("a\t-1\nb -2\n")
    assert_one_line_error(run_proc(["import-nbest", "--from", "nemo", str(beams), "--manifest", str(man)]),
                          f"{beams}:2:", "text<TAB>score")
    man.write_text('{"audio_filepath": "x/u1.wav"}\n{"audio_filepath": \n')
    assert_one_line_error(run_proc(["import-nbest", "--from", "nemo", str(beams), "--manifest", str(man)]),
                          f"{man}:2:", "JSON")


def test_srilm_bad_lines(tmp_path):
    d = tmp_path / "s"
    d.mkdir()
    (d / "u1.score").write_text("-1 -2 2 a b\n-1 x 1 a\n")
    assert_one_line_error(run_proc(["import-nbest", "--from", "srilm", str(d)]),
                          f"{d / 'u1.score'}:2:", "LM score")
    (d / "u1.score").write_text("NBestList2.0\n(-3) a ( st: 0 et: 1 g: -1 )\n")
    assert_one_line_error(run_proc(["import-nbest", "--from", "srilm", str(d)]),
                          f"{d / 'u1.score'}:2:", "11 fields")
    lst = tmp_path / "list"
    lst.write_text(f"{d / 'u1.score'}\nmissing.score\n")
    assert_one_line_error(run_proc(["import-nbest", "--from", "srilm", str(lst)]), f"{lst}:2:", "missing.score")


def test_icefall_and_tsv_bad_lines(tmp_path):
    p = tmp_path / "recogs.txt"
    p.write_text("u1:\tref=['a']\nu1:\thyp=['a'\n")
    assert_one_line_error(run_proc(["import-nbest", "--from", "icefall", str(p)]), f"{p}:2:", "list")
    t = tmp_path / "x.csv"
    t.write_text("k,h,s\nu1,a,-1\nu2,b\n")
    assert_one_line_error(run_proc(["import-nbest", "--from", "tsv", str(t), "--map", "k=utt_id,h=text,s=score"]),
                          f"{t}:3:", "expected 3 fields")
    t.write_text("k,h\nu1,a\nu2,b\nu1,c\n")
    assert_one_line_error(run_proc(["import-nbest", "--from", "tsv", str(t), "--map", "k=utt_id,h=text"]),
                          f"{t}:4:", "together")
    assert_one_line_error(run_proc(["import-nbest", "--from", "tsv", str(t), "--map", "k=utt_id"]),
                          f"{t}:1:", "text")


def test_options_of_another_format_are_refused():
    assert_one_line_error(run_proc(["import-nbest", "--from", "kaldi", str(SAMPLES / "kaldi"),
                                    "--manifest", "m.json"]), "--manifest", "kaldi")


def test_output_file_is_atomic_and_not_left_on_error(tmp_path):
    out = tmp_path / "out.tsv"
    d = _copy(SAMPLES / "kaldi", tmp_path / "k")
    (d / "lm_cost").write_text("ES2011a_0001-1 1.0\n")
    proc = run_proc(["import-nbest", "--from", "kaldi", str(d), "-o", str(out)])
    assert proc.returncode == 2 and not out.exists() and os.listdir(tmp_path) == ["k"]


def test_pipe_into_rescore_nbest(tmp_path):
    """import-nbest | rescore-nbest with the bundled first-pass ARPA, as real processes."""
    arpa = AMI / "firstpass-en-us-2gram.arpa.gz"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    cmd = (f"{sys.executable} -m asrpriv import-nbest -q --from kaldi {SAMPLES / 'kaldi'} | "
           f"{sys.executable} -m asrpriv rescore-nbest -q --ngram {arpa} --lm-weight 10 --word-penalty 0")
    proc = subprocess.run(cmd, shell=True, capture_output=True, env=env, executable="/bin/bash")
    assert proc.returncode == 0, proc.stderr.decode()
    cols, rows = parse_tsv(proc.stdout.decode())
    assert {"ngram_score", "score", "first_pass_rank"} <= set(cols)
    assert len(rows) == 100 and len({r["utt_id"] for r in rows}) == N_UTTS
    # the combined score follows the formula with the imported acoustic score
    r = rows[0]
    assert float(r["score"]) == pytest.approx(float(r["am_score"]) + 10 * float(r["ngram_score"]), abs=2e-3)


def _kaldi_archive(tmp_path, compact=True):
    """Our AMI N-best as the text form of a lattice-to-nbest archive (costs split over arcs,
    an epsilon arc, the rest in the final weight), words as ids of the sample's symbol table."""
    order, ami = ami_rows()
    ids = {}
    for line in (SAMPLES / "kaldi" / "words.txt").read_text(encoding="utf-8").splitlines():
        word, num = line.split()
        ids[word] = num
    out = []
    for (utt, rank), a in ami.items():
        words = a["text"].split()
        graph, acoustic = -float(a["lm_score"]), -float(a["am_score"])
        out.append(f"{utt}-{rank}")
        labels = [ids[w] for w in words] + ["0"]  # a final epsilon arc
        for s, label in enumerate(labels):
            g, ac = graph / (len(labels) + 1), acoustic / (len(labels) + 1)
            weight = f"{g!r},{ac!r},{s + 1}_{s + 2}"
            out.append(f"{s}\t{s + 1}\t{label}\t{weight}" if compact
                       else f"{s}\t{s + 1}\t7\t{label}\t{g!r},{ac!r}")
        rest_g = graph - len(labels) * (graph / (len(labels) + 1))
        rest_a = acoustic - len(labels) * (acoustic / (len(labels) + 1))
        out.append(f"{len(labels)}\t{rest_g!r},{rest_a!r},")
        out.append("")
    path = tmp_path / "nbest.txt"
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("compact", [True, False])
def test_kaldi_nbest_archive_round_trip(tmp_path, compact):
    path = _kaldi_archive(tmp_path, compact)
    check(*imported("--from", "kaldi", str(path), "--words", str(SAMPLES / "kaldi" / "words.txt")),
          ["utt_id", "rank", "am_score", "lm_score", "text"], am_lm, tol=1e-6)


def test_kaldi_nbest_archive_errors(tmp_path):
    branching = tmp_path / "lat.txt"
    branching.write_text("u-1\n0\t1\t1\t1,1,\n0\t2\t1\t1,1,\n1\n2\n\n", encoding="utf-8")
    words = tmp_path / "words.txt"
    words.write_text("a 1\n", encoding="utf-8")
    proc = run_proc(["import-nbest", "--from", "kaldi", "--words", str(words), str(branching),
                     "-o", str(tmp_path / "out.tsv")])
    assert_one_line_error(proc, "lat.txt:3", "branches", "--from kaldi-lattice")
    assert not (tmp_path / "out.tsv").exists()
    no_words = tmp_path / "ids.txt"
    no_words.write_text("u-1\n0\t1\t1\t1,1,\n1\n\n", encoding="utf-8")
    proc = run_proc(["import-nbest", "--from", "kaldi", str(no_words), "-o", str(tmp_path / "o")])
    assert_one_line_error(proc, "ids.txt:2", "--words")
    bad = tmp_path / "bad.txt"
    bad.write_text("u-1\n0\t1\t1\tx,1,\n1\n\n", encoding="utf-8")
    proc = run_proc(["import-nbest", "--from", "kaldi", "--words", str(words), str(bad)])
    assert_one_line_error(proc, "bad.txt:2", "graph cost")
