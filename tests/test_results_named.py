"""Every published results file names its data: synthetic speech, not real recordings (issue 29)."""

from __future__ import annotations

import pytest

from conftest import ROOT
from asrpriv.reports.common import DATA_NAME

RESULTS = sorted((ROOT / "examples" / "results").glob("*.md"))


def test_there_are_results_files():
    assert len(RESULTS) >= 8 and (ROOT / "examples" / "results" / "frontier.md") in RESULTS


@pytest.mark.parametrize("path", RESULTS, ids=[p.name for p in RESULTS])
def test_results_file_names_the_synthetic_speech_data(path):
    text = path.read_text(encoding="utf-8")
    assert DATA_NAME in text, f"{path.name} does not name its data"
    assert "real N-best" not in text


def test_readmes_name_the_data_and_drop_the_unbacked_claims():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    examples = (ROOT / "examples" / "README.md").read_text(encoding="utf-8")
    for text in (readme, examples):
        assert DATA_NAME in text and "real N-best" not in text and "real AMI N-best" not in text
    assert "1,238 words" not in readme and "5 of 78" not in examples
    assert "(3 in the full run, 2 in the demo)" not in examples
