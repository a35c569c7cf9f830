"""Issue 27: the layouts the recognizers' own scripts write, SRILM's non-events, one
--drop-tokens list everywhere, streams that never leave a plausible partial result, and error
messages that name the real problem.

Each layout is written here the way the cited script writes it (docs/FORMATS.md cites the
script and its version), from the first 5 utterances of the bundled AMI N-best, and imported
back; numbers are compared with the AMI rows read independently (test_import_nbest.ami_rows).
"""

from __future__ import annotations

import io
import math
import os
import subprocess
import sys

import pytest

from conftest import AMI, ROOT, assert_one_line_error, run_cli, run_proc
from test_import_nbest import SAMPLES, ami_rows, parse_tsv

LN10 = math.log(10.0)


@pytest.fixture(scope="module")
def tiny_arpa(tmp_path_factory):
    """A small bigram ARPA (loads in milliseconds, unlike the 2M-bigram first-pass LM)."""
    d = tmp_path_factory.mktemp("lm")
    arpa = d / "lm.arpa"
    res = run_cli(["train-ngram", "-q", "--order", "2", "--ids", "--discount-fallback",
                   str(AMI / "dev" / "ref.txt"), "-o", str(arpa)])
    assert res.exit_code == 0, res.stderr
    return arpa


def imported(*args) -> tuple[list[str], list[dict]]:
    res = run_cli(["import-nbest", "-q", *args])
    assert res.exit_code == 0, res.stderr
    return parse_tsv(res.stdout)


def _jobs(order):
    """Utterances split over 2 jobs as utils/split_scp.pl does: contiguous, in key order."""
    return [order[:3], order[3:]]


# --- Kaldi: scripts/rnnlm/lmrescore_nbest.sh archives.J/ -----------------------------------

def _kaldi_archives(tmp_path, with_lm="withlm", ids=False):
    """decode dir with archives.1, archives.2 as lmrescore_nbest.sh stages 3-5 leave them:
    nbest-to-linear's text tables keyed UTT-N (words, lmwt.nolm, acwt, lmwt.withlm), then
    words_text (int2sym.pl -f 2-) and lmwt.lmonly (paste nolm withlm | awk '{print $1, ($4-$2)}')."""
    order, ami = ami_rows()
    symbols = {}
    for line in (SAMPLES / "kaldi" / "words.txt").read_text(encoding="utf-8").splitlines():
        word, num = line.split()
        symbols[word] = num
    decode = tmp_path / "decode_rnnlm"
    for j, utts in enumerate(_jobs(order), 1):
        adir = decode / f"archives.{j}"
        adir.mkdir(parents=True)
        tables = {n: [] for n in ("words", "words_text", "acwt", "lmwt.nolm", "lmwt.withlm",
                                  "lmwt.lmonly")}
        for (utt, rank), a in ami.items():
            if utt not in utts:
                continue
            key = f"{utt}-{rank}"
            graph = -float(a["lm_score"])
            nolm = 0.25 * graph  # the part of the graph cost that is not the LM's
            tables["words"].append(f"{key} " + " ".join(symbols[w] for w in a["text"].split()))
            tables["words_text"].append(f"{key} {a['text']}")
            tables["acwt"].append(f"{key} {-float(a['am_score'])!r}")
            tables["lmwt.nolm"].append(f"{key} {nolm!r}")
            tables["lmwt.withlm"].append(f"{key} {graph!r}")
            tables["lmwt.lmonly"].append(f"{key} {graph - nolm!r}")
        keep = {"withlm": ("words", "words_text", "acwt", "lmwt.nolm", "lmwt.withlm", "lmwt.lmonly"),
                "split": ("words", "words_text", "acwt", "lmwt.nolm", "lmwt.lmonly")}[with_lm]
        for name in keep:
            if ids and name == "words_text":
                continue
            (adir / name).write_text("\n".join(tables[name]) + "\n", encoding="utf-8")
    return decode


def _check_am_lm(cols, rows, scale=1.0):
    order, ami = ami_rows()
    assert cols == ["utt_id", "rank", "am_score", "lm_score", "text"]
    assert [(r["utt_id"], int(r["rank"])) for r in rows] == list(ami)  # jobs merged in order
    for r in rows:
        a = ami[(r["utt_id"], int(r["rank"]))]
        assert r["text"] == a["text"]
        assert float(r["am_score"]) == pytest.approx(scale * float(a["am_score"]), abs=1e-6)
        assert float(r["lm_score"]) == pytest.approx(float(a["lm_score"]), abs=1e-6)


@pytest.mark.parametrize("with_lm", ["withlm", "split"])
def test_kaldi_lmrescore_nbest_archives_round_trip(tmp_path, with_lm):
    decode = _kaldi_archives(tmp_path, with_lm)
    _check_am_lm(*imported("--from", "kaldi", str(decode)))


def test_kaldi_one_archives_folder_and_integer_words(tmp_path):
    decode = _kaldi_archives(tmp_path, ids=True)
    cols, rows = imported("--from", "kaldi", str(decode), "--words", str(SAMPLES / "kaldi" / "words.txt"))
    _check_am_lm(cols, rows)
    cols, rows = imported("--from", "kaldi", str(decode / "archives.2"), "--words",
                          str(SAMPLES / "kaldi" / "words.txt"), "--acoustic-scale", "0.1")
    order, ami = ami_rows()
    assert {r["utt_id"] for r in rows} == set(order[3:])
    a = ami[(rows[0]["utt_id"], 1)]
    assert float(rows[0]["am_score"]) == pytest.approx(0.1 * float(a["am_score"]), abs=1e-6)
    res = run_cli(["import-nbest", "--from", "kaldi", str(decode)])  # words only, no words_text
    assert res.exit_code == 2 and "--words" in res.stderr and res.stdout == ""


def test_kaldi_utterance_in_two_jobs_is_refused_before_output(tmp_path):
    decode = _kaldi_archives(tmp_path)
    a1, a2 = decode / "archives.1", decode / "archives.2"
    for name in ("words_text", "acwt", "lmwt.withlm"):
        first = (a1 / name).read_text(encoding="utf-8").splitlines()[0]
        (a2 / name).write_text(first + "\n" + (a2 / name).read_text(encoding="utf-8"), encoding="utf-8")
    proc = run_proc(["import-nbest", "--from", "kaldi", str(decode)])
    assert_one_line_error(proc, "archives.2", "earlier job")
    assert proc.stdout == b""


def test_kaldi_text_and_ac_cost_only(tmp_path):
    d = tmp_path / "k"
    d.mkdir()
    for name in ("text", "ac_cost"):
        (d / name).write_bytes((SAMPLES / "kaldi" / name).read_bytes())
    res = run_cli(["import-nbest", "--from", "kaldi", str(d)])
    assert res.exit_code == 0, res.stderr
    assert "no lm_cost" in res.stderr
    cols, rows = parse_tsv(res.stdout)
    order, ami = ami_rows()
    assert cols == ["utt_id", "rank", "am_score", "text"]
    assert len(rows) == len(ami)
    for r in rows:
        a = ami[(r["utt_id"], int(r["rank"]))]
        assert float(r["am_score"]) == pytest.approx(float(a["am_score"]), abs=1e-6)


@pytest.mark.parametrize("content", [
    # a lattice (lattice-copy ark:lat.1.gz ark,t:-): the key has no -N, states branch
    "ES2011a_0001\n0\t1\t5\t5\t1.5,20.25\n0\t2\t6\t6\t1.0,22.0\n1\t3\t7\t7\t0.5,3.0\n2\t3\t7\t7\t0.5,3.0\n3\n\n",
    # a compact lattice with UTT-N-looking key but two arcs out of state 0
    "ES2011a-1\n0\t1\t5\t1.5,20.25,1_2\n0\t1\t6\t1.0,22.0,1_3\n1\t0,0,\n\n",
])
def test_kaldi_lattice_is_refused_before_any_line(tmp_path, content):
    lat = tmp_path / "lat.1.txt"
    lat.write_text(content, encoding="utf-8")
    proc = run_proc(["import-nbest", "--from", "kaldi", str(lat)])
    assert_one_line_error(proc, "lat.1.txt:", "--from kaldi-lattice")
    assert proc.stdout == b""  # not even the TSV header


def test_kaldi_binary_archive_is_refused(tmp_path):
    lat = tmp_path / "lat.1.ark"
    lat.write_bytes(b"ES2011a_0001 \x00B\x04\x01\x00\x00\x00\x02")
    proc = run_proc(["import-nbest", "--from", "kaldi", str(lat)])
    assert_one_line_error(proc, "binary Kaldi archive", "ark,t:")
    assert proc.stdout == b""


# --- ESPnet2: egs2/TEMPLATE/asr1/asr.sh logdir/output.J/ -----------------------------------

def _espnet_logdir(tmp_path, dup=False):
    """${_dir}/logdir/output.J/{n}best_recog/{text,score,token} per job, as asr.sh stage 12
    leaves them (asr_inference --output_dir ${_logdir}/output.JOB), plus ${_dir}/text etc.
    (the merged 1-best). Scores as str(hyp.score): tensor reprs."""
    order, ami = ami_rows()
    d = tmp_path / "decode_asr" / "dev"
    for j, utts in enumerate(_jobs(order), 1):
        if dup and j == 2:
            utts = utts + [order[0]]
        for (utt, rank), a in ami.items():
            if utt not in utts:
                continue
            rd = d / "logdir" / f"output.{j}" / f"{rank}best_recog"
            rd.mkdir(parents=True, exist_ok=True)
            total = float(a["am_score"]) + float(a["lm_score"])
            with open(rd / "text", "a", encoding="utf-8") as f:
                f.write(f"{utt} {a['text']}\n")
            with open(rd / "score", "a", encoding="utf-8") as f:
                f.write(f"{utt} tensor({total:.4f})\n")
            with open(rd / "token", "a", encoding="utf-8") as f:
                f.write(f"{utt} " + " ".join(a["text"].replace(" ", "_")) + "\n")
    merged = "".join((d / "logdir" / f"output.{j}" / "1best_recog" / "text").read_text(encoding="utf-8")
                     for j in (1, 2))
    (d / "text").write_text("".join(sorted(merged.splitlines(True))), encoding="utf-8")
    return d


@pytest.mark.parametrize("where", ["dir", "logdir", "job"])
def test_espnet_asr_sh_job_folders_merged(tmp_path, where):
    d = _espnet_logdir(tmp_path)
    path = {"dir": d, "logdir": d / "logdir", "job": d / "logdir" / "output.1"}[where]
    cols, rows = imported("--from", "espnet", str(path))
    order, ami = ami_rows()
    assert cols == ["utt_id", "rank", "score", "text"]
    want = [k for k in ami if where != "job" or k[0] in order[:3]]
    assert [(r["utt_id"], int(r["rank"])) for r in rows] == want
    for r in rows:
        a = ami[(r["utt_id"], int(r["rank"]))]
        assert r["text"] == a["text"]
        assert float(r["score"]) == pytest.approx(float(a["am_score"]) + float(a["lm_score"]), abs=1e-3)


def test_espnet_utterance_in_two_jobs_is_refused_before_output(tmp_path):
    d = _espnet_logdir(tmp_path, dup=True)
    proc = run_proc(["import-nbest", "--from", "espnet", str(d)])
    assert_one_line_error(proc, "output.2", "earlier job")
    assert proc.stdout == b""


# --- SRILM: one file, a list, a directory; non-events ---------------------------------------

def test_srilm_single_file_is_one_utterance():
    path = SAMPLES / "srilm" / "plain" / "ES2011a_0002.score"
    cols, rows = imported("--from", "srilm", str(path))
    order, ami = ami_rows()
    assert {r["utt_id"] for r in rows} == {"ES2011a_0002"}
    assert len(rows) == sum(1 for k in ami if k[0] == "ES2011a_0002")
    for r in rows:
        a = ami[(r["utt_id"], int(r["rank"]))]
        assert r["text"] == a["text"]
        assert float(r["am_score"]) == pytest.approx(float(a["am_score"]), abs=1e-6)


def _srilm_with_non_events(tmp_path):
    """SRILM N-best lines as nbest-lattice / Decipher write them, with <s>, </s>, -pau-."""
    d = tmp_path / "nbest"
    d.mkdir()
    (d / "utt_a.score").write_text(
        "-100.5 -20.25 5 <s> hello -pau- world </s>\n"
        "-101 -19.5 4 <s> hello -pau- -pau- word </s>\n", encoding="utf-8")
    (d / "utt_b.score.gz").write_bytes(__import__("gzip").compress(b"-50 -10 2 -pau- yes -pau-\n"))
    listing = tmp_path / "nbest.list"
    listing.write_text("nbest/utt_a.score\nnbest/utt_b.score.gz\n", encoding="utf-8")
    return d, listing


@pytest.mark.parametrize("which", ["dir", "list", "file"])
def test_srilm_non_events_are_dropped(tmp_path, which):
    d, listing = _srilm_with_non_events(tmp_path)
    path = {"dir": d, "list": listing, "file": d / "utt_a.score"}[which]
    res = run_cli(["import-nbest", "--from", "srilm", str(path)])
    assert res.exit_code == 0, res.stderr
    cols, rows = parse_tsv(res.stdout)
    texts = [(r["utt_id"], r["text"]) for r in rows]
    want = [("utt_a", "hello world"), ("utt_a", "hello word"), ("utt_b", "yes")]
    assert texts == (want[:2] if which == "file" else want)
    assert float(rows[0]["am_score"]) == pytest.approx(-100.5 * LN10)  # scores as written
    assert float(rows[0]["lm_score"]) == pytest.approx(-20.25 * LN10)
    assert ("9 non-word tokens dropped" if which != "file" else "7 non-word tokens dropped") in res.stderr
    keep = run_cli(["import-nbest", "-q", "--from", "srilm", "--drop-tokens", "none", str(path)])
    assert parse_tsv(keep.stdout)[1][0]["text"] == "<s> hello -pau- world </s>"


def test_srilm_list_naming_a_missing_file_says_it_was_read_as_a_list(tmp_path):
    listing = tmp_path / "l"
    listing.write_text("nbest/none.score\n", encoding="utf-8")
    proc = run_proc(["import-nbest", "--from", "srilm", str(listing)])
    assert_one_line_error(proc, "l:1", "no such N-best file", "list of N-best files")
    assert proc.stdout == b""


# --- streams that never leave a plausible partial result ------------------------------------

def test_bad_file_late_in_the_list_fails_the_whole_pipe(tmp_path, tiny_arpa):
    """import-nbest | rescore-nbest: a bad file after good ones. The importer checks all of
    its input before writing, so rescore-nbest gets nothing and fails; with pipefail the
    pipeline fails too (the README's pipelines use it)."""
    files = sorted((SAMPLES / "srilm" / "plain").iterdir())
    bad = tmp_path / "ZZ_bad.score"
    bad.write_text("-1 -2 1 fine\n-1 oops 1 broken\n", encoding="utf-8")
    listing = tmp_path / "all.list"
    listing.write_text("\n".join(map(str, files + [bad])) + "\n", encoding="utf-8")
    arpa = tiny_arpa
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    py = sys.executable
    cmd = (f"set -o pipefail; {py} -m asrpriv import-nbest --from srilm {listing} | "
           f"{py} -m asrpriv rescore-nbest --ngram {arpa} --lm-weight 10")
    proc = subprocess.run(cmd, shell=True, capture_output=True, env=env, executable="/bin/bash")
    assert proc.returncode == 2
    assert proc.stdout == b""  # no rescored hypothesis at all
    err = proc.stderr.decode()
    assert "ZZ_bad.score:2" in err and "empty input" in err


def test_a_stream_cut_by_a_failure_is_marked_and_refused():
    from asrpriv.errors import InputError
    from asrpriv.io.nbest import ABORT_MARKER, NbestReader, abort_marker

    out = io.StringIO()
    with pytest.raises(InputError):
        with abort_marker(out, True) as marked:
            marked.write("utt_id\ttext\n")
            marked.write("u1\thello\n")
            raise InputError("x.tsv", 9, "broken")
    text = out.getvalue()
    assert text.splitlines()[-1].startswith(ABORT_MARKER) and "x.tsv:9: broken" in text
    reader = NbestReader("<pipe>", lines=iter(enumerate(text.splitlines(), 1)))
    with pytest.raises(InputError, match="failed part-way"):
        list(reader)
    silent = io.StringIO()  # a failure before anything was written leaves stdout empty
    with pytest.raises(InputError):
        with abort_marker(silent, True):
            raise InputError("x.tsv", 1, "broken")
    assert silent.getvalue() == ""


# --- --drop-tokens: one list everywhere --------------------------------------------------------

def test_parse_drop_items(tmp_path):
    from asrpriv.errors import AsrprivError
    from asrpriv.io.tokens import DEFAULT_DROP, SRILM_NON_EVENTS, parse_drop

    assert parse_drop(None) == frozenset() and parse_drop("none") == frozenset()
    assert parse_drop("srilm") == {"<s>", "</s>", "-pau-"} == set(SRILM_NON_EVENTS)
    assert {"[noise]", "<sil>", "-pau-"} <= parse_drop("default") and "<unk>" not in DEFAULT_DROP
    f = tmp_path / "drop.txt"
    f.write_text("# mine\n<breath>\n\n{lipsmack}\n", encoding="utf-8")
    assert parse_drop(f"srilm,@{f},uh") == {"<s>", "</s>", "-pau-", "<breath>", "{lipsmack}", "uh"}
    with pytest.raises(AsrprivError, match="@FILE"):
        parse_drop("@")


def _kaldi_pair(tmp_path):
    ref = tmp_path / "ref.txt"
    ref.write_text("u1 the cat sat\nu2 on the mat\n", encoding="utf-8")
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("u1 -pau- the cat [noise] sat\nu2 on a mat -pau-\n", encoding="utf-8")
    return ref, hyp


def test_score_wer_drops_the_same_tokens(tmp_path):
    import json

    ref, hyp = _kaldi_pair(tmp_path)
    plain = run_cli(["score-wer", "--ref", str(ref), "--hyp", str(hyp), "--format", "json"])
    assert plain.exit_code == 0
    assert "3 hypothesis tokens look like non-words" in plain.stderr and "--drop-tokens" in plain.stderr
    assert json.loads(plain.stdout)["insertions"] == 3  # scored as words
    res = run_cli(["score-wer", "--ref", str(ref), "--hyp", str(hyp), "--format", "json",
                   "--drop-tokens", "default", "--strip-punct"])
    report = json.loads(res.stdout)
    # by hand: u1 all correct; u2 one substitution (the -> a): 1 error in 6 words
    assert (report["errors"], report["ref_words"], report["insertions"]) == (1, 6, 0)
    assert "drop:" in report["signature"] and "non-words" not in res.stderr


def test_count_unigrams_drops_the_same_tokens(tmp_path):
    from asrpriv.io.counts import read_counts

    _ref, hyp = _kaldi_pair(tmp_path)
    for extra in ([], ["--max-l1", "100"]):  # the fast path and the per-unit path
        out = tmp_path / "c.counts"
        res = run_cli(["count-unigrams", "--text", "--ids", str(hyp), "--drop-tokens", "default",
                       "-o", str(out), *extra])
        assert res.exit_code == 0, res.stderr
        _meta, counts = read_counts(str(out))
        assert dict(counts) == {"the": 1, "cat": 1, "sat": 1, "on": 1, "a": 1, "mat": 1}
    tsv = tmp_path / "n.tsv"
    tsv.write_text("utt_id\trank\ttext\nu1\t1\t<s> hi -pau- there </s>\n", encoding="utf-8")
    res = run_cli(["count-unigrams", "--sigma", "1", str(tsv), "--drop-tokens", "srilm", "-o", str(out)])
    assert res.exit_code == 0, res.stderr
    assert set(read_counts(str(out))[1]) == {"hi", "there"}


def test_rescore_nbest_drops_the_same_tokens_and_scores_the_rest(tmp_path):
    """The n-gram score of a hypothesis with -pau- dropped is kenlm's score of the words alone."""
    import kenlm

    arpa = tmp_path / "lm.arpa"
    text = tmp_path / "t.txt"
    text.write_text("hello world\nhello there world\nworld hello\n", encoding="utf-8")
    assert run_cli(["train-ngram", "-q", "--order", "2", "--discount-fallback", str(text),
                    "-o", str(arpa)]).exit_code == 0
    tsv = tmp_path / "n.tsv"
    tsv.write_text("utt_id\trank\tam_score\ttext\tconfidence\n"
                   "u1\t1\t-10\thello -pau- world\t0.9 1.0 0.8\n"
                   "u1\t2\t-11\t<s> hello there world </s>\t0.5 0.6 0.7 0.8 0.9\n", encoding="utf-8")
    res = run_cli(["rescore-nbest", "--ngram", str(arpa), "--lm-weight", "1", "--word-penalty", "0",
                   "--drop-tokens", "srilm", str(tsv)])
    assert res.exit_code == 0, res.stderr
    assert "non-word tokens dropped: 3" in res.stderr
    cols, rows = parse_tsv(res.stdout)
    model = kenlm.Model(str(arpa))
    by_text = {r["text"]: r for r in rows}
    assert set(by_text) == {"hello world", "hello there world"}
    for sentence, r in by_text.items():
        assert float(r["ngram_score"]) == pytest.approx(model.score(sentence) * LN10, abs=1e-3)
    assert by_text["hello world"]["confidence"] == "0.9 0.8"
    assert by_text["hello there world"]["confidence"] == "0.6 0.7 0.8"


def test_rescore_nbest_says_when_weights_are_untuned(tmp_path, tiny_arpa):
    arpa = tiny_arpa
    tsv = tmp_path / "n.tsv"
    tsv.write_text("utt_id\trank\tam_score\tlm_score\ttext\nu1\t1\t-10\t-3\thello world\n", encoding="utf-8")
    res = run_cli(["rescore-nbest", "--ngram", str(arpa), str(tsv)])
    assert res.exit_code == 0 and "untuned default weights" in res.stderr and "tune-weights" in res.stderr
    res = run_cli(["rescore-nbest", "--ngram", str(arpa), "--lm-weight", "8", str(tsv)])
    assert res.exit_code == 0 and "untuned" not in res.stderr


# --- error messages that name the real problem ------------------------------------------------

def test_train_ngram_warns_about_ids(tmp_path):
    res = run_cli(["train-ngram", str(AMI / "dev" / "ref.txt"), "-o", str(tmp_path / "a.arpa")])
    assert res.exit_code == 0
    assert "looks like an utterance id" in res.stderr and "--ids" in res.stderr
    res = run_cli(["train-ngram", "--ids", str(AMI / "dev" / "ref.txt"), "-o", str(tmp_path / "b.arpa")])
    assert "utterance id" not in res.stderr
    plain = tmp_path / "plain.txt"
    plain.write_text("".join(line.split(None, 1)[1] for line in
                             (AMI / "dev" / "ref.txt").read_text(encoding="utf-8").splitlines(True)[:50]))
    res = run_cli(["train-ngram", "--discount-fallback", str(plain), "-o", str(tmp_path / "c.arpa")])
    assert res.exit_code == 0 and "utterance id" not in res.stderr


def test_nnlm_given_a_counts_file_or_a_tsv_says_so(tmp_path):
    counts = tmp_path / "u.counts"
    assert run_cli(["count-unigrams", "--text", "--ids", str(AMI / "dev" / "ref.txt"),
                    "-o", str(counts)]).exit_code == 0
    nbest = str(AMI / "dev" / "nbest.tsv")
    for model, needle in ((counts, "a counts file"), (nbest, "an N-best TSV")):
        res = run_cli(["rescore-nbest", "--nnlm", str(model), nbest])  # in-process: torch once
        assert res.exit_code == 2 and res.stdout == ""
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0] and "not a neural model file" in lines[0]
        assert "finetune-lm" in lines[0] and "unpickle" not in lines[0] and "pop from" not in lines[0]


def test_add_noise_names_the_missing_option(tmp_path):
    counts = tmp_path / "u.counts"
    assert run_cli(["count-unigrams", "--text", "--ids", str(AMI / "dev" / "ref.txt"),
                    "-o", str(counts)]).exit_code == 0
    proc = run_proc(["add-noise", "--vocab", str(counts), str(counts)])
    line = assert_one_line_error(proc, "missing --epsilon")
    assert "--vocab FILE" not in line  # it was given
    proc = run_proc(["add-noise", "--epsilon", "1", str(counts)])
    assert_one_line_error(proc, "missing --vocab")


@pytest.mark.parametrize("content, needle", [
    ("utt_id,rank,text\nu1,1,hello world\n", "import-nbest --from tsv"),
    ("u1 hello world\nu2 good bye\n", "--text"),
])
def test_csv_or_plain_text_given_as_nbest_points_to_the_fix(tmp_path, content, needle, tiny_arpa):
    path = tmp_path / "in.txt"
    path.write_text(content, encoding="utf-8")
    proc = run_proc(["rescore-nbest", "--ngram", str(tiny_arpa), str(path)])
    assert_one_line_error(proc, "in.txt:1", "header lacks", needle)
    res = run_cli(["count-unigrams", str(path)])  # the same reader, the same pointer
    assert res.exit_code == 2 and needle in res.stderr


# --- API: rescoring in-memory hypotheses ---------------------------------------------------

def test_api_score_hypotheses_equals_rescore_nbest_and_kenlm(tmp_path, tiny_arpa):
    import kenlm

    from asrpriv import api

    hyps = ["here we go welcome everybody", "here we go -pau- welcome every body", "so"]
    am = [-120.5, -118.25, -300.0]
    scored = api.score_hypotheses(hyps, acoustic=am, ngram=str(tiny_arpa), lm_weight=7.0,
                                  word_penalty=-0.5, drop_tokens="srilm")
    model = kenlm.Model(str(tiny_arpa))
    for h, a, s in zip(hyps, am, scored):
        words = [w for w in h.split() if w != "-pau-"]
        assert s.words == words and s.nnlm_score is None
        assert s.ngram_score == pytest.approx(model.score(" ".join(words)) * LN10, abs=1e-9)
        assert s.score == pytest.approx(a + 7.0 * s.ngram_score - 0.5 * len(words), abs=1e-9)
    tsv = tmp_path / "n.tsv"
    tsv.write_text("utt_id\trank\tam_score\ttext\n" + "".join(
        f"u{i}\t1\t{a}\t{h}\n" for i, (h, a) in enumerate(zip(hyps, am))), encoding="utf-8")
    res = run_cli(["rescore-nbest", "-q", "--ngram", str(tiny_arpa), "--lm-weight", "7",
                   "--word-penalty", "-0.5", "--drop-tokens", "srilm", str(tsv)])
    _cols, rows = parse_tsv(res.stdout)
    assert [float(r["score"]) for r in rows] == pytest.approx([s.score for s in scored], abs=1e-4)
    from asrpriv.errors import AsrprivError

    with pytest.raises(AsrprivError, match="ngram= and/or nnlm="):
        api.score_hypotheses(hyps)
    with pytest.raises(AsrprivError, match="acoustic has 1 values for 3"):
        api.score_hypotheses(hyps, acoustic=[0.0], ngram=str(tiny_arpa))


def test_stdin_import_failing_part_way_is_refused_downstream(tmp_path):
    """PATH '-' is copied once and checked whole before anything is written (issue 39; before,
    the failure came after the first row went out, behind an abort marker): nothing reaches
    the next step, the pipeline fails (exit 2, no counts)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    py = sys.executable
    out = tmp_path / "c.counts"
    cmd = (f"set -o pipefail; printf 'utt_id,rank,text\\nu1,1,a b\\nu1,1,c d\\n' | "
           f"{py} -m asrpriv import-nbest --from tsv - | {py} -m asrpriv count-unigrams -o {out}")
    proc = subprocess.run(cmd, shell=True, capture_output=True, env=env, executable="/bin/bash")
    err = proc.stderr.decode()
    assert proc.returncode == 2 and not out.exists()
    assert "<stdin>:3: duplicate rank 1" in err and "failed part-way" not in err
