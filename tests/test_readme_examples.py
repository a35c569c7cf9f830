"""Every ```sh block of README.md (and of the docs that took the README's examples over:
docs/FLOWER.md) runs as written, on the bundled data, in a fresh directory.

Blocks run in file order in one temporary directory (a later block may use what an earlier
one wrote, as a reader would), with ``examples/`` and ``bin/`` of this checkout linked in and
``asrpriv`` on PATH (this tree's code), under ``bash -e -o pipefail``. A new block is picked up
without touching this file. A block may carry one marker comment:

* ``# readme-test: slow`` -- run only with the slow tests (``make test-all``);
* ``# readme-test: skip REASON`` -- not run here (e.g. ``make test`` would run this suite).

When a ```sh block is directly followed by a ```text block (the output the reader should
see), every ``%WER`` / ``WER`` summary line of that text must appear in the block's stdout.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

from conftest import ROOT

README = ROOT / "README.md"
#: files whose ```sh blocks run here (the README's first; docs that hold former README examples)
DOCS = [README, ROOT / "docs" / "FLOWER.md"]
_FENCE = re.compile(r"^```(\S*)\s*$")


@dataclass
class Block:
    line: int          # 1-based line of the opening fence
    lang: str
    text: str
    expected: str | None = None  # the ```text block right after it, if any
    name: str = "README.md"

    @property
    def marker(self) -> tuple[str, str] | None:
        m = re.search(r"^#\s*readme-test:\s*(slow|skip)\b\s*(.*)$", self.text, re.M)
        return (m.group(1), m.group(2).strip()) if m else None


def readme_blocks(path=README) -> list[Block]:
    """Fenced blocks of ``path``, each ```sh block with the ```text block that follows it."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang, body = i + 1, m.group(1), []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1
        blocks.append(Block(start, lang, "\n".join(body) + "\n", name=path.name))
    out = []
    for k, b in enumerate(blocks):
        if b.lang != "sh":
            continue
        after = blocks[k + 1] if k + 1 < len(blocks) else None
        if after is not None and after.lang == "text":
            b.expected = after.text
        out.append(b)
    return out


BLOCKS = [b for doc in DOCS for b in readme_blocks(doc)]


def _param(b: Block):
    marks = []
    if b.marker and b.marker[0] == "slow":
        marks.append(pytest.mark.slow)
    return pytest.param(b, id=f"{b.name}:{b.line}", marks=marks)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A fresh directory with the checkout's examples/ and bin/, and an ``asrpriv`` on PATH."""
    d = tmp_path_factory.mktemp("readme")
    for name in ("examples", "bin"):
        os.symlink(ROOT / name, d / name)
    tools = d / ".tools"
    tools.mkdir()
    shim = tools / "asrpriv"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m asrpriv "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    return d


def test_readme_has_a_quick_start_block_that_runs_by_default():
    quick = [b for b in BLOCKS if "tune-weights" in b.text and "score-wer" in b.text]
    assert quick, "README.md lost its Quick start (rescore -> tune-weights -> score-wer)"
    assert not quick[0].marker, "the Quick start must run in the default test run"
    assert quick[0].expected and "%WER" in quick[0].expected
    assert "set -o pipefail" in quick[0].text


def test_readme_is_a_front_door():
    """About 150 lines (at most 200), an Install heading near the top, and a map of the docs:
    the run records live in examples/README.md and docs/ (issue 39)."""
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines (at most 200)"
    install = [i for i, line in enumerate(lines, 1) if re.match(r"^#+\s+Install\b", line)]
    assert install and install[0] <= 60, "README.md needs an 'Install' heading in its first 60 lines"
    text = "\n".join(lines)
    assert "pip install" in text and "make demo" in text and "make test" in text
    for doc in sorted((ROOT / "docs").glob("*.md")):
        assert f"docs/{doc.name}" in text, f"README.md's map of the docs lacks docs/{doc.name}"
    assert "bench-table:start" not in text, "the benchmark table lives in docs/PERFORMANCE.md"
    for section in ("## Quick start", "## Steps", "## Recipes", "## Privacy"):
        assert section in text, f"README.md lost its {section!r} section"


@pytest.mark.parametrize("block", [_param(b) for b in BLOCKS])
def test_readme_block_runs(block: Block, workdir):
    if block.marker and block.marker[0] == "skip":
        pytest.skip(block.marker[1] or "marked skip")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONHASHSEED="0",
               PATH=f"{workdir / '.tools'}{os.pathsep}{os.path.dirname(sys.executable)}"
                    f"{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.text], cwd=workdir,
                          env=env, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, (f"{block.name}:{block.line} failed ({proc.returncode}):\n"
                                  f"{block.text}\n--- stderr ---\n{proc.stderr[-4000:]}")
    assert "Traceback" not in proc.stderr
    if block.expected:
        wanted = [line.strip() for line in block.expected.splitlines()
                  if line.strip().startswith(("%WER", "WER"))]
        for line in wanted:
            assert line in proc.stdout, (f"{block.name}:{block.line}: expected {line!r} in the "
                                         f"output:\n{proc.stdout[-4000:]}")
