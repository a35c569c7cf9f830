"""bin/fl-finetune-experiment (paper 001's Tables 2-5) end to end on a tiny slice of AMI.

A shell-level test: every row kind of the --tiny mode is built by real asrpriv steps (pre-training,
confidences, FL rounds with Poisson sampling, FedAdam, the Gaussian mechanism, rescoring, scoring),
then a rerun must reuse every cached artefact and a changed setting must rebuild only what
depends on it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _recipe_helpers import round_models, stop_when, uninterrupted_run
from _table_helpers import section_rows
from conftest import AMI, ROOT


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = f"{ROOT / 'src'}{os.pathsep}{env.get('PYTHONPATH', '')}"
    env["PYTHON"] = sys.executable
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _run(out: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(ROOT / "bin" / "fl-finetune-experiment"), "--tiny", str(AMI), str(out)],
                          capture_output=True, text=True, env=env, timeout=600)


def test_fl_recipe_tiny_slice(tmp_path):
    out = tmp_path / "out"
    env = _env()
    proc = _run(out, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = (out / "results.md").read_text()
    assert results in proc.stdout
    for row in ("No NNLM (first-pass 1-best)", "Pre-trained NNLM (no adaptation)", "FL fine-tuned (token weighted)",
                "| FL (token weighted) | 0.5 |", "rel. vs pre-trained", "7.75 (-2.6%)"):
        assert row in results, row
    assert (out / "fl_wer.png").stat().st_size > 1000
    # every row was scored on the same evaluation utterances, with MAPSSWE against the pre-trained NNLM
    reports = {p.parent.name: json.loads(p.read_text()) for p in (out / "runs").glob("*/wer.json")}
    assert set(reports) == {"nonnlm", "pretrained", "fl-token", "dp-token-z0.5-d1"}
    assert len({r["ref_words"] for r in reports.values()}) == 1
    assert reports["pretrained"]["sentences"] == 6 * 5        # 6 evaluation meetings x DEV_PER_CLIENT
    assert reports["fl-token"]["compare"]["system_b"].endswith("pretrained/hyp.txt")
    assert "compare" not in reports["pretrained"]
    # epsilon of this run (q = 0.5, T = 1) equals an independent dp-accounting computation
    eps = json.loads((out / "privacy" / "z0.5.json").read_text())
    assert (eps["sample_rate"], eps["rounds"], eps["noise_multiplier"]) == (0.5, 1, 0.5)
    import dp_accounting
    from dp_accounting import rdp
    event = dp_accounting.PoissonSampledDpEvent(0.5, dp_accounting.GaussianDpEvent(0.5))
    acc = rdp.RdpAccountant()
    acc.compose(event, 1)
    assert abs(eps["epsilon_rdp"] - acc.get_epsilon(1e-5)) < 1e-6 * acc.get_epsilon(1e-5)
    # the DP model carries its Gaussian release; the non-DP one none
    history = (out / "privacy" / "dp-token-z0.5-d1.history.txt").read_text()
    assert "aussian" in history, history
    # the FL run (fl-rounds) sampled its cohort by Poisson sampling from the 8 adapt meetings
    cohort = (out / "fl" / "fl-token" / "round-1" / "clients.txt").read_text().split()
    assert set(cohort) <= set((out / "data" / "adapt.units").read_text().split())
    assert (out / "data" / "adapt.units").read_text() == (out / "data" / "adapt.clients").read_text()
    # the DP rows state their unit of privacy and that sampling drew from the secure source
    assert "**Unit of privacy** of the DP rows: one client = one adaptation meeting" in results
    assert "Client sampling drew from the OS's secure source" in results
    assert " Code: commit " in results
    # a rerun reuses everything, and says so on stderr
    again = _run(out, env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "reusing" in again.stderr and "models/pretrained.pt" in again.stderr
    assert "pre-training the NNLM" not in again.stderr and "FL:" not in again.stderr
    for key in ("models/pretrained.pt.key", "models/fl-token.pt.key", "runs/fl-token/hyp.txt.key", "data/adapt.conf.tsv.key"):
        assert (out / key).is_file(), key
    assert "q=0.5 T=1" in (out / "models" / "fl-token.pt.key").read_text()
    # the results give both invocations and their summed run time, never the rerun's few seconds alone
    parts = (out / "runtime.tsv").read_text().splitlines()
    assert len(parts) == 2 and all(p.split("\t")[2].endswith(f"--tiny {AMI} {out}") for p in parts)
    total = sum(int(p.split("\t")[0]) for p in parts)
    assert f"Run time {total} s" in (out / "results.md").read_text() and "the sum of the 2 parts" in again.stdout


@pytest.mark.slow  # the whole --reduced mode: 17.6 min at nice 19 on the loaded 2 cores
def test_fl_recipe_reduced_every_row_has_an_interval(tmp_path):
    out = tmp_path / "out"
    env = _env()
    proc = subprocess.run(["bash", str(ROOT / "bin" / "fl-finetune-experiment"), "--reduced", str(AMI), str(out)],
                          capture_output=True, text=True, env=env, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = (out / "results.md").read_text()
    assert "AMI text synthesized by flite, decoded by pocketsphinx 5.1.1 (synthetic speech)" in text
    headings = ["## Table 2", "## Table 3", "## Table 4", "## Table 5", "### Table 5, every draw", "## Oracle",
                "## Training curve"]
    for heading in headings:
        rows = section_rows(text, heading)
        assert rows, heading
        for row in rows:
            assert any(c.startswith("[") or "bootstrap [" in c for c in row), (heading, row)
    # the DP rows: 3 draws each (the minimum), 3 noise multipliers
    dp = section_rows(text, "## Table 5")
    assert len(dp) == 3 and all(row[6] == "3" for row in dp), dp
    assert all(row[9].startswith("t [") for row in dp)
    # the curve of fl-token: t = 0 (pre-trained), 1, 2 (= the row itself)
    assert [r[0] for r in section_rows(text, "## Training curve")] == ["0", "1", "2"]
    assert (out / "fl_curve.png").stat().st_size > 1000
    # the short utterances: scored on fewer utterances than the whole evaluation set
    short = json.loads((out / "runs" / "pretrained" / "wer-short.json").read_text())
    whole = json.loads((out / "runs" / "pretrained" / "wer.json").read_text())
    assert 0 < short["sentences"] < whole["sentences"]
    # the exact command and this one invocation's run time
    assert "Made by `" in text and "PYTHON=" in text and "bin/fl-finetune-experiment --reduced" in text
    assert len((out / "runtime.tsv").read_text().splitlines()) == 1


def test_fl_recipe_refuses_a_public_sampling_seed_for_dp_rows(tmp_path):
    """DP rows sample from the OS's secure source: SAMPLE_SEED with DP rows is refused before
    anything runs (TEST_SEEDED_DP_SAMPLING=1 is the tests' way round it)."""
    env = _env()
    env["SAMPLE_SEED"] = "3"
    proc = _run(tmp_path / "out", env)
    assert proc.returncode != 0
    assert "SAMPLE_SEED=3 would make the DP rows' cohorts public" in proc.stderr
    assert not (tmp_path / "out" / "models").exists()
    env["CLIENT_BY"] = "household"
    env.pop("SAMPLE_SEED")
    proc = _run(tmp_path / "out2", env)
    assert proc.returncode != 0 and "CLIENT_BY must be meeting or speaker" in proc.stderr


def _stop_when(out: Path, env: dict, ready) -> subprocess.CompletedProcess:
    """Start the --tiny recipe and stop it with SIGTERM as soon as ``ready()`` holds."""
    return stop_when(["bash", str(ROOT / "bin" / "fl-finetune-experiment"), "--tiny", str(AMI), str(out)],
                     env, ready)[0]


def test_fl_recipe_resumes_a_stopped_row(tmp_path):
    """A federated row stopped mid-row (SIGTERM to the recipe, which stops fl-rounds at once) goes
    on from its last round when the recipe is rerun with the same settings, and ends with the
    model of an uninterrupted run, byte for byte (seeded, non-DP fl-token: 20 FedAdam rounds);
    a stopped row of other settings (SERVER_LR) is not resumed but started afresh; a resumed DP
    row's model carries all 20 releases (privacy-report: the epsilon of (z, q, T))."""
    import time

    out = tmp_path / "out"
    run = out / "fl" / "fl-token"
    rounds = 20
    env = _env()
    env["TINY_ROUNDS"] = str(rounds)

    def started(lr):  # fl-token of this SERVER_LR has written round 1
        def ready():
            try:
                return json.loads((run / "run.json").read_text())["hparams"]["lr"] == lr and \
                    (run / "model-1.pt").exists()
            except (OSError, ValueError):
                return False
        return ready

    # 1. SERVER_LR=0.02, stopped in fl-token's rounds
    other = dict(env, SERVER_LR="0.02")
    stopped = _stop_when(out, other, started(0.02))
    assert stopped.returncode == 143, stopped.stderr[-3000:]
    assert "FL: fl-token (20 rounds" in stopped.stderr
    assert "lr=0.02" in (tmp_path / "out" / "fl" / "fl-token.key").read_text()
    # 2. the default SERVER_LR: another key, so the stopped row starts afresh; stopped again
    stopped = _stop_when(out, env, started(0.01))
    assert stopped.returncode == 143, stopped.stderr[-3000:]
    assert "resuming" not in stopped.stderr and "FL: fl-token (20 rounds" in stopped.stderr
    # fl-rounds was stopped with the recipe (mid-row), not left running
    done = round_models(run)[-1]
    assert 1 <= done < rounds, done
    time.sleep(1)
    assert round_models(run)[-1] == done
    assert not (out / "models" / "fl-token.pt").exists()
    assert (out / "runtime.tsv").read_text().count("[stopped: exit 143]") == 2
    # 3. the same command again: fl-token goes on after its last round; stopped in the DP row
    dp_run = out / "fl" / "dp-token-z0.5-d1"
    again = _stop_when(out, env, lambda: (dp_run / "model-1.pt").exists())
    assert again.returncode == 143, again.stderr[-3000:]
    assert f"FL: resuming fl-token after round {done} of {rounds}" in again.stderr
    assert "FL: fl-token (" not in again.stderr
    assert "reusing OUT/models/pretrained.pt" in again.stderr
    dp_done = round_models(dp_run)[-1]
    assert 1 <= dp_done < rounds, dp_done
    # 4. and again: the DP row goes on too, the run completes
    again = _run(out, env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"FL: resuming dp-token-z0.5-d1 after round {dp_done} of {rounds}" in again.stderr
    assert "FL: " not in again.stderr.replace("FL: resuming dp-token", "")
    # the resumed DP model carries every round's release: privacy-report gives (z, q, T)'s epsilon
    history = json.loads(subprocess.run(["asrpriv", "privacy-report", "--json", str(out / "models" / "dp-token-z0.5-d1.pt")],
                                        capture_output=True, text=True, env=env, check=True).stdout)
    eps = json.loads((out / "privacy" / "z0.5.json").read_text())
    assert (eps["rounds"], len(history["releases"]), history["seeded"]) == (rounds, rounds, False)
    for key in ("epsilon_rdp", "epsilon_pld"):
        assert history[key] == pytest.approx(eps[key], rel=1e-9), key
    reports = [json.loads((run / f"round-{t}" / "report.json").read_text()) for t in range(1, rounds + 1)]
    assert [r["round"] for r in reports] == list(range(1, rounds + 1))
    assert round_models(run) == [0, rounds]   # the row's intermediate models removed, as before
    # an uninterrupted run of the same settings (run.json) gives the same model and state
    whole = uninterrupted_run(run / "run.json", tmp_path / "whole", env)
    assert (out / "models" / "fl-token.pt").read_bytes() == (whole / f"model-{rounds}.pt").read_bytes()
    assert (run / "state.pt").read_bytes() == (whole / "state.pt").read_bytes()
    assert (out / "models" / "fl-token.pt").read_bytes() != (out / "models" / "pretrained.pt").read_bytes()
    for t in range(1, rounds + 1):
        assert (run / f"round-{t}" / "clients.txt").read_text() == \
            (whole / f"round-{t}" / "clients.txt").read_text(), t


@pytest.mark.slow  # three --tiny runs: ~3-5 minutes on the loaded 2 cores
def test_row_jobs_make_the_rows_of_a_sequential_run_and_stop_together(tmp_path):
    """ROW_JOBS=2 trains the rows two at a time (and WORKERS=2 each round's clients two at a time)
    and gives the models, hypotheses and scores of ROW_JOBS=1 WORKERS=1 (seeded test run); each is a knob of
    speed, not of results (the results file does not list it as a difference); SIGTERM to the
    recipe stops both rows' fl-rounds at once and records the part as stopped."""
    from asrpriv.nnlm.modelfile import read_model_file
    from asrpriv.reports.common import changed_knobs

    env = dict(_env(), NOISE_SEED="3", TEST_SEEDED_DP_SAMPLING="1", TINY_ROUNDS="3")
    outs = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"jobs{jobs}"
        proc = subprocess.run(["bash", str(ROOT / "bin" / "fl-finetune-experiment"), "--tiny", str(AMI), str(out)],
                              capture_output=True, text=True, env=dict(env, ROW_JOBS=jobs, WORKERS=jobs),
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        outs[jobs] = out
    rows = ("fl-token", "dp-token-z0.5-d1")
    for row in rows:
        one = read_model_file(str(outs["1"] / "models" / f"{row}.pt"))["state_dict"]
        two = read_model_file(str(outs["2"] / "models" / f"{row}.pt"))["state_dict"]
        assert one.keys() == two.keys() and all(one[k].equal(two[k]) for k in one), row
        assert (outs["1"] / "runs" / row / "hyp.txt").read_bytes() == \
            (outs["2"] / "runs" / row / "hyp.txt").read_bytes()
        assert json.loads((outs["1"] / "runs" / row / "wer.json").read_text())["wer"] == \
            json.loads((outs["2"] / "runs" / row / "wer.json").read_text())["wer"]
    assert "ROW_JOBS=2" in (outs["2"] / "runtime.tsv").read_text()
    assert changed_knobs(["ROW_JOBS=2 WORKERS=2 OMP_NUM_THREADS=1 bin/fl-finetune-experiment A B"]) == []

    # SIGTERM while both rows are in their rounds (both round-1 models exist at once: a row's
    # round models are deleted when it ends, so the rows overlap): both fl-rounds end, the part
    # is recorded stopped
    out = tmp_path / "stopped"
    both = [out / "fl" / row / "model-1.pt" for row in rows]
    stopped = _stop_when(out, dict(env, ROW_JOBS="2", TINY_ROUNDS="200"),
                         lambda: all(p.exists() for p in both))
    assert stopped.returncode == 143, stopped.stderr[-3000:]
    assert "[stopped: exit 143]" in (out / "runtime.tsv").read_text()
    left = subprocess.run(["pgrep", "-f", f"run-dir {out}/fl/"], capture_output=True, text=True)
    assert left.stdout == "", left.stdout
    for row in rows:  # stopped mid-row, well before round 200
        assert not (out / "models" / f"{row}.pt").exists()
