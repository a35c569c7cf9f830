"""asrpriv.nnlm.runtime: thread count, OpenMP wait, device check (one place for every torch step)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from asrpriv.errors import AsrprivError
from asrpriv.nnlm import runtime
from conftest import ROOT


def test_quiet_openmp_wait_sets_a_short_spin_unless_the_user_chose():
    env: dict = {}
    assert runtime.quiet_openmp_wait(env) and env == {"GOMP_SPINCOUNT": runtime.SPINCOUNT}
    for user in ({"GOMP_SPINCOUNT": "300000"}, {"OMP_WAIT_POLICY": "ACTIVE"}):
        env = dict(user)
        assert not runtime.quiet_openmp_wait(env) and env == user  # the user's choice stands


def test_choose_threads_order(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert runtime.choose_threads(5) == 5 and runtime.choose_threads(0) == 3
    monkeypatch.delenv("OMP_NUM_THREADS")
    want = max(1, min(len(os.sched_getaffinity(0)), runtime.MAX_DEFAULT_THREADS))
    assert runtime.choose_threads(0) == want
    monkeypatch.setenv("OMP_NUM_THREADS", "zero")  # not a count: ignored
    assert runtime.choose_threads(0) == want


def test_cli_sets_the_spin_before_torch_loads():
    """A step sees GOMP_SPINCOUNT in its environment before torch is imported (libgomp reads it
    once), and a user's OMP_WAIT_POLICY is left alone."""
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    env["PYTHONPATH"] = str(ROOT / "src")
    probe = ("import os, sys; from asrpriv.cli import main; sys.argv = ['asrpriv', '--version'];"
             "\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
             "print('torch' in sys.modules, os.environ.get('GOMP_SPINCOUNT'))")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert out.stdout.split()[-2:] == ["False", runtime.SPINCOUNT], out.stdout + out.stderr
    out = subprocess.run([sys.executable, "-c", probe], env={**env, "OMP_WAIT_POLICY": "PASSIVE"},
                         capture_output=True, text=True)
    assert out.stdout.split()[-2:] == ["False", "None"], out.stdout + out.stderr


def test_check_device():
    runtime.check_device("cpu")
    with pytest.raises(AsrprivError, match="device must be cpu or cuda"):
        runtime.check_device("tpu")
