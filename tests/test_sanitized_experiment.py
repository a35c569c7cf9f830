"""bin/sanitized-lm-experiment end to end on the bundled AMI data (slow: ~3-4 min, --reduced)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _table_helpers import INTERVAL, rows_without_interval
from asrpriv.reports.common import DATA_NAME
from conftest import AMI, ROOT


@pytest.fixture(scope="module")
def reduced_run(tmp_path_factory) -> Path:
    """One `--reduced` run (12 and 20% adaptation sets, two betas) shared by the tests below."""
    tmp_path = tmp_path_factory.mktemp("sanitized")
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "asrpriv").write_text(f"#!/bin/sh\nexec {sys.executable} -m asrpriv \"$@\"\n")
    (shim / "asrpriv").chmod(0o755)
    env = dict(os.environ, PATH=f"{shim}:{os.environ['PATH']}", PYTHON=sys.executable,
               PYTHONPATH=str(ROOT / "src"), FRACTIONS="12 20", BETAS="0.25 0.5")
    out = tmp_path / "out"
    subprocess.run([str(ROOT / "bin" / "sanitized-lm-experiment"), "--reduced", str(AMI), str(out)],
                   check=True, env=env, capture_output=True)
    return out


@pytest.mark.slow
def test_experiment_writes_every_table(reduced_run):
    out = reduced_run
    text = (out / "results.md").read_text()
    rows = [l for l in text.splitlines() if l.startswith("| M")]
    # Table 2: 4 kinds x 2; Table 3: 3 FMA kinds x 2 fractions + M4 on the first; Table 4: M1/M2 x 2
    # + M3/M4 on the first; Table 5: 3 mixtures with EM weights and with the paper's
    assert len(rows) == 8 + 7 + 6 + 6, text
    # every comparison cell is paired and names its baseline: MAPSSWE p and the WER difference's interval
    assert all("vs M" in row and "p=" in row for row in rows if "(the baseline)" not in row), text
    assert "## The lowest WER and the lowest perplexity, tested" in text
    best, other = ((out / "eval" / f"best_{k}.txt").read_text().strip() for k in ("all", "other"))
    assert (out / "eval" / f"{best}.vs.{other}.json").exists() and f"`{best}` minus `{other}`" in text
    assert len((out / "runtime.tsv").read_text().splitlines()) == 1 and "Made by `" in text
    split = json.loads((out / "split" / "split.json").read_text())
    # nested adaptation sets of ~12 and ~20% of T, disjoint from T and from the held-out slice
    assert 0.11 < split["adapt12"] / split["train"] < 0.15 and 0.19 < split["adapt20"] / split["train"] < 0.23
    ids = {name: {l.split()[0] for l in (out / "split" / f"{name}.txt").read_text().splitlines()}
           for name in ("train", "heldout", "adapt12", "adapt20")}
    assert ids["adapt12"] < ids["adapt20"]
    assert not ids["train"] & ids["adapt20"] and not ids["heldout"] & (ids["train"] | ids["adapt20"])
    # the NNLM shares M1's vocabulary, so the mixtures see the same OOVs (M3 knows the words of
    # the text it approximates on: in --reduced the NNLM's sample)
    oov = {json.loads((out / "eval" / f"{n}.ppl.json").read_text())["oov_rate"]
           for n in ("M1_sanitized", "M4_sanitized", "M4_ft12")}
    assert len(oov) == 1
    weights = json.loads((out / "lm" / "T5_M1+M2+M4.json").read_text())["weights"]
    assert len(weights) == 3 and abs(sum(weights) - 1) < 1e-9


@pytest.mark.slow
def test_reduced_form_every_row_has_an_interval(reduced_run):
    """Issue 29's check on the reduced form: every table row has a 95% interval (this recipe has no
    DP rows: its sanitization is seeded and declared NOT private): each row's WER, with the
    perplexities' and the entity-word error rate's beside it."""
    text = (reduced_run / "results.md").read_text()
    assert "Tables 2-5" in text and DATA_NAME in text
    assert not rows_without_interval(text), rows_without_interval(text)[:3]
    for row in (r for r in text.splitlines() if r.startswith("| M")):
        wer = row.split("|")[5].strip()                      # the WER cell: 24.52 [22.18, 26.79]
        assert INTERVAL.fullmatch(wer), row
