"""score-wer: NeMo manifests, sclite stm/ctm (checked against the installed sclite), --subset
(agreeing with tune-weights), and bootstrap intervals against an independent computation."""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import shutil
import subprocess

import numpy as np
import pytest

from conftest import AMI, assert_one_line_error, run_cli, run_proc
from asrpriv.wer.bootstrap import bootstrap, resample_indices
from asrpriv.wer.sclite_time import count_optional

SCLITE = next((p for p in ("/usr/lib/sctk/bin/sclite", shutil.which("sclite") or "")
               if p and os.access(p, os.X_OK)), None)
needs_sclite = pytest.mark.skipif(SCLITE is None, reason="sctk's sclite not installed")


def score_json(*args):
    res = run_cli(["score-wer", "-q", "--format", "json", *args])
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


# ------------------------------------------------------------------ NeMo manifests

def test_nemo_manifest_ref_and_hyp(tmp_path):
    m = tmp_path / "pred.json"
    m.write_text("\n".join(json.dumps(e) for e in [
        {"audio_filepath": "a/u1.wav", "text": "a b c", "pred_text": "a x c"},
        {"audio_filepath": "a/u2.flac", "text": "d e", "pred_text": "d e f"}]) + "\n")
    out = score_json("--ref", str(m), "--hyp", str(m))
    assert (out["substitutions"], out["deletions"], out["insertions"], out["ref_words"]) == (1, 0, 1, 5)
    k = tmp_path / "ref.txt"
    k.write_text("u1 a b c\nu2 d e\n")
    assert score_json("--ref", str(k), "--hyp", str(m))["errors"] == 2
    m.write_text('{"audio_filepath": "a/u1.wav", "text": "a"}\n')
    assert_one_line_error(run_proc(["score-wer", "--ref", str(k), "--hyp", str(m)]), f"{m}:1:", "pred_text")


# ------------------------------------------------------------------ stm / ctm

STM = """;; test
f1 A spk1 0.00 2.00 hello (uh) world
f1 A spk1 2.00 4.00 this is %HESITATION a test
f1 A spk2 4.00 6.00 IGNORE_TIME_SEGMENT_IN_SCORING
f1 A spk2 6.00 8.00 <o,f0,male> good (um) bye now
f2 A spk3 1.00 2.00 a b
f2 A spk3 4.00 5.00 c d
"""
CTM = """f1 A 0.10 0.30 hello 0.9
f1 A 0.50 0.30 uh
f1 A 1.20 0.30 world
f1 A 2.10 0.30 this
f1 A 2.50 0.30 is
f1 A 3.00 0.30 a
f1 A 3.50 0.30 toast
f1 A 4.50 0.30 junk
f1 A 6.20 0.30 good
f1 A 6.80 0.30 bye
f1 A 8.50 0.30 extra
f2 A 0.10 0.20 x1
f2 A 1.10 0.20 a
f2 A 2.20 0.20 x2
f2 A 4.10 0.20 c
f2 A 4.50 0.20 d
f2 A 5.20 0.20 x6
"""


def test_stm_ctm_by_hand(tmp_path):
    (tmp_path / "r.stm").write_text(STM)
    (tmp_path / "h.ctm").write_text(CTM)
    out = score_json("--ref", str(tmp_path / "r.stm"), "--hyp", str(tmp_path / "h.ctm"))
    # f1: (uh)~uh S, test~toast S, %hesitation D, (um) D, now~extra S (a word after the last
    # segment joins it), junk dropped (ignored region); f2: x1 I, b D, x2 I (next segment), x6 I
    assert (out["substitutions"], out["deletions"], out["insertions"]) == (3, 3, 3)
    assert out["ref_words"] == 16 and sorted(out["speakers"]) == ["spk1", "spk2", "spk3"]
    d = score_json("--ref", str(tmp_path / "r.stm"), "--hyp", str(tmp_path / "h.ctm"), "-D")
    # -D: (uh) matches uh, (um) may vanish
    assert (d["substitutions"], d["deletions"], d["insertions"]) == (2, 2, 3)


def _sclite_sum(tmp_path, ref, hyp, *flags):
    proc = subprocess.run([SCLITE, "-r", ref, "stm", "-h", hyp, "ctm", *flags, "-o", "rsum", "stdout"],
                          capture_output=True, text=True, check=True)
    m = re.search(r"\|\s*Sum(?:/Avg)?\s*\|\s*(\d+)\s+(\d+)\s*\|\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", proc.stdout)
    snt, wrd = int(m.group(1)), int(m.group(2))
    # rsum prints counts: Corr Sub Del Ins
    return snt, wrd, *(int(float(x)) for x in m.groups()[2:])


@needs_sclite
@pytest.mark.parametrize("seed", [7, 8, 10])
@pytest.mark.parametrize("flags", [(), ("-D",)])
def test_stm_ctm_agrees_with_sclite(tmp_path, flags, seed):
    # abutting segments and midpoints exactly on a boundary included (seed 8 has them)
    rng = random.Random(seed)
    vocab = ["a", "b", "c", "d", "e", "uh"]
    stm, ctm = [], []
    for f in ("fa", "fb"):
        t = 0.0
        for _seg in range(12):
            t += rng.choice([0.0, 0.5])
            ref = [rng.choice(vocab) for _ in range(rng.randint(1, 6))]
            ref = [f"({w})" if w == "uh" else w for w in ref]
            end = t + 3.0
            if rng.random() < 0.1:
                stm.append(f"{f} A spk{f}{rng.randint(1, 2)} {t:.2f} {end:.2f} IGNORE_TIME_SEGMENT_IN_SCORING")
            else:
                stm.append(f"{f} A spk{f}{rng.randint(1, 2)} {t:.2f} {end:.2f} {' '.join(ref)}")
            for _w in range(rng.randint(0, 7)):
                b = t - 0.4 + rng.random() * 3.6
                ctm.append((f, b, rng.choice(vocab)))
            t = end
    ctm.sort()
    (tmp_path / "r.stm").write_text("\n".join(stm) + "\n")
    (tmp_path / "h.ctm").write_text("".join(f"{f} A {max(b, 0):.2f} 0.10 {w}\n" for f, b, w in ctm))
    out = score_json("--ref", str(tmp_path / "r.stm"), "--hyp", str(tmp_path / "h.ctm"), *flags)
    snt, wrd, corr, sub, dele, ins = _sclite_sum(tmp_path, str(tmp_path / "r.stm"), str(tmp_path / "h.ctm"),
                                                 *flags)
    assert (out["sentences"], out["ref_words"], out["correct"], out["substitutions"], out["deletions"],
            out["insertions"]) == (snt, wrd, corr, sub, dele, ins)


def test_count_optional_brute_force():
    """Against an exhaustive search over which optional words are dropped, then sclite's DP."""
    from asrpriv.wer.alignment import sclite_align, counts_of

    rng = random.Random(3)
    for _ in range(300):
        ref = [rng.choice("abc") for _ in range(rng.randint(0, 5))]
        opt = [rng.random() < 0.4 for _ in ref]
        hyp = [rng.choice("abc") for _ in range(rng.randint(0, 5))]
        best = None
        idx = [i for i, o in enumerate(opt) if o]
        for keep in itertools.product([0, 1], repeat=len(idx)):
            drop = {i for i, k in zip(idx, keep) if not k}
            r = [w for i, w in enumerate(ref) if i not in drop]
            s, d, i_ = counts_of(sclite_align(r, hyp))
            # a dropped optional word costs a deletion (3) but is no error
            key = (4 * s + 3 * (d + i_ + len(drop)), s + d + i_)
            if best is None or key < best:
                best = key
        s, d, i_ = count_optional(ref, opt, hyp)
        errors = s + d + i_
        assert errors == best[1]


def test_stm_errors_are_located(tmp_path):
    (tmp_path / "r.stm").write_text("f1 A s 0.0 1.0 a\nf1 A s x 2.0 b\n")
    (tmp_path / "h.ctm").write_text("f1 A 0.1 0.1 a\n")
    assert_one_line_error(run_proc(["score-wer", "--ref", str(tmp_path / "r.stm"), "--hyp", str(tmp_path / "h.ctm")]),
                          f"{tmp_path / 'r.stm'}:2:", "begin")
    (tmp_path / "r.stm").write_text("f1 A s 0.0 1.0 a\n")
    (tmp_path / "h.ctm").write_text("f1 A 0.1 0.1 a\nf9 A 0.1 0.1 a\n")
    assert_one_line_error(run_proc(["score-wer", "--ref", str(tmp_path / "r.stm"), "--hyp", str(tmp_path / "h.ctm")]),
                          f"{tmp_path / 'h.ctm'}:2:", "f9")


# ------------------------------------------------------------------ --subset

def test_subset_agrees_with_tune_weights(tmp_path):
    """tune-weights' first-pass WER on a part of the N-best = score-wer --subset on its 1-best."""
    lines = (AMI / "dev" / "nbest.tsv").read_text().splitlines()
    cols = lines[0].split("\t")
    utts = []
    part = [lines[0]]
    for line in lines[1:]:
        u = line.split("\t")[0]
        if u not in utts:
            if len(utts) == 40:
                break
            utts.append(u)
        part.append(line)
    nb = tmp_path / "part.tsv"
    nb.write_text("\n".join(part) + "\n")
    res = run_cli(["tune-weights", "-q", str(nb), "-r", str(AMI / "dev" / "ref.txt"),
                   "--lm-weights", "1", "--nnlm-weights", "0", "--word-penalties", "0"])
    assert res.exit_code == 0, res.stderr
    meta = dict(line[1:].split("=", 1) for line in res.stdout.splitlines() if line.startswith("#"))
    ir, it = cols.index("rank"), cols.index("text")
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("".join(f"{r.split(chr(9))[0]} {r.split(chr(9))[it]}\n" for r in part[1:]
                           if r.split("\t")[ir] == "1"))
    out = score_json("--ref", str(AMI / "dev" / "ref.txt"), "--hyp", str(hyp), "--subset")
    assert out["sentences"] == 40 and out["missing_hyp"] == []
    assert f"{out['wer']:.4f}" == meta["first_pass_wer"]
    full = score_json("--ref", str(AMI / "dev" / "ref.txt"), "--hyp", str(hyp))
    assert full["sentences"] > 40 and full["wer"] > out["wer"]  # the rest count as deletions


# ------------------------------------------------------------------ bootstrap

def test_bootstrap_matches_an_independent_resampling():
    rng = random.Random(5)
    errs = [rng.randint(0, 5) for _ in range(50)]
    errs_b = [max(0, e + rng.randint(-2, 2)) for e in errs]
    words = [rng.randint(1, 12) for _ in range(50)]
    res = bootstrap(errs, words, 400, 0.9, seed=11, errors_b=errs_b)
    draws = np.random.default_rng(11).integers(0, 50, size=(400, 50))
    wer, diff = [], []
    for row in draws:  # plain Python sums per resample
        n = sum(words[i] for i in row)
        wer.append(100.0 * sum(errs[i] for i in row) / n)
        diff.append(100.0 * (sum(errs[i] for i in row) - sum(errs_b[i] for i in row)) / n)
    for values, lo, hi in ((wer, res.wer_low, res.wer_high), (diff, res.diff_low, res.diff_high)):
        s = sorted(values)
        # numpy's linear percentile, by hand: position p (B - 1)
        def q(p):
            x = p * (len(s) - 1)
            k = int(x)
            return s[k] + (x - k) * (s[min(k + 1, len(s) - 1)] - s[k])
        assert lo == pytest.approx(q(0.05), abs=1e-9) and hi == pytest.approx(q(0.95), abs=1e-9)
    assert res.wer == pytest.approx(100.0 * sum(errs) / sum(words))


def test_bootstrap_blocks_draw_the_same_stream(monkeypatch):
    import asrpriv.wer.bootstrap as bs

    one = np.concatenate(list(resample_indices(np.random.default_rng(3), 7, 50)))
    monkeypatch.setattr(bs, "BLOCK", 7 * 4)  # blocks of 4 rows
    blocks = list(bs.resample_indices(np.random.default_rng(3), 7, 50))
    assert len(blocks) == 13 and np.array_equal(np.concatenate(blocks), one)


def test_bootstrap_two_units_enumerated():
    # units: (1 error, 2 words), (0 errors, 2 words): resamples give WER 50, 25 or 0 with
    # probabilities 1/4, 1/2, 1/4; a 50% interval is then [0..25, 25..50] -> exactly 25 both ends
    # up to the draws; check the support and that a 99% interval spans [0, 50]
    res = bootstrap([1, 0], [2, 2], 4000, 0.99, seed=2)
    assert (res.wer_low, res.wer_high) == (0.0, 50.0)
    res = bootstrap([1, 0], [2, 2], 4000, 0.4, seed=2)
    assert (res.wer_low, res.wer_high) == (25.0, 25.0)


def test_bootstrap_cli_speakers_and_compare():
    ref, hyp = str(AMI / "dev" / "ref.txt"), str(AMI / "dev" / "decoder_1best.txt")
    args = ["--ref", ref, "--hyp", hyp, "--bootstrap", "200", "--seed", "4"]
    a = score_json(*args)["bootstrap"]
    assert a == score_json(*args)["bootstrap"]  # the seed repeats it
    assert a["unit"] == "utterance" and a["wer_low"] < a["wer"] < a["wer_high"]
    s = score_json(*args, "--bootstrap-unit", "speaker", "--utt2spk", str(AMI / "dev" / "utt2spk"))["bootstrap"]
    assert s["unit"] == "speaker" and s["units"] == 8
    c = score_json(*args, "--compare", hyp)["bootstrap"]
    assert (c["diff"], c["diff_low"], c["diff_high"]) == (0.0, 0.0, 0.0)
    text = run_cli(["score-wer", "-q", *args]).stdout
    assert "Bootstrap 95% percentile intervals (200 resamples of" in text
    assert_one_line_error(run_proc(["score-wer", *args, "--bootstrap-unit", "speaker"]), "--utt2spk")
