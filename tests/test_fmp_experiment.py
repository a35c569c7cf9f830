"""The main job end to end on a tiny slice of the bundled AMI data (shell-level test)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from _table_helpers import dp_rows_with_few_draws, is_dp_row, rows_without_interval, table_rows
from asrpriv.reports.common import DATA_NAME
from conftest import AMI, ROOT

SCRIPT = ROOT / "bin" / "fmp-experiment"


def _env(**extra: str) -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env.update(PER_CLIENT="6", TRAIN_LIMIT="15000", ROUNDS="1", T_SWEEP="1", SIGMAS="1",
               EPSILONS="1", LAMBDAS="1", LM_WEIGHTS="4:8:2", WORD_PENALTIES="-1:0:1",
               DP_DRAWS="1", BOOTSTRAP="200",
               NNLM_ARGS="--emb-dim 32 --ffn-dim 64 --layers 1 --heads 2 --epochs 1 --vocab-size 2000")
    env.update(extra)
    return env


def _run(out: Path, **extra: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(["bash", str(SCRIPT), "--reduced", str(AMI), str(out)],
                          capture_output=True, text=True, env=_env(**extra), timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_fmp_experiment_tiny_slice(tmp_path):
    out = tmp_path / "out"
    proc = _run(out)
    results = (out / "results.md").read_text()
    for row in ("first-pass 1-best", "NNLM baseline (unadapted)", "FMP T=1", "sigma=1",
                "alpha=0 beta=0.75", "(1, 0)-DP", "In-domain control"):
        assert row in results, row
    assert results in proc.stdout
    assert (out / "wer_vs_rounds.png").stat().st_size > 1000
    assert (out / "wer_vs_epsilon.png").stat().st_size > 1000
    # every reported system was scored on the same evaluation utterances: 4-6 per client x 6 clients
    reports = {p.parent.name: json.loads(p.read_text()) for p in (out / "runs").glob("*/wer.json")}
    assert {r["ref_words"] for r in reports.values()} == {reports["baseline"]["ref_words"]}
    assert reports["baseline"]["sentences"] == 36
    # with bootstrap intervals, and DP rows compared with the no-DP row (as the paper's Table 4)
    assert reports["fmp-T1"]["bootstrap"]["resamples"] == 200
    assert reports["fmp-T1-dp1-draw1"]["compare"]["system_b"].endswith("fmp-T1-sigma0.1-b0/hyp.txt")
    # every relative change and significance cell names what it is measured against
    for line in results.splitlines():
        if line.startswith("| ") and not line.startswith("| system"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            for cell in (cells[2], cells[3]):
                assert not cell or " vs " in cell or "reference" in cell, line
            assert "%" not in cells[4] or " vs paper's " in cells[4], line
    assert "different first-pass recognizer" in results
    # the DP run's shared counts carry the ledger: epsilon per utterance, parallel over rounds
    dp_run = out / "runs" / "fmp-T1-dp1-draw1"
    noisy = (dp_run / "qbar-0.counts").read_text()
    assert "#noise=laplace" in noisy and "#epsilon=1" in noisy and "#units=" not in noisy
    assert "#privacy_history=" in noisy and "#partition=round0/" in noisy and "seed" not in noisy
    # DP rows use beta = 0 (an exact personal cache would break the per-round accounting), and
    # the clients' factors carry the history of the release they were made from
    factors = next((dp_run / "factors-0").glob("*.tsv")).read_text()
    assert "#beta=0\n" in factors and "#privacy_history=" in factors
    assert "beta=0" in results.split("Table 4")[1]
    # the tuning clients are excluded from the evaluation set
    eval_ids = {line.split()[0] for line in (out / "data" / "eval.ref").read_text().splitlines()}
    assert not any(i.startswith(("ES2011a", "IS1008a")) for i in eval_ids)
    # the weight grid's edge warning of tune-weights reaches the user, and the summary repeats it
    assert proc.stderr.count("tune-weights: warning: best word_penalty on the edge") >= 2
    assert "warnings of this run" in proc.stderr.split("scoring")[-1]
    assert "training the background NNLM" in proc.stderr and "epoch 1:" in proc.stderr

    # an unchanged rerun reuses everything and says so; same numbers (the bootstrap is seeded)
    again = _run(out)
    assert "recomputing" not in again.stderr and "training" not in again.stderr
    assert "reusing OUT/lm-background/nnlm.pt (same settings)" in again.stderr
    assert "reusing OUT/runs/fmp-T1-dp1-draw1/hyp.txt (same settings)" in again.stderr
    assert "tune-weights: warning: best word_penalty" in again.stderr   # replayed with the weights
    rerun = (out / "results.md").read_text()
    def timeless(text: str) -> list[str]:
        return [line for line in text.splitlines() if "Run time" not in line]
    assert timeless(rerun) == timeless(results)
    # a cached rerun does not pass its few seconds off as the computation's run time (issue 29):
    # OUT/runtime.tsv has one 'seconds<TAB>start<TAB>command' line per invocation, the report their sum
    parts = [line.split("\t") for line in (out / "runtime.tsv").read_text().splitlines()]
    assert len(parts) == 2 and all(p[0].isdigit() and p[1].isdigit() for p in parts)   # seconds, start
    assert parts[0][-1].endswith(f"bin/fmp-experiment --reduced {AMI} {out}") and "DP_DRAWS=1 " in parts[0][-1]
    total = sum(int(p[0]) for p in parts)
    assert f"Run time {total} s" in rerun and "the sum of the 2 parts" in rerun
    assert "the sum of" not in results and "reused from the cache" not in results
    # the data is named from DATA_DIR/SOURCE.txt; Table 3/4 say our T and the paper's T = 10
    assert "AMI text synthesized by flite, decoded by pocketsphinx 5.1.1 (synthetic speech)" in results
    assert "(ours T=1; paper 000's column T=10)" in results

    # a changed setting recomputes exactly the runs it enters, and says which setting changed
    changed = _run(out, DP_MAX_L1="5")
    assert ("recomputing OUT/runs/fmp-T1-dp1-draw1/hyp.txt: settings changed (max_l1: 15 -> 5)"
            in changed.stderr)
    assert "reusing OUT/runs/fmp-T1/hyp.txt (same settings)" in changed.stderr
    assert "reusing OUT/lm-background/nnlm.pt (same settings)" in changed.stderr
    counts = next((dp_run / "new-0").glob("*.counts")).read_text()
    assert "#max_l1=5" in counts and "#max_l1=15" not in counts
    assert "max_l1=5\n" in (dp_run / "run.key").read_text()
    assert "clipped to L1 <= 5 pseudo-counts" in (out / "results.md").read_text()


def test_fmp_experiment_help_lists_every_knob():
    proc = subprocess.run(["bash", str(SCRIPT), "--help"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0
    knobs = set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*):-", SCRIPT.read_text()))
    assert {"DP_MAX_L1", "NNLM_ARGS", "DP_DRAWS", "NOISE_SEED", "BOOTSTRAP"} <= knobs
    for knob in knobs:
        assert re.search(rf"^\s+{knob}=", proc.stderr, re.M), knob


@pytest.mark.slow  # the demo (make demo): ~3 min on an idle 2-core machine, ~9 min on a loaded one
def test_fmp_experiment_reduced_form_states_its_uncertainty(tmp_path):
    """`bin/fmp-experiment --reduced` with its own defaults (issue 29): every table row has a 95%
    interval, every DP row >= 3 noise draws at beta = 0, and the run time is recorded."""
    out = tmp_path / "out"
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["PYTHON"] = sys.executable
    for knob in set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*):-", SCRIPT.read_text())) - {"PYTHON"}:
        env.pop(knob, None)                                   # the recipe's defaults, not the caller's
    proc = subprocess.run(["bash", str(SCRIPT), "--reduced", str(AMI), str(out)],
                          capture_output=True, text=True, env=env, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = (out / "results.md").read_text()
    assert not rows_without_interval(results), rows_without_interval(results)
    dp = [row for row in table_rows(results) if is_dp_row(row)]
    assert len(dp) == 2 and not dp_rows_with_few_draws(results, 3), dp      # EPSILONS="1 0.1"
    assert "beta=0" in results.split("## Table 4")[1].splitlines()[0]
    for eps in ("1", "0.1"):
        for d in (1, 2, 3):
            assert "beta=0 " in (out / "runs" / f"fmp-T2-dp{eps}-draw{d}" / "settings.txt").read_text()
    assert DATA_NAME in results and "(ours T=2; paper 000's column T=10)" in results
    (seconds, _start, command), = [line.split("\t") for line in (out / "runtime.tsv").read_text().splitlines()]
    # the recorded command names every knob the environment set, PYTHON included (bin/lib/recipe.sh
    # recipe_command: the interpreter is part of what ran; the leakage and fl tests expect the same)
    assert command == f"PYTHON={sys.executable} bin/fmp-experiment --reduced {AMI} {out}"
    assert f"Run time {int(seconds)} s" in results and f"Made by `{command}`" in results
