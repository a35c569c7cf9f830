"""Results files whose labels cannot overclaim (issue 41).

Every committed ``examples/results/*.md``:

* names the commit of the code that made it (a 7-40 hex digit id after the word ``commit``)
  and whether the tree was clean: either the recipes' own sentence (``Code: commit X (clean
  tree)``, from OUT/code.tsv) or, for a run that did not record it, the hand-written form that
  names the commit at which the file was committed -- checked against ``git log`` of the file;
* says "full" (``Mode: full`` / ``Mode full`` / a "(full run)" title) only where the full
  defaults ran unchanged: a command that sets a knob that changes results, or a part stopped
  by hand, needs a "**Not the full defaults**" line among its first lines;
* if it reports DP results, states its unit of privacy and where client sampling drew from
  (the OS's secure source, a public seed -- and then that the epsilon does not hold -- or no
  client sampling at all).

And the sentence builders the reports use (:mod:`asrpriv.reports.common`) by hand.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import ROOT
from asrpriv.reports import common

RESULTS = sorted((ROOT / "examples" / "results").glob("*.md"))
COMMIT = re.compile(r"\bcommit ([0-9a-f]{7,40})\b")
RECORDED = re.compile(r"Code: (?:commit ([0-9a-f]{7,40}) \((clean tree|tree with uncommitted changes "
                      r"in src/ or bin/)\)|the \d+ invocations ran \d+ versions: commit [0-9a-f]{7,40})")
UNRECORDED = re.compile(r"\*\*Code\*\* \(written by hand, issue 41\): the run did not record its "
                        r"commit; this file was committed at commit ([0-9a-f]{7,40})\b.*?whether the "
                        r"tree was clean was not recorded")
CLAIMS_FULL = re.compile(r"^(?:Mode:? full\b|# .*\(full run)", re.M)
NOT_FULL = "**Not the full defaults**"
FIRST_LINES = 12
DP = re.compile(r"\bDP\b|epsilon")
SAMPLING = re.compile(r"client sampling drew from the OS's secure source|client sampling used the "
                      r"public seed .*does not hold|no client sampling", re.S | re.I)


def commits_of(path) -> list[str] | None:
    """Full ids of the commits that touched ``path`` (None outside a git checkout)."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "log", "--format=%H", "--", str(path)],
                             capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return None
    return out or None


def test_there_are_results_files():
    assert len(RESULTS) >= 10


@pytest.mark.parametrize("path", RESULTS, ids=[p.name for p in RESULTS])
def test_results_file_names_its_commit_and_tree(path):
    text = path.read_text(encoding="utf-8")
    assert COMMIT.search(text), f"{path.name} names no commit"
    if RECORDED.search(text):
        return
    hand = UNRECORDED.search(text)
    assert hand, f"{path.name}: no 'Code: commit X (clean tree)' and no hand-written commit line"
    history = commits_of(path)
    if history is None:
        pytest.skip("not a git checkout: the named commit cannot be checked")
    assert any(c.startswith(hand.group(1)) for c in history), (
        f"{path.name}: commit {hand.group(1)} is not one at which the file was committed")


@pytest.mark.parametrize("path", RESULTS, ids=[p.name for p in RESULTS])
def test_full_only_when_the_full_defaults_ran(path):
    text = path.read_text(encoding="utf-8")
    if not CLAIMS_FULL.search(text):
        return
    commands = re.findall(r"`([^`]*bin/[a-z-]+[^`]*)`", text)
    changed = common.changed_knobs(commands)
    stopped = any("stopped by hand" in c for c in commands)
    head = "\n".join(text.split("\n")[:FIRST_LINES])
    if changed or stopped:
        assert NOT_FULL in head, (f"{path.name} says full but its commands differ from the defaults "
                                  f"({', '.join(changed) or 'stopped by hand'}): list that first")


@pytest.mark.parametrize("path", RESULTS, ids=[p.name for p in RESULTS])
def test_dp_results_state_unit_of_privacy_and_sampling(path):
    text = path.read_text(encoding="utf-8")
    if not DP.search(text):
        return
    assert re.search(r"units? of privacy", text, re.I), f"{path.name}: no unit of privacy"
    assert SAMPLING.search(text), f"{path.name}: does not say where client sampling drew from"


def test_code_sentence_and_mode_label_by_hand(tmp_path):
    # no code.tsv (a run from before the recipes recorded it): nothing claimed
    assert common.code_sentence(str(tmp_path)) == ""
    (tmp_path / "code.tsv").write_text("1\t" + "a" * 40 + "\tclean\n")
    assert common.code_sentence(str(tmp_path)) == " Code: commit aaaaaaaaaaaa (clean tree)."
    with open(tmp_path / "code.tsv", "a") as f:
        f.write("2\t" + "b" * 40 + "\tmodified\n")
    text = common.code_sentence(str(tmp_path))
    assert text == (" Code: the 2 invocations ran 2 versions: commit aaaaaaaaaaaa (clean tree); "
                    "commit bbbbbbbbbbbb (tree with uncommitted changes in src/ or bin/).")
    assert RECORDED.search(text) and COMMIT.search(text)
    (tmp_path / "runtime.tsv").write_text("5\t1\tbin/x D O\n")
    assert common.runtime_paragraph(str(tmp_path), 5, "x/*").endswith(text)
    # knobs that change results, and those that do not
    cmds = ["ROUNDS=30 DP_MODES='none token' OMP_NUM_THREADS=1 PYTHON=p bin/fl-finetune-experiment D O",
            "ROUNDS=30 SCRATCH_MODES= bin/fl-finetune-experiment D O [stopped by hand]"]
    assert common.changed_knobs(cmds) == ["ROUNDS=30", "DP_MODES=none token", "SCRATCH_MODES="]
    assert common.mode_label("full", ["OMP_NUM_THREADS=1 bin/x D O"]) == \
        "Mode: full (the recipe's full defaults, unchanged)."
    label = common.mode_label("full", cmds)
    assert label.startswith(NOT_FULL) and "`ROUNDS=30`" in label and "`SCRATCH_MODES=`" in label
    assert common.mode_label("reduced", cmds) == "Mode: reduced."
