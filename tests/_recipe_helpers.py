"""Helpers of the recipes' stop-and-resume tests (bin/fl-finetune-experiment, bin/privacy-frontier)."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path


def stop_when(args: list[str], env: dict, ready) -> tuple[subprocess.CompletedProcess, float]:
    """Start the recipe ``args`` (``bash SCRIPT ...``), send SIGTERM to it (the bash process only,
    as `kill PID` does) as soon as ``ready()`` holds, and wait for it to end; returns the ended
    run and the seconds it took to end after the signal."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    deadline = time.monotonic() + 600
    while not ready():
        assert proc.poll() is None, f"ended before it could be stopped: {proc.communicate()[1][-3000:]}"
        assert time.monotonic() < deadline, "never ready"
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    stdout, stderr = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), time.monotonic() - sent


def round_models(run: Path) -> list[int]:
    """The t of every RUN/model-t.pt, sorted."""
    return sorted(int(p.stem[6:]) for p in run.glob("model-*.pt") if p.stem[6:].isdigit())


def uninterrupted_run(run_json: Path, run_dir: Path, env: dict) -> Path:
    """fl-rounds of the settings in ``run_json`` (a run directory's run.json), run afresh and
    uninterrupted into ``run_dir`` in a process of its own: the run a stopped and resumed one
    must equal, byte for byte (seeded)."""
    import sys

    code = ("import json, sys\n"
            "from asrpriv.federated.rounds import RoundSettings, run_rounds\n"
            "settings = json.load(open(sys.argv[1]))\n"
            "settings['run_dir'] = sys.argv[2]\n"
            "run_rounds(RoundSettings(**settings))\n")
    subprocess.run([sys.executable, "-c", code, str(run_json), str(run_dir)], env=env, check=True,
                   timeout=600)
    return run_dir
