"""The benchmark record (benchmarks/_record.py) and its table in docs/PERFORMANCE.md (benchmarks/table.py)."""

from __future__ import annotations

import importlib.util
import json
import sys

from conftest import ROOT


def _module(name: str):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_start_keeps_only_the_gpu_rows_and_record_marks_missed_targets(tmp_path, monkeypatch):
    rec = _module("_record")
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"commit": "old", "benchmarks": {
        "rescore_nbest_gpu": {"ratio": 1.5, "target": "> 1x", "met": True, "machine": "H200", "measured": "d"},
        "rescore_nbest": {"ratio": 7.3, "target": ">= 10x", "met": False},
        "unlabelled_gpu": {"ratio": 2.0, "target": "> 1x", "met": True}}}))
    rec.start(path)
    data = json.loads(path.read_text())
    assert list(data["benchmarks"]) == ["rescore_nbest_gpu"]      # no machine named: not carried
    assert data["load_after"] is None and data["cores"] >= 1
    monkeypatch.setenv(rec.ENV, str(path))
    rec.record("score_wer", 1.25, "<= 1.2x", what="library / loop")
    rec.record("fma_arpa", 1.3, "<= 2x")
    rec.finish(path)
    data = json.loads(path.read_text())
    assert data["benchmarks"]["score_wer"]["met"] is False and data["benchmarks"]["fma_arpa"]["met"] is True
    assert len(data["load_after"]) == 3
    text = _module("table").table(data)
    row = next(line for line in text.splitlines() if " score_wer " in line)
    assert "**no: target missed**" in row and "1.25x" in row
    gpu_row = next(line for line in text.splitlines() if " rescore_nbest_gpu " in line)
    assert "measured on H200, d" in gpu_row


def test_target_parsing():
    met = _module("_record").target_met
    assert met(0.9, "<= 1.2x") and not met(1.3, "≤ 1.2x") and met(11, ">= 10x") and met(0.7, ">= 0.7x")
    assert met(1.0, "none") is None


def test_the_table_lives_in_performance_md_and_table_py_regenerates_it(tmp_path):
    """``make bench``'s last step rewrites the table where it now lives (docs/PERFORMANCE.md, not
    the README): the markers are there, and regenerating from results.json leaves the file as it
    is (the table was not edited by hand) while a copy with a stale table gets the new one."""
    import subprocess

    table = _module("table")
    home = ROOT / table.TABLE_FILE
    assert home == ROOT / "docs" / "PERFORMANCE.md"
    text = home.read_text(encoding="utf-8")
    assert text.count(table.START) == 1 and text.count(table.END) == 1
    assert table.START not in (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"--readme {table.TABLE_FILE}" in (ROOT / "Makefile").read_text(encoding="utf-8")
    stale = tmp_path / "PERFORMANCE.md"
    head, rest = text.split(table.START, 1)
    stale.write_text(f"{head}{table.START}\nold table\n{table.END}{rest.split(table.END, 1)[1]}",
                     encoding="utf-8")
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "table.py"), "--readme", str(stale),
                    str(ROOT / "benchmarks" / "results.json")], check=True)
    assert stale.read_text(encoding="utf-8") == text
