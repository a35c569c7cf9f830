"""The recipes in bin/ compute nothing themselves, and their first minutes cannot mislead.

Checked without running an experiment (quick): bin/ holds no awk, no ``python -c`` and no
Python fed on standard input (``python3 - <<EOF``: a column, a selection, a comparison or a
table is an asrpriv step or a module of asrpriv.reports); every recipe's --help exits 0, shows
the DATA_DIR layout and lists every environment knob the script reads (with a default, or
read and never set); a missing OUT_DIR is one line naming it, exit 2.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import AMI, ROOT

BIN = ROOT / "bin"
RECIPES = ["fmp-experiment", "fl-finetune-experiment", "leakage-audit", "ngram-fma-experiment",
           "sanitized-lm-experiment", "confidence-experiment"]


def test_bin_holds_no_awk_and_no_python_c():
    offenders = []
    for path in sorted(p for p in BIN.rglob("*") if p.is_file()):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0] if path.suffix != ".py" and "-report" not in path.name else line
            if re.search(r"\b[gnm]?awk\b", code) or re.search(r"python[0-9.]*\"?\s+-c\b|PYTHON\"?\s+-c\b", code):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


#: a Python interpreter given its program on standard input: ``python3 - ...``, ``"$PYTHON" - <<``
PY_STDIN = re.compile(r"(?:\bpython[0-9.]*|\$\{?PYTHON\}?)\"?\s+(?:-\s|-$|<<|<\s)")


def test_bin_holds_no_python_on_stdin():
    offenders = []
    for path in sorted(p for p in BIN.rglob("*") if p.is_file()):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0] if path.suffix != ".py" and "-report" not in path.name else line
            if PY_STDIN.search(code):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_python_on_stdin_is_found():
    for line in ('"$PYTHON" - "$OUT" $SCALES <<\'PY\'', "UNKPEN=$(\"$PYTHON\" - \"$L/a.arpa\" <<'PY'",
                 "python3 - <<EOF", "python3 <<EOF", "${PYTHON} - a b"):
        assert PY_STDIN.search(line), line
    for line in ('"$PYTHON" -m asrpriv.reports.confidence table "$OUT"', "python3 -m pytest -x",
                 '"$PYTHON" "$HERE/fmp-report" --data "$DATA"'):
        assert not PY_STDIN.search(line), line


#: variables bash sets itself (or the environment always has), not knobs of a recipe
SHELL_VARIABLES = {"PYTHONHASHSEED", "SECONDS", "RANDOM", "LINENO", "PIPESTATUS", "BASH_SOURCE",
                   "BASH_REMATCH", "FUNCNAME", "PWD", "OLDPWD", "HOME", "PATH", "IFS", "UID",
                   "EUID", "PPID", "BASHPID", "OPTARG", "OPTIND", "HOSTNAME", "TMPDIR"}


def _assigned(script: str) -> set[str]:
    """Upper-case variables the script sets: NAME=, export/local/declare NAME, for NAME in,
    read ... NAME."""
    names = set(re.findall(r"(?:^|[\s;&|(!])(?:export\s+|local\s+|declare\s+(?:-[a-zA-Z]+\s+)*|"
                           r"readonly\s+)?([A-Z][A-Z0-9_]*)(?:\[[^\]]*\])?\+?=", script, re.M))
    names |= set(re.findall(r"\bfor\s+([A-Z][A-Z0-9_]*)\s+in\b", script))
    for m in re.finditer(r"\b(?:read|local|declare)\s+((?:-[A-Za-z]+\s+)*)([A-Za-z0-9_ ]+)", script):
        names |= set(re.findall(r"\b([A-Z][A-Z0-9_]*)\b", m.group(2)))
    return names


def _knobs(script: str) -> set[str]:
    """Environment variables the script reads: with a default (${NAME:-..}, ${NAME-..},
    ${NAME:+..}, ${NAME:=..}), or read ($NAME, ${NAME}) and never set by it or by
    bin/lib/recipe.sh."""
    with_default = set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)(?::-|-|:\+|:=|=)", script))
    code = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("#"))
    reads = set(re.findall(r"\$\{?([A-Z][A-Z0-9_]*)", code))
    unset = reads - _assigned(script) - _assigned((BIN / "lib" / "recipe.sh").read_text(encoding="utf-8"))
    via_knob = set(re.findall(r"(?:^|[;\s])knob ([A-Z][A-Z0-9_]*) ", script, re.M))   # recipe.sh's knob NAME DEFAULT
    return (with_default | unset | via_knob) - SHELL_VARIABLES


def test_knobs_are_found():
    script = ('A=${A:-1}\nB=2\necho "$B $C ${D} ${E-x}"\nfor F in 1; do :; done\nread -r G H <<< "$G $H"\n'
              "# $COMMENTED\nlocal I=3; echo $I $SECONDS\n")
    assert _knobs(script) == {"A", "C", "D", "E"}


@pytest.mark.parametrize("recipe", RECIPES)
def test_recipe_help_shows_layout_and_every_knob(recipe):
    script = (BIN / recipe).read_text(encoding="utf-8")
    proc = subprocess.run(["bash", str(BIN / recipe), "--help"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert f"bin/{recipe}" in proc.stderr and "DATA_DIR/" in proc.stderr
    knobs = _knobs(script)
    assert knobs or recipe == "confidence-experiment"
    for knob in knobs:
        assert re.search(rf"^\s+{knob}=", proc.stderr, re.M), f"{recipe}: {knob} not in --help"


def _all_recipes() -> list[str]:
    """Every bash script of bin/ with a --help (the six above, privacy-frontier, ...)."""
    return sorted(p.name for p in BIN.iterdir() if p.is_file()
                  and p.read_text(encoding="utf-8").startswith("#!/usr/bin/env bash")
                  and "--help" in p.read_text(encoding="utf-8"))


@pytest.mark.parametrize("recipe", _all_recipes())
def test_every_recipe_help_names_every_knob(recipe):
    """Whatever the help's layout: each knob the script reads is named in its --help."""
    script = (BIN / recipe).read_text(encoding="utf-8")
    proc = subprocess.run(["bash", str(BIN / recipe), "--help"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    shown = proc.stdout + proc.stderr
    missing = sorted(k for k in _knobs(script) if not re.search(rf"(?<![A-Z0-9_]){k}(?![A-Z0-9_])", shown))
    assert not missing, f"{recipe} --help does not name {missing}"


def test_fl_recipe_help_lists_tiny_train_limit():
    proc = subprocess.run(["bash", str(BIN / "fl-finetune-experiment"), "--help"], capture_output=True,
                          text=True, timeout=30)
    assert re.search(r"^\s+TINY_TRAIN_LIMIT=", proc.stderr, re.M)


@pytest.mark.parametrize("recipe", RECIPES)
def test_recipe_missing_out_dir_is_one_line(recipe, tmp_path):
    proc = subprocess.run(["bash", str(BIN / recipe), str(AMI)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "missing OUT_DIR" in lines[0] and "--help" in lines[0], proc.stderr
    proc = subprocess.run(["bash", str(BIN / recipe), "--no-such-option", str(AMI), str(tmp_path)],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "unknown option --no-such-option" in proc.stderr


def test_knob_command_line_and_runtime_record(tmp_path):
    """recipe.sh's knob (the command line names the knobs that differ from the defaults, quoted so
    the shell reads them back) and recipe_runtime (one line per invocation, also when it fails)."""
    lib = BIN / "lib" / "recipe.sh"
    out = tmp_path / "out"
    out.mkdir()
    script = (f"set -euo pipefail; . {lib}; recipe_init t; OUT={out}; "
              "knob A 'x y'; knob B 1; knob C 2; knob D ''; "
              "COMMAND=\"${KNOBS_SET}bin/t $OUT\"; recipe_runtime; "
              "printf '%s\\n' \"$KNOBS_SET\"; eval \"$KNOBS_SET true\"; "
              "[ \"$1\" = ok ] || exit 3; recipe_runtime_record 0; recipe_runtime_record 0")
    env = {"PATH": "/usr/bin:/bin", "B": "it's 2", "C": "2", "D": ""}
    ok = subprocess.run(["bash", "-c", script, "_", "ok"], capture_output=True, text=True, env=env, timeout=30)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == "B='it'\\''s 2'"
    failed = subprocess.run(["bash", "-c", script, "_", "no"], capture_output=True, text=True, env=env, timeout=30)
    assert failed.returncode == 3
    lines = (out / "runtime.tsv").read_text().splitlines()
    assert len(lines) == 2
    first, second = (line.split("\t") for line in lines)
    assert first[0].isdigit() and first[1].isdigit() and first[2] == f"B='it'\\''s 2' bin/t {out}"
    assert second[2] == f"B='it'\\''s 2' bin/t {out} [stopped: exit 3]"


def test_cache_changes_names_what_changed(tmp_path):
    """recipe.sh's key comparison, for multi-line keys (fmp-experiment) and one-line keys."""
    lib = BIN / "lib" / "recipe.sh"
    cmd = (f". {lib}; cache_changes $'a=1\\nb=x y\\nc=3' $'a=1\\nb=x z\\nd=4'; "
           f"cache_changes 'fl q=0.5 T=1 z=-' 'fl q=0.1 T=1'")
    out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=30).stdout.splitlines()
    assert out[0].split("; ")[:2] == ["b: x y -> x z", "d: (none) -> 4"] and "c: 3 -> (none)" in out[0]
    assert out[1] == "q: 0.5 -> 0.1; z: - -> (none)"


def test_sigterm_stops_a_recipe_child_at_once(tmp_path):
    """recipe_child: SIGTERM to the recipe (bash alone, as `kill PID`) stops the step it runs at
    once (bash would run its trap only after a foreground step ends), waits for it, and the
    invocation is recorded as stopped; the step's own status is returned when it ends."""
    import os
    import signal
    import time

    lib = BIN / "lib" / "recipe.sh"
    out = tmp_path / "out"
    out.mkdir()
    script = (f"set -euo pipefail; . {lib}; recipe_init t; OUT={out}; COMMAND='bin/t'; recipe_runtime; "
              "recipe_child bash -c 'exit 5' || echo \"status $?\"; "
              f"recipe_child bash -c 'echo $$ > {out}/child; exec sleep 60'; echo never")
    proc = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    started = time.monotonic()
    while not (out / "child").exists() or not (out / "child").read_text().strip():
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    child = int((out / "child").read_text())
    proc.send_signal(signal.SIGTERM)
    stdout, _ = proc.communicate(timeout=30)
    assert proc.returncode == 143 and time.monotonic() - started < 30
    assert stdout.splitlines() == ["status 5"]
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)   # the step was stopped (and reaped), not left running
    assert (out / "runtime.tsv").read_text().split("\t")[2] == "bin/t [stopped: exit 143]\n"
