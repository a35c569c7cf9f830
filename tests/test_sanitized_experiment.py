"""bin/sanitized-lm-experiment end to end on the bundled AMI data (slow: ~20 s)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import AMI, ROOT


@pytest.mark.slow
def test_experiment_writes_four_models(tmp_path):
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
    assert len(rows) == 4
    assert (out / "M2_sanitized.classes").stat().st_size > 0
