"""bin/leakage-audit (paper 004's audit, issue 18) end to end on a tiny slice of AMI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import AMI, ROOT


@pytest.mark.slow  # ~2-4 minutes on the shared 2 cores: about 15 processes that import torch and sklearn
def test_leakage_audit_tiny_slice(tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = f"{ROOT / 'src'}{os.pathsep}{env.get('PYTHONPATH', '')}"
    env["PYTHON"] = sys.executable
    env.setdefault("OMP_NUM_THREADS", "1")
    proc = subprocess.run(["bash", str(ROOT / "bin" / "leakage-audit"), "--tiny", str(AMI), str(out)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = (out / "results.md").read_text()
    assert results in proc.stdout
    for needle in ("Tables 4.8 / 4.9", "Method 2 (constrained)", "Table 4.12", "gender grouping", "leakage against DP noise",
                   "epsilon = 1", "z = 1"):
        assert needle in results, needle
    assert (out / "leakage_vs_noise.png").stat().st_size > 1000
    # items: 4 subsets of each of 6 speakers, 3 women and 3 men; gender = the id's first letter
    labels = [line.split("\t") for line in (out / "data" / "labels.tsv").read_text().splitlines()[1:]]
    assert len(labels) == 24 and sorted(l[2] for l in labels).count("F") == 12
    assert all(item.startswith(spk + "_") and spk[0] == g for item, spk, g, _ in labels)
    # one delta per item, audited per layer; the constrained clusters have size 4 (004 Method 2)
    assert len(list((out / "deltas-e1").glob("*.delta.pt"))) == 24
    rep = json.loads((out / "audit" / "e1-emb" / "constrained" / "report.json").read_text())
    assert rep["items"] == 24 and sum(int(k) * v for k, v in rep["sizes"].items()) == 24
    assert rep["layer"] == "embedding.*" and "rank" in rep and "gender" in rep["probe"]
    random_rep = json.loads((out / "audit" / "e1-emb" / "random" / "report.json").read_text())
    assert random_rep["labels"]["speaker"]["purity"] <= 1.0
    # the noised deltas carry their Gaussian release
    noisy = json.loads((out / "audit" / "dp-z1" / "constrained" / "report.json").read_text())
    assert noisy["items"] == 24
