"""Shared fixtures: the bundled data, and ways to run a step in-process or as a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

try:  # hypothesis profiles, chosen by ASRPRIV_HYPOTHESIS_PROFILE: "default" (`make test`; hypothesis'
    # usual 100 examples, no deadline: the machine is shared) and "long" (`make test-all`, 10x);
    # tests/test_fuzz_inputs.py runs an eighth of max_examples per step and input role
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("default", max_examples=100, deadline=None)
    _hypothesis_settings.register_profile("long", max_examples=1000, deadline=None)
    _hypothesis_settings.load_profile(os.environ.get("ASRPRIV_HYPOTHESIS_PROFILE", "default"))
except ImportError:  # hypothesis is a test extra; tests that need it import it themselves
    pass

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data"
AMI = DATA / "ami"
LIBRI = DATA / "librispeech-hyporadise"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


def run_cli(args: list[str], input: str | bytes | None = None):
    """Run ``asrpriv ARGS`` in-process with click's CliRunner; returns the click Result.

    stdout and stderr are kept apart (``result.stdout`` / ``result.stderr``).
    """
    from asrpriv.cli import cli

    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 always keeps them apart
        runner = CliRunner()
    return runner.invoke(cli, args, input=input, catch_exceptions=False)


def run_proc(args: list[str], input: str | bytes | None = None, check: bool = False,
             **kwargs) -> subprocess.CompletedProcess:
    """Run ``python -m asrpriv ARGS`` as a real process (pipes, exit codes, stdin)."""
    if isinstance(input, str):
        input = input.encode()
    env = dict(os.environ)
    env.setdefault("PYTHONHASHSEED", "0")
    proc = subprocess.run([sys.executable, "-m", "asrpriv", *args], input=input,
                          capture_output=True, env=env, **kwargs)
    if check and proc.returncode != 0:
        raise AssertionError(f"asrpriv {' '.join(args)} failed ({proc.returncode}):\n"
                             f"{proc.stderr.decode(errors='replace')}")
    return proc


def assert_one_line_error(proc, *needles: str, code: int = 2) -> str:
    """A user error: exit ``code``, exactly one stderr line, no traceback, naming ``needles``."""
    stderr = proc.stderr.decode() if isinstance(proc.stderr, bytes) else proc.stderr
    assert proc.returncode == code, f"exit {proc.returncode}, stderr: {stderr}"
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one stderr line, got: {stderr!r}"
    assert "Traceback" not in stderr
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    return lines[0]
