"""The main job end to end on a tiny slice of the bundled AMI data (shell-level test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import AMI, ROOT


def test_fmp_experiment_tiny_slice(tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env.update(PER_CLIENT="6", TRAIN_LIMIT="15000", ROUNDS="1", T_SWEEP="1", SIGMAS="1",
               EPSILONS="1", LAMBDAS="1", LM_WEIGHTS="4:8:2", WORD_PENALTIES="-1:0:1",
               NNLM_ARGS="--emb-dim 32 --ffn-dim 64 --layers 1 --heads 2 --epochs 1 --vocab-size 2000")
    proc = subprocess.run(["bash", str(ROOT / "bin" / "fmp-experiment"), "--reduced", str(AMI), str(out)],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = (out / "results.md").read_text()
    for row in ("first-pass 1-best", "baseline (NNLM, unadapted)", "FMP T=1", "sigma=1",
                "alpha=0 beta=0.75", "(1, 0)-DP", "In-domain control"):
        assert row in results, row
    assert results in proc.stdout
    assert (out / "wer_vs_rounds.png").stat().st_size > 1000
    assert (out / "wer_vs_epsilon.png").stat().st_size > 1000
    # every reported system was scored on the same evaluation utterances: 4-6 per client x 6 clients
    reports = {p.parent.name: json.loads(p.read_text()) for p in (out / "runs").glob("*/wer.json")}
    assert {r["ref_words"] for r in reports.values()} == {reports["baseline"]["ref_words"]}
    assert reports["baseline"]["sentences"] == 36
    # the DP run's shared counts carry the ledger: epsilon per utterance, parallel over rounds
    noisy = (out / "runs" / "fmp-T1-dp1" / "qbar-0.counts").read_text()
    assert "#noise=laplace" in noisy and "#epsilon=1" in noisy and "#units=" not in noisy
    assert "#privacy_history=" in noisy and "#partition=round0/" in noisy and "seed" not in noisy
    # DP rows use beta = 0 (an exact personal cache would break the per-round accounting), and
    # the clients' factors carry the history of the release they were made from
    factors = next((out / "runs" / "fmp-T1-dp1" / "factors-0").glob("*.tsv")).read_text()
    assert "#beta=0\n" in factors and "#privacy_history=" in factors
    assert "beta=0" in results.split("Table 4")[1]
    # the tuning clients are excluded from the evaluation set
    eval_ids = {line.split()[0] for line in (out / "data" / "eval.ref").read_text().splitlines()}
    assert not any(i.startswith(("ES2011a", "IS1008a")) for i in eval_ids)
