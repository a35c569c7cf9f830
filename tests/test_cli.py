"""The command-line surface: lazy loading, --help everywhere, --version, error manners."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from asrpriv.cli import COMMANDS
from conftest import assert_one_line_error, run_cli, run_proc

HEAVY = ("torch", "numpy", "scipy")


def _modules_after(code: str) -> set[str]:
    probe = f"""
import sys, json, contextlib, io
{code}
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_group_help_imports_no_heavy_module():
    code = """
from asrpriv.cli import cli
with contextlib.redirect_stdout(io.StringIO()):
    try:
        cli.main(['--help'], standalone_mode=False)
    except SystemExit:
        pass
"""
    assert _modules_after(code) == set()


@pytest.mark.parametrize("step", sorted(COMMANDS))
def test_step_help_imports_no_heavy_module(step):
    code = f"""
from asrpriv.cli import cli
with contextlib.redirect_stdout(io.StringIO()) as buf:
    try:
        cli.main([{step!r}, '--help'], standalone_mode=False)
    except SystemExit:
        pass
assert 'Usage:' in buf.getvalue(), buf.getvalue()
"""
    assert _modules_after(code) == set()


@pytest.mark.parametrize("step", sorted(COMMANDS))
def test_every_step_has_help_with_common_flags(step):
    result = run_cli([step, "--help"])
    assert result.exit_code == 0, result.output
    assert "--quiet" in result.stdout and "--verbose" in result.stdout


def test_version_and_python_m():
    from asrpriv import __version__

    proc = run_proc(["--version"], check=True)
    assert __version__ in proc.stdout.decode()


def test_unknown_step_is_usage_error():
    proc = run_proc(["no-such-step"])
    assert proc.returncode == 2


def test_missing_file_is_one_line_error():
    proc = run_proc(["count-unigrams", "/nonexistent/nbest.tsv"])
    assert_one_line_error(proc, "asrpriv count-unigrams:", "/nonexistent/nbest.tsv")


def test_broken_pipe_is_quiet(tmp_path):
    big = tmp_path / "big.txt"
    big.write_text("".join(f"w{i} w{i + 1}\n" for i in range(200000)))
    cmd = f"{sys.executable} -m asrpriv count-unigrams --text {big} | head -1"
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True)
    assert "Traceback" not in proc.stderr
    assert proc.stdout.startswith("#format=")


@pytest.mark.parametrize("args, needles", [
    (["rescore-nbset"], ["asrpriv:", "no such step 'rescore-nbset'", "did you mean 'rescore-nbest'"]),
    (["rescore-nbest", "--ngrm", "x"], ["asrpriv rescore-nbest:", "--ngrm", "--ngram"]),
    (["score-wer"], ["asrpriv score-wer:", "Missing option '--ref'"]),
    (["score-wer", "--format", "xml", "--ref", "a", "--hyp", "b"],
     ["asrpriv score-wer:", "'xml' is not one of"]),
    (["--bogus"], ["asrpriv:", "--bogus", "--verbose"]),
])
def test_click_usage_errors_are_one_line_with_suggestions(args, needles):
    from conftest import assert_one_line_error, run_proc

    line = assert_one_line_error(run_proc(args), *needles)
    assert "--help" in line
