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

from _recipe_helpers import round_models, stop_when, uninterrupted_run
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


def _frontier_env(**knobs) -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = f"{ROOT / 'src'}{os.pathsep}{env.get('PYTHONPATH', '')}"
    env["PYTHON"] = sys.executable
    env.setdefault("OMP_NUM_THREADS", "1")
    env.pop("TEST_SEEDED_DP_SAMPLING", None)   # the DP point samples from the OS's secure source
    env.update(knobs)
    return env


def _frontier_stopped(out: Path, env: dict, ready) -> tuple[subprocess.CompletedProcess, float]:
    """Start bin/privacy-frontier --reduced and stop it with SIGTERM as soon as ``ready()`` holds;
    returns the ended run and the seconds it took to end."""
    return stop_when(["bash", str(ROOT / "bin" / "privacy-frontier"), "--reduced", str(AMI), str(out)],
                     env, ready)


@pytest.mark.slow  # ~2-3 minutes on the shared 2 cores: three parts of a cut --reduced run
def test_privacy_frontier_stops_at_once_and_resumes_its_federated_points(tmp_path):
    """SIGTERM to the recipe while a fl-rounds runs stops it at once (the part recorded as stopped
    in runtime.tsv); the same command again goes on with the stopped DP-FedAdam point from its
    last round (fl-rounds --resume), and the seeded non-private point ends with an uninterrupted
    run's model, byte for byte; the resumed DP point's model holds all T releases. A point stopped
    in another runner (here: made so by removing its `done`) is redone in its kept directory."""
    import time

    rounds = 40          # ~0.25 s a round: SIGTERM comes well inside the rounds
    env = _frontier_env(ROUNDS=str(rounds), DRAWS="1", Z="0.7", EPSILONS="8")
    out = tmp_path / "out"
    points = out / "points"
    fl_inf = points / "dp-fedadam" / "inf" / "d1" / "fl"
    fl_dp = points / "dp-fedadam" / "z0.7" / "d1" / "fl"

    # 1. stopped in the non-private (seeded) FedAdam point's rounds
    stopped, took = _frontier_stopped(out, env, lambda: (fl_inf / "model-1.pt").exists())
    assert stopped.returncode == 143, stopped.stderr[-3000:]
    assert took < 20, took                     # fl-rounds was stopped, not waited for
    assert "dp-fedadam inf, draw 1" in stopped.stderr and "resuming" not in stopped.stderr
    done = round_models(fl_inf)[-1]
    assert 1 <= done < rounds, done
    time.sleep(1)
    assert round_models(fl_inf)[-1] == done   # no fl-rounds left running
    assert not (fl_inf.parent / "done").exists() and not (fl_inf.parent / "hyp.txt").exists()
    (part,) = (out / "runtime.tsv").read_text().splitlines()
    assert part.endswith("[stopped: exit 143]"), part
    resumed_at = time.time()

    # 2. the same command: the point goes on after its last round; stopped in the DP point's rounds
    again, took = _frontier_stopped(out, env, lambda: (fl_dp / "model-1.pt").exists())
    assert again.returncode == 143, again.stderr[-3000:]
    assert took < 20, took
    assert f"resuming dp-fedadam/inf/d1 after round {done} of {rounds}" in again.stderr
    assert "going on with points/dp-fedadam/inf/d1" in again.stderr
    assert "reusing points/dp-fmp/inf/d1 (same settings)" in again.stderr
    assert "dp-fedadam z0.7, draw 1" in again.stderr and "resuming dp-fedadam/z0.7" not in again.stderr
    dp_done = round_models(fl_dp)[-1]
    assert 1 <= dp_done < rounds, dp_done

    # 3. points stopped after their federated rounds or in another runner (made so: no `done`):
    # the FedAdam point is rescored with its last model, the others are redone in their kept
    # directories (fma-ngram's noisy counts are written over)
    for point in ("dp-fedadam/inf/d1", "dp-fmp/eps8/d1", "fma-ngram/eps8/d1"):
        (points / point / "done").unlink()
    assert (points / "fma-ngram" / "eps8" / "d1" / "noisy.counts").exists()
    final = subprocess.run(["bash", str(ROOT / "bin" / "privacy-frontier"), "--reduced", str(AMI), str(out)],
                           capture_output=True, text=True, env=env, timeout=600)
    assert final.returncode == 0, final.stderr[-3000:]
    assert f"resuming dp-fedadam/z0.7/d1 after round {dp_done} of {rounds}" in final.stderr
    assert f"dp-fedadam/inf/d1: its {rounds} rounds were done before it was stopped" in final.stderr
    assert "resuming dp-fedadam/inf" not in final.stderr
    for point in ("dp-fedadam/inf/d1", "dp-fmp/eps8/d1", "fma-ngram/eps8/d1"):
        assert f"going on with points/{point} (same settings" in final.stderr
        assert (points / point / "done").exists()
    rows = _check_frontier(out, min_draws=1)
    assert len(rows) == 3 + 3
    md = (out / "frontier.md").read_text()
    assert md in final.stdout
    lines = (out / "runtime.tsv").read_text().splitlines()
    assert len(lines) == 3 and [line.endswith("[stopped: exit 143]") for line in lines] == [True, True, False]
    total = sum(int(line.split("\t")[0]) for line in lines)
    assert f"Run time {total} s" in md, md[:2000]

    # the non-private point's rounds ran 1..T once, without a restart (round 1 from the first part)
    reports = [json.loads((fl_inf / f"round-{t}" / "report.json").read_text()) for t in range(1, rounds + 1)]
    assert [r["round"] for r in reports] == list(range(1, rounds + 1))
    assert (fl_inf / "round-1" / "report.json").stat().st_mtime < resumed_at
    assert round_models(fl_inf) == [rounds] and round_models(fl_dp) == [rounds]
    # ... and its model is an uninterrupted run's (the same settings, run.json), byte for byte
    whole = uninterrupted_run(fl_inf / "run.json", tmp_path / "whole", env)
    assert (fl_inf / f"model-{rounds}.pt").read_bytes() == (whole / f"model-{rounds}.pt").read_bytes()
    assert (fl_inf / "state.pt").read_bytes() == (whole / "state.pt").read_bytes()
    for t in range(1, rounds + 1):
        assert (fl_inf / f"round-{t}" / "clients.txt").read_text() == \
            (whole / f"round-{t}" / "clients.txt").read_text(), t

    # the resumed DP point's model carries all T releases of secure sampling and noise: its
    # privacy history gives the epsilon the report states for (z, q, T)
    history = json.loads(subprocess.run(["asrpriv", "privacy-report", "--json", str(fl_dp / f"model-{rounds}.pt")],
                                        capture_output=True, text=True, env=env, check=True).stdout)
    eps = json.loads((out / "privacy" / "z0.7.json").read_text())
    assert (eps["rounds"], len(history["releases"]), history["seeded"]) == (rounds, rounds, False)
    for key in ("epsilon_rdp", "epsilon_pld"):
        assert history[key] == pytest.approx(eps[key], rel=1e-9), key
