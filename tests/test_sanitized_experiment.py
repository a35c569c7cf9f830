"""bin/sanitized-lm-experiment end to end on the bundled AMI data (slow: ~30 s)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import AMI, ROOT


@pytest.mark.slow
def test_experiment_writes_every_row(tmp_path):
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "asrpriv").write_text(f"#!/bin/sh\nexec {sys.executable} -m asrpriv \"$@\"\n")
    (shim / "asrpriv").chmod(0o755)
    env = dict(os.environ, PATH=f"{shim}:{os.environ['PATH']}", PYTHON=sys.executable,
               PYTHONPATH=str(ROOT / "src"))
    out = tmp_path / "out"
    subprocess.run([str(ROOT / "bin" / "sanitized-lm-experiment"), str(AMI), str(out)],
                   check=True, env=env, capture_output=True)
    rows = [l for l in (out / "results.md").read_text().splitlines() if l.startswith("| M")]
    assert len(rows) == 10  # M1, M2 x original, sanitized, rest, FMA, added
    assert (out / "M2_sanitized.classes").stat().st_size > 0
    assert all(row.rstrip(" |").split("|")[-1].strip() for row in rows)  # a MAPSSWE cell each
    # the adaptation split: 15% of the lines untransformed, the rest sanitized, disjoint
    adapt = (out / "adapt_text").read_text().splitlines()
    rest = (out / "rest_sanitized_text").read_text().splitlines()
    total = len((AMI / "train_text").read_text().splitlines())
    assert len(adapt) + len(rest) == total and abs(len(adapt) / total - 0.15) < 0.01
    assert not {l.split()[0] for l in adapt} & {l.split()[0] for l in rest}
    assert (out / "M1_fma.arpa").read_text().count("#privacy_history") <= 1
