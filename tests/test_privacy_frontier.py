"""bin/privacy-frontier --reduced end to end, and its report module on made-up points."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _table_helpers import dp_rows_with_few_draws, is_dp_row, rows_without_interval, table_rows
from conftest import AMI, ROOT
from asrpriv.reports import frontier

COLUMNS = ["method", "unit", "epsilon", "delta", "wer", "wer_lo", "wer_hi", "draws"]


def _rows(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        reader = csv.DictReader(f, delimiter="\t")
        assert reader.fieldnames == COLUMNS
        return list(reader)


def _check_frontier(out: Path, min_draws: int = 3) -> list[dict]:
    rows = _rows(out / "frontier.tsv")
    assert {r["method"] for r in rows} == {"dp-fmp", "dp-fedadam", "fma-ngram"}
    for r in rows:
        lo, wer, hi = float(r["wer_lo"]), float(r["wer"]), float(r["wer_hi"])
        assert lo <= wer <= hi and lo < hi, r                        # every row has an interval
        if r["epsilon"] == "inf":
            assert r["draws"] == "1"
        else:
            assert math.isfinite(float(r["epsilon"])) and int(r["draws"]) >= min_draws, r
        assert r["unit"] == ("client" if r["method"] == "dp-fedadam" else "utterance")
    # the non-private line of each method is there
    assert {r["method"] for r in rows if r["epsilon"] == "inf"} == {"dp-fmp", "dp-fedadam", "fma-ngram"}
    return rows


def _wer(w: float, diff: float | None = None) -> dict:
    boot = {"wer_low": w - 1, "wer_high": w + 1}
    if diff is not None:
        boot.update(diff=diff, diff_low=diff - 0.3, diff_high=diff + 0.3)
    return {"wer": w, "sentences": 10, "ref_words": 100, "bootstrap": boot,
            "compare": {"significant": False, "p_value": 0.5} if diff is not None else None}


def test_frontier_report_on_made_up_points(tmp_path):
    out = tmp_path
    def put(method, setting, draw, report):
        d = out / "points" / method / setting / f"d{draw}"
        d.mkdir(parents=True)
        (d / "wer.json").write_text(json.dumps(report))
    for m in ("dp-fmp", "fma-ngram", "dp-fedadam"):
        put(m, "inf", 1, _wer(20.0, -0.5))
    for d in (1, 2, 3):
        put("dp-fmp", "eps1", d, _wer(20.0 + d, 0.1 * d))
        put("fma-ngram", "eps8", d, _wer(21.0, 0.2))
        put("dp-fedadam", "z0.7", d, _wer(22.0, 0.0))
    (out / "privacy").mkdir()
    (out / "privacy" / "z0.7.json").write_text(json.dumps({"epsilon_rdp": 5.123456, "epsilon_pld": 4.98765, "delta": 1e-5}))
    ref = out / "points" / "reference" / "nnlm"
    ref.mkdir(parents=True)
    (ref / "wer.json").write_text(json.dumps(_wer(20.5)))
    assert frontier.main(["report", "--data", str(AMI), "--command", "bin/privacy-frontier X Y", str(out)]) == 0
    rows = _check_frontier(out)
    fmp = next(r for r in rows if r["method"] == "dp-fmp" and r["epsilon"] == "1")
    # mean of the draws; the interval is the union of the draws' intervals
    assert float(fmp["wer"]) == pytest.approx(22.0) and float(fmp["wer_lo"]) == 20.0 and float(fmp["wer_hi"]) == 24.0
    fl = next(r for r in rows if r["method"] == "dp-fedadam" and r["epsilon"] != "inf")
    assert float(fl["epsilon"]) == pytest.approx(4.98765) and float(fl["delta"]) == 1e-5
    md = (out / "frontier.md").read_text()
    assert "synthesized by flite" in md and "Units of privacy differ" in md
    assert "vs DP-FMP, non-private" in md and "4.988 (PLD; RDP 5.123)" in md
    assert (out / "frontier.png").stat().st_size > 1000


def test_report_module_computes_no_client_lists():
    """The recipe's client lists and q N come from steps (select-nbest --list-clients, sample-
    clients --expected): the report module offers only `report` (issue 39: reports format)."""
    with pytest.raises(SystemExit):
        frontier.main(["clients", str(AMI / "dev" / "nbest.tsv")])
    text = (ROOT / "bin" / "privacy-frontier").read_text()
    assert "report_mod clients" not in text and "report_mod expected-clients" not in text
    assert "select-nbest" in text and "sample-clients -q --expected" in text


def test_help_lists_knobs():
    proc = subprocess.run(["bash", str(ROOT / "bin" / "privacy-frontier"), "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    for knob in ("DEV_PER_CLIENT", "EPSILONS", "Z", "RATE", "ROUNDS", "DRAWS", "BOOTSTRAP", "FMP_T", "CLIP"):
        assert f"  {knob} " in proc.stdout, knob
    # every environment knob the script reads (${NAME:-default} or ${NAME-default}) is in --help
    import re
    script = (ROOT / "bin" / "privacy-frontier").read_text()
    read = set(re.findall(r"\$\{([A-Z_]+):?-", script))
    assert read and all(re.search(rf"\b{k}\b", proc.stdout) for k in read), read


@pytest.mark.slow  # a few minutes on the shared 2 cores: ~25 processes that import torch
def test_privacy_frontier_reduced(tmp_path):
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = f"{ROOT / 'src'}{os.pathsep}{env.get('PYTHONPATH', '')}"
    env["PYTHON"] = sys.executable
    env.setdefault("OMP_NUM_THREADS", "1")
    out = tmp_path / "out"
    proc = subprocess.run(["bash", str(ROOT / "bin" / "privacy-frontier"), "--reduced", str(AMI), str(out)],
                          capture_output=True, text=True, env=env, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = _check_frontier(out)
    assert len(rows) == 3 + 2 + 2 + 2          # inf per method; 2 epsilons (Laplace) x 2, 2 z values
    md = (out / "frontier.md").read_text()
    assert md in proc.stdout and "bin/privacy-frontier --reduced" in md
    # every row of frontier.md's tables has its 95% interval; DP-FMP and DP-FedAdam rows >= 3 draws
    # (the FMA rows' draws are in frontier.tsv, checked above)
    assert not rows_without_interval(md), rows_without_interval(md)
    assert len([r for r in table_rows(md) if is_dp_row(r)]) == 4 and not dp_rows_with_few_draws(md, 3)
    # the run time: one 'seconds<TAB>start<TAB>command' line per invocation in runtime.tsv (recipe_runtime),
    # named in frontier.md
    (seconds, _start, command), = [line.split("\t") for line in (out / "runtime.tsv").read_text().splitlines()]
    assert command.endswith(f"bin/privacy-frontier --reduced {AMI} {out}")
    assert f"Made by `{command}`. Run time {int(seconds)} s" in md
    assert (out / "frontier.png").stat().st_size > 1000
    # every point scored on the same evaluation utterances
    words = {json.loads(p.read_text())["ref_words"] for p in (out / "points").glob("*/*/d*/wer.json")}
    assert len(words) == 1
