"""The recipes in bin/ compute nothing themselves, and their first minutes cannot mislead.

Checked without running an experiment (quick): bin/ holds no awk and no ``python -c`` (a
column, a selection or a comparison is an asrpriv step); every recipe's --help exits 0, shows
the DATA_DIR layout and lists every environment knob the script reads; a missing OUT_DIR is
one line naming it, exit 2.
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


def _knobs(script: str) -> set[str]:
    """Environment variables the script reads with a default: ${NAME:-..}, ${NAME-..}, ${NAME:+..},
    or through recipe.sh's ``knob NAME DEFAULT``."""
    return (set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)(?::-|-|:\+)", script)) |
            set(re.findall(r"(?:^|[;\s])knob ([A-Z][A-Z0-9_]*) ", script, re.M))) - {"PYTHONHASHSEED"}


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
