"""``asrpriv confidence``: posteriors by hand, metrics against hand-worked cases and peers
(scikit-learn, brute force, real sclite), calibration files, the CLI on real AMI N-best lists,
bad input, and the pipe into ``finetune-lm --confidence``."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from asrpriv.confidence import metrics
from asrpriv.confidence.calibration import Calibration, fit_isotonic, read_calibration, write_calibration
from asrpriv.confidence.posteriors import agreement_matrices, softmax_posteriors, word_confidences
from conftest import AMI, assert_one_line_error, run_cli, run_proc

ADAPT = AMI / "adapt"


def _read_tsv(text: str) -> tuple[list[str], list[list[str]]]:
    lines = text.rstrip("\n").split("\n")
    return lines[0].split("\t"), [line.split("\t") for line in lines[1:]]


def _conf_by_row(text: str) -> list[tuple[str, str, list[float]]]:
    cols, rows = _read_tsv(text)
    iu, it, ic = cols.index("utt_id"), cols.index("text"), cols.index("confidence")
    return [(r[iu], r[it], [float(x) for x in r[ic].split()]) for r in rows]


@pytest.fixture(scope="module")
def adapt_slice(tmp_path_factory):
    """The first 40 utterances (20 hypotheses each) of the AMI adapt split, and their references."""
    d = tmp_path_factory.mktemp("slice")
    lines = open(ADAPT / "nbest.tsv", encoding="utf-8").read().split("\n")
    nbest = d / "nbest.tsv"
    nbest.write_text("\n".join(lines[:801]) + "\n", encoding="utf-8")
    ids = {line.split("\t")[0] for line in lines[1:801]}
    assert len(ids) == 40
    ref = d / "ref.txt"
    ref.write_text("".join(line for line in open(ADAPT / "ref.txt", encoding="utf-8")
                           if line.split()[0] in ids), encoding="utf-8")
    return nbest, ref


# ---------------------------------------------------------------- posteriors, by hand

HAND = ("utt_id\trank\tscore\ttext\n"
        "u1\t1\t0.0\ta b c\n"
        "u1\t2\t-1.0\ta x c\n"
        "u1\t3\t-2.0\ta b\n"
        "u2\t1\t-5.0\tyes\n")


def test_hand_made_nbest_word_posteriors():
    res = run_cli(["confidence", "--scale", "1"], input=HAND)
    assert res.exit_code == 0, res.stderr
    z = 1 + math.exp(-1) + math.exp(-2)
    p1, p2, p3 = 1 / z, math.exp(-1) / z, math.exp(-2) / z
    expect = [
        [1.0, p1 + p3, p1 + p2],  # "a b c": b shared with "a b", c with "a x c"
        [1.0, p2, p1 + p2],       # "a x c": x is its own
        [1.0, p1 + p3],           # "a b"
        [1.0],                    # a single hypothesis is certain
    ]
    got = _conf_by_row(res.stdout)
    assert [g[0] for g in got] == ["u1", "u1", "u1", "u2"]
    for (_u, _t, conf), exp in zip(got, expect):
        assert conf == pytest.approx(exp, abs=1e-6)
    # the scale sharpens: at S = 3 the 1-best's 'x'-free words move towards 1
    sharp = _conf_by_row(run_cli(["confidence", "--scale", "3"], input=HAND).stdout)
    z3 = 1 + math.exp(-3) + math.exp(-6)
    assert sharp[0][2][1] == pytest.approx((1 + math.exp(-6)) / z3, abs=1e-6)


def test_rows_keep_input_order_and_empty_hypotheses():
    tsv = ("utt_id\trank\tscore\ttext\tconfidence\textra\n"
           "u\t2\t-1.0\ta\t0.5\tx2\n"
           "u\t1\t0.0\t\t\tx1\n"
           "v\t1\t0.0\tb\t0.1\ty\n")
    res = run_cli(["confidence", "--scale", "1"], input=tsv)
    assert res.exit_code == 0, res.stderr
    cols, rows = _read_tsv(res.stdout)
    assert cols == ["utt_id", "rank", "score", "text", "confidence", "extra"]  # replaced in place
    assert [r[5] for r in rows] == ["x2", "x1", "y"]
    p2 = math.exp(-1) / (1 + math.exp(-1))
    assert float(rows[0][4]) == pytest.approx(p2, abs=1e-6)
    assert rows[1][3] == "" and rows[1][4] == "" and rows[2][4] == "1.000000"


def test_am_lm_total_uses_the_first_pass_weights():
    tsv = ("utt_id\trank\tam_score\tlm_score\ttext\n"
           "u\t1\t-10.0\t-2.0\tgo on\n"
           "u\t2\t-9.0\t-2.5\tgo\n")
    res = run_cli(["confidence", "--scale", "0.5", "--lm-weight", "2", "--word-penalty", "-0.3"], input=tsv)
    assert res.exit_code == 0, res.stderr
    t1, t2 = -10 + 2 * -2 - 0.3 * 2, -9 + 2 * -2.5 - 0.3 * 1
    p1 = 1 / (1 + math.exp(0.5 * (t2 - t1)))
    got = _conf_by_row(res.stdout)
    assert got[0][2] == pytest.approx([1.0, p1], abs=1e-6)
    assert got[1][2] == pytest.approx([1.0], abs=1e-6)
    assert "total am-lm" in res.stderr


def test_score_column_wins_in_auto_and_rank_prior_on_request():
    tsv = ("utt_id\trank\tam_score\tlm_score\tscore\ttext\n"
           "u\t1\t-10.0\t-2.0\t0.0\ta\n"
           "u\t2\t-9.0\t-2.5\t-2.0\tb\n")
    got = _conf_by_row(run_cli(["confidence", "--scale", "1"], input=tsv).stdout)
    assert got[0][2][0] == pytest.approx(1 / (1 + math.exp(-2)), abs=1e-6)
    rank_only = "utt_id\ttext\nu\ta\nu\tb\nu\tc\n"
    got = _conf_by_row(run_cli(["confidence", "--total", "rank", "--scale", "1"], input=rank_only).stdout)
    z = 1 + math.exp(-1) + math.exp(-2)
    assert [g[2][0] for g in got] == pytest.approx([1 / z, math.exp(-1) / z, math.exp(-2) / z], abs=1e-6)


def test_posteriors_sum_to_one_and_bounds_on_real_lists(adapt_slice):
    from asrpriv.io.nbest import NbestReader

    nbest, _ = adapt_slice
    reader = NbestReader(str(nbest))
    rng = np.random.default_rng(0)
    for utt in reader:
        totals = rng.normal(0, 5, len(utt.hyps))
        post = softmax_posteriors(totals, 0.7)
        assert post.sum() == pytest.approx(1.0, abs=1e-12)
        agree = agreement_matrices([h.words for h in utt.hyps])
        confs = word_confidences(agree, post)
        for h, (a, c) in enumerate(zip(agree, confs)):
            assert a.shape == (len(utt.hyps[h].words), len(utt.hyps))
            assert np.all(c >= post[h] - 1e-12) and np.all(c <= 1.0)
            # symmetric agreement: the number of matched word pairs is the same both ways
            for g in range(len(utt.hyps)):
                assert a[:, g].sum() == agree[g][:, h].sum()


# ---------------------------------------------------------------- metrics

def test_nce_hand_worked_and_sclite_clipping():
    conf = [0.9, 0.8, 0.3, 0.6]
    correct = [True, True, False, False]
    # n = 4, n_c = 2: H_max = 4 bits; H_conf = -(log2 .9 + log2 .8 + log2 .7 + log2 .4)
    #   = 0.152003 + 0.321928 + 0.514573 + 1.321928 = 2.310432 bits
    assert metrics.nce(np.array(conf), np.array(correct)) == pytest.approx((4 - 2.310432) / 4, abs=1e-6)
    # a certain wrong word costs -log2(1e-7) = 23.253497 bits (sclite's ceiling), not infinity
    v = metrics.nce(np.array([1.0, 1.0]), np.array([True, False]))
    assert v == pytest.approx((2 - (-math.log2(0.9999999) + 23.253497)) / 2, abs=1e-5)
    assert math.isnan(metrics.nce(np.array([0.5, 0.7]), np.array([True, True])))


def test_ece_hand_worked():
    conf = np.array([0.05, 0.15, 0.12, 0.95, 1.0])
    correct = np.array([False, True, False, True, True])
    # bins [0, .1): {.05} acc 0; [.1, .2): {.15, .12} mean .135 acc .5; [.9, 1]: {.95, 1} mean .975 acc 1
    assert metrics.ece(conf, correct) == pytest.approx((0.05 + 2 * 0.365 + 2 * 0.025) / 5, abs=1e-12)


def test_auc_against_sklearn_and_brute_force():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(3)
    for _ in range(5):
        conf = np.round(rng.random(300), 1)  # many ties
        correct = rng.random(300) < conf * 0.8 + 0.1
        ours = metrics.roc_auc(conf, correct)
        assert ours == pytest.approx(roc_auc_score(correct, conf), abs=1e-12)
        pos, neg = conf[correct], conf[~correct]
        brute = ((pos[:, None] > neg[None]).sum() + 0.5 * (pos[:, None] == neg[None]).sum()) / (pos.size * neg.size)
        assert ours == pytest.approx(brute, abs=1e-12)
    assert math.isnan(metrics.roc_auc(np.array([0.2, 0.3]), np.array([False, False])))


def test_word_labels_follow_sclite_alignment():
    # sclite prefers D + I to two substitutions: 'b c' vs 'c d' -> c is correct
    assert metrics.word_labels(["a", "b", "c"], ["a", "c", "d"]) == [True, True, False]
    assert metrics.word_labels(["A", "b"], ["a", "b", "x"]) == [True, True, False]
    assert metrics.word_labels([], ["x"]) == [False]


# ---------------------------------------------------------------- calibration

def test_calibration_fit_round_trip_monotone(tmp_path):
    from sklearn.isotonic import IsotonicRegression

    rng = np.random.default_rng(1)
    raw = rng.random(2000)
    correct = rng.random(2000) < raw ** 2
    cal = fit_isotonic(raw, correct, {"scale": 0.15})
    path = tmp_path / "cal.json"
    with open(path, "w") as f:
        write_calibration(f, cal)
    back = read_calibration(str(path))
    assert back.x == cal.x and back.y == cal.y and back.meta["scale"] == 0.15 and back.meta["words"] == 2000
    grid = np.linspace(-0.2, 1.2, 1401)
    ref = IsotonicRegression(increasing=True, y_min=0, y_max=1, out_of_bounds="clip").fit(raw, correct)
    assert np.allclose(back.apply(grid), ref.predict(grid), atol=1e-12)
    out = back.apply(grid)
    assert np.all(np.diff(out) >= 0) and out.min() >= 0 and out.max() <= 1
    # the map fixes calibration in-sample: ECE of the calibrated raw scores is ~0
    assert metrics.ece(back.apply(raw), correct) < 0.01 < metrics.ece(raw, correct)


@pytest.mark.parametrize("payload, needle", [
    ({"format": "other"}, "not a calibration file"),
    ({"format": "asrpriv-calibration/1", "x": [0, 1], "y": [0.8, 0.2]}, "non-decreasing"),
    ({"format": "asrpriv-calibration/1", "x": [0.5, 0.5], "y": [0.1, 0.2]}, "strictly increasing"),
    ({"format": "asrpriv-calibration/1", "x": [0, 1], "y": [0.1]}, "same length"),
])
def test_bad_calibration_file(tmp_path, payload, needle):
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps(payload))
    proc = run_proc(["confidence", "--calibration", str(cal)], input=HAND)
    assert_one_line_error(proc, "asrpriv confidence:", str(cal), needle)
    assert proc.stdout == b""


# ---------------------------------------------------------------- CLI on real AMI lists

def test_cli_on_adapt_slice(tmp_path, adapt_slice):
    nbest, ref = adapt_slice
    out, report, cal = tmp_path / "c.tsv", tmp_path / "r.json", tmp_path / "cal.json"
    res = run_cli(["confidence", str(nbest), "-o", str(out), "--reference", str(ref),
                   "--report", str(report), "--fit-calibration", str(cal)])
    assert res.exit_code == 0, res.stderr
    text = out.read_text(encoding="utf-8")
    cols, rows = _read_tsv(text)
    assert cols == ["utt_id", "client", "rank", "am_score", "lm_score", "text", "confidence"]
    assert len(rows) == 800
    # every row: one value per word in [0, 1]; rows are the input's rows, unchanged otherwise
    src = open(nbest, encoding="utf-8").read().split("\n")[1:801]
    for r, s in zip(rows, src):
        assert r[:-1] == s.split("\t")
        c = [float(x) for x in r[-1].split()]
        assert len(c) == len(r[5].split()) and all(0 <= v <= 1 for v in c)
    rep = json.loads(report.read_text())
    assert rep["utterances"] == 40 and rep["settings"]["scale"] == 0.15
    assert rep["settings"]["total"] == "am-lm" and rep["calibration_in_sample"] is True
    raw, calibrated = rep["raw"], rep["calibrated"]
    assert 0.5 < raw["auc"] < 1 and calibrated["nce"] > raw["nce"] and calibrated["ece"] < raw["ece"]
    # the output's rank-1 confidences are the calibrated ones; their metrics are the report's
    refs = {line.split()[0]: line.split()[1:] for line in open(ref, encoding="utf-8")}
    conf, lab = [], []
    for r in rows:
        if r[2] == "1":
            conf += [float(x) for x in r[-1].split()]
            lab += metrics.word_labels(refs[r[0]], r[5].split())
    assert metrics.nce(np.array(conf), np.array(lab)) == pytest.approx(calibrated["nce"], abs=1e-9)
    assert len(conf) == calibrated["words"] and sum(lab) == calibrated["correct"]
    # apply the fitted map elsewhere: same numbers as in-sample, from the file alone
    res2 = run_cli(["confidence", str(nbest), "--calibration", str(cal), "--reference", str(ref),
                    "--report", str(tmp_path / "r2.json")])
    assert res2.exit_code == 0, res2.stderr
    assert res2.stdout == text
    assert json.loads((tmp_path / "r2.json").read_text())["calibrated"] == calibrated
    # applied with another scale: a warning names it
    res3 = run_cli(["confidence", str(nbest), "--scale", "0.3", "--calibration", str(cal)])
    assert "scale 0.15 (now 0.3)" in res3.stderr


def _sclite_bin() -> str | None:
    for cand in ("/usr/lib/sctk/bin/sclite", shutil.which("sclite")):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


@pytest.mark.skipif(_sclite_bin() is None, reason="sctk not installed (bin/install-system-deps)")
@pytest.mark.parametrize("calibrate", [False, True])
def test_nce_agrees_with_sclite(tmp_path, adapt_slice, calibrate):
    """Real sclite on a CTM with our confidences (one stm segment per utterance)."""
    nbest, ref = adapt_slice
    args = ["confidence", str(nbest), "--reference", str(ref), "--report", str(tmp_path / "r.json")]
    if calibrate:
        args += ["--fit-calibration", str(tmp_path / "cal.json")]
    res = run_cli(args)
    assert res.exit_code == 0, res.stderr
    rep = json.loads((tmp_path / "r.json").read_text())["calibrated" if calibrate else "raw"]
    refs = {line.split()[0]: line.split()[1:] for line in open(ref, encoding="utf-8")}
    stm, ctm = [], []
    for utt, text, conf in _conf_by_row(res.stdout):
        if utt in {s.split()[0] for s in stm}:
            continue  # rank-1 rows come first in this file
        stm.append(f"{utt} 1 spk 0.00 100.00 {' '.join(refs[utt])}\n")
        ctm += [f"{utt} 1 {1 + 2 * i:.2f} 1.00 {w} {c:.6f}\n" for i, (w, c) in enumerate(zip(text.split(), conf))]
    (tmp_path / "ref.stm").write_text("".join(sorted(stm)))
    (tmp_path / "hyp.ctm").write_text("".join(sorted(ctm, key=lambda s: (s.split()[0], float(s.split()[2])))))
    proc = subprocess.run([_sclite_bin(), "-r", str(tmp_path / "ref.stm"), "stm", "-h",
                           str(tmp_path / "hyp.ctm"), "ctm", "-o", "rsum", "stdout"],
                          capture_output=True, text=True, check=True)
    m = re.search(r"\| Sum\s*\|\s*(\d+)\s+(\d+)\s*\|\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+).*\|\s*(-?[\d.]+)\s*\|",
                  proc.stdout)
    assert m, proc.stdout
    corr, sub, _del, ins = map(int, m.groups()[2:6])
    assert corr == rep["correct"] and corr + sub + ins == rep["words"]
    assert float(m.group(7)) == pytest.approx(rep["nce"], abs=6e-4)  # sclite prints 3 decimals


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("content, args, needles", [
    ("utt_id\trank\ttext\nu\t1\ta b\n", [], ["<stdin>:1", "no score column", "--total rank"]),
    ("utt_id\tam_score\ttext\nu\t-1\ta\n", ["--total", "score"], ["needs a 'score' column"]),
    ("utt_id\tscore\ttext\nu\t-1\ta\nu\tnan\tb\n", [], ["<stdin>:3", "finite"]),
    ("utt_id\tscore\ttext\nu\t-1\ta\nu\tinf\tb\n", [], ["<stdin>:3", "finite"]),
    ("utt_id\tscore\ttext\n", [], ["empty input"]),
    ("utt_id\tscore\ttext\nu\t-1\ta\n", ["--scale", "0"], ["--scale must be a positive"]),
    ("utt_id\tscore\ttext\nu\t-1\ta\n", ["--report", "r.json"], ["--report needs --reference"]),
])
def test_bad_input_one_line_error(tmp_path, content, args, needles):
    proc = run_proc(["confidence", *args, "-o", str(tmp_path / "out.tsv")], input=content, cwd=tmp_path)
    assert_one_line_error(proc, "asrpriv confidence:", *needles)
    assert not (tmp_path / "out.tsv").exists()


def test_reference_missing_an_utterance(tmp_path, adapt_slice):
    nbest, ref = adapt_slice
    lines = ref.read_text().splitlines(keepends=True)
    short = tmp_path / "short.txt"
    short.write_text("".join(lines[:10] + lines[11:]))
    missing = lines[10].split()[0]
    out = tmp_path / "out.tsv"
    proc = run_proc(["confidence", str(nbest), "--reference", str(short), "-o", str(out)])
    assert_one_line_error(proc, str(short), f"no reference for utterance '{missing}'")
    assert not out.exists()


def test_help_imports_nothing_heavy():
    code = ("import sys, contextlib, io\nfrom asrpriv.cli import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try: cli.main(['confidence', '--help'], standalone_mode=False)\n"
            "    except SystemExit: pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'sklearn', 'torch', 'scipy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- into finetune-lm

def test_pipe_into_finetune_lm_token_confidence(tmp_path, adapt_slice):
    torch = pytest.importorskip("torch")
    from asrpriv.nnlm import modelfile

    nbest, _ = adapt_slice
    text = tmp_path / "train.txt"
    rows = open(nbest, encoding="utf-8").read().split("\n")[1:]
    text.write_text("\n".join(r.split("\t")[5] for r in rows if r) + "\n")
    tiny = tmp_path / "tiny.pt"
    run_proc(["finetune-lm", "--train", str(text), "-o", str(tiny), "--epochs", "1", "-s", "1", "-q",
              "--emb-dim", "16", "--ffn-dim", "32", "--layers", "1", "--heads", "2", "--min-count", "1"],
             check=True)
    py = f"{sys.executable} -m asrpriv"
    deltas = {}
    for mode in ("token", "none"):
        delta = tmp_path / f"{mode}.delta.pt"
        cmd = (f"{py} confidence {nbest} | {py} finetune-lm --init {tiny} --train - --recipe client-001 "
               f"--confidence {mode} -s 1 -o {tmp_path / (mode + '.pt')} --delta-out {delta}")
        proc = subprocess.run(cmd, shell=True, capture_output=True, text=True,
                              env={**os.environ, "OMP_NUM_THREADS": "1"})
        assert proc.returncode == 0, proc.stderr
        assert f"confidence {mode}" in proc.stderr and "40 training sentences" in proc.stderr
        deltas[mode] = modelfile.read_model_file(str(delta))
    n_words = sum(len(r.split("\t")[5].split()) for r in rows if r and r.split("\t")[2] == "1")
    assert deltas["token"]["weight"] == n_words
    # the confidences changed the update (token weights < 1 scale the gradients)
    diff = max(float((deltas["token"]["state_dict"][k] - deltas["none"]["state_dict"][k]).abs().max())
               for k in deltas["none"]["state_dict"])
    assert diff > 1e-6
    assert torch is not None
