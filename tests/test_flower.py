"""The Flower app (issue 20): the same server models as the shell recipe, failures dropped.

One tiny LSTM, four clients (AMI scenario meetings) of six utterances each; Flower's
simulation engine (Ray) with two virtual nodes. Runs in the default suite (~60 s).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import AMI, ROOT, run_proc

pytest.importorskip("flwr")
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    work = tmp_path_factory.mktemp("flower")
    pre = work / "pre.txt"
    lines = (AMI / "train_text").read_text(encoding="utf-8").splitlines()[:400]
    pre.write_text("".join(line.partition(" ")[2] + "\n" for line in lines), encoding="utf-8")
    run_proc(["finetune-lm", "-q", "--arch", "lstm", "--emb-dim", "8", "--hidden-dim", "8",
              "--epochs", "1", "--seed", "1", "--train", str(pre), "-o", str(work / "init.pt")],
             check=True)
    rows = (AMI / "adapt" / "nbest.tsv").read_text(encoding="utf-8").splitlines()
    header, kept, count = rows[0], [], {}
    client_col = header.split("\t").index("client")
    for row in rows[1:]:
        f = row.split("\t")
        if f[2] != "1":
            continue
        c = f[client_col]
        if c not in count and len(count) == 4:
            continue
        count[c] = count.get(c, 0) + 1
        if count[c] <= 6:
            kept.append(row)
    (work / "adapt.tsv").write_text(header + "\n" + "\n".join(kept) + "\n", encoding="utf-8")
    (work / "clients.txt").write_text("".join(c + "\n" for c in sorted(count)), encoding="utf-8")
    return work


def _shell_round(work, model, t, out, *aggregate_args):
    run_proc(["sample-clients", "-q", "--rate", "0.8", "--round", str(t), "--seed", "3",
              str(work / "clients.txt"), "-o", str(out / f"r{t}.txt")], check=True)
    run_proc(["finetune-lm", "-q", "--init", str(model), "--train", str(work / "adapt.tsv"),
              "--recipe", "client-001", "--by-client", str(out / f"d{t}"), "--clients",
              str(out / f"r{t}.txt"), "--seed", "3", *(["--clip", "0.5"] if aggregate_args else [])],
             check=True)
    new = out / f"m{t}.pt"
    run_proc(["aggregate", "-q", "--server", "fedadam", "--model", str(model), "--state",
              str(out / "state.pt"), *aggregate_args, "-o", str(new), str(out / f"d{t}")],
             check=True)
    return new


def _raylets() -> list[str]:
    """PIDs of Ray's raylet processes (ours must be gone when fl-simulate returns)."""
    out = subprocess.run(["pgrep", "-f", "raylet"], capture_output=True, text=True)
    return out.stdout.split()


def test_asrpriv_cli_does_not_import_flwr():
    code = "import sys, asrpriv, asrpriv.cli, asrpriv.api; print('flwr' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_three_rounds_equal_the_shell_recipe(setup, tmp_path):
    work = setup
    run = tmp_path / "run"
    before = set(_raylets())
    proc = run_proc(["fl-simulate", "--init", str(work / "init.pt"), "--train",
                     str(work / "adapt.tsv"), "--rounds", "3", "--sample-rate", "0.8",
                     "--seed", "3", "--num-supernodes", "2", "--out", str(run)])
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    shell = tmp_path / "shell"
    shell.mkdir()
    model = work / "init.pt"
    for t in range(3):
        model = _shell_round(work, model, t, shell)
        assert (shell / f"r{t}.txt").read_text() == (run / f"round_{t + 1}" / "clients.txt").read_text()
    # the same sampled clients, client updates and FedAdam step: identical bytes
    assert (run / "round_3" / "model.pt").read_bytes() == model.read_bytes()
    assert (run / "state.pt").read_bytes() == (shell / "state.pt").read_bytes()
    assert (run / "round_3" / "failed.txt").read_text() == ""
    import time

    deadline = time.monotonic() + 30  # Ray's processes exit asynchronously after shutdown
    while set(_raylets()) - before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not set(_raylets()) - before, "Ray processes left behind"


def test_failed_client_dropped_and_dp_matches_the_shell_aggregate(setup, tmp_path):
    work = setup
    run = tmp_path / "run"
    dp = ["--clip", "0.5", "--noise-multiplier", "0.5", "--expected-clients", "3.2"]
    proc = run_proc(["fl-simulate", "--init", str(work / "init.pt"), "--train",
                     str(work / "adapt.tsv"), "--rounds", "1", "--sample-rate", "0.8",
                     "--seed", "3", "--num-supernodes", "2", "--out", str(run), *dp,
                     "--noise-seed", "7", "--fail-client", "ES2002b"])
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    round_dir = run / "round_1"
    assert "ES2002b" in (round_dir / "clients.txt").read_text().split()
    assert (round_dir / "failed.txt").read_text().split() == ["ES2002b"]
    assert not (round_dir / "ES2002b.delta.pt").exists()
    # the server round over the deltas that arrived, through the CLI with the same noise seed
    deltas = sorted(str(p) for p in round_dir.glob("*.delta.pt"))
    other = tmp_path / "cli.pt"
    run_proc(["aggregate", "-q", "--server", "fedadam", "--model", str(work / "init.pt"),
              "--state", str(tmp_path / "state.pt"), *dp, "--sample-rate", "0.8", "--seed", "7",
              "--allow-seeded-test-noise", "-o", str(other), *deltas], check=True)
    ours = torch.load(round_dir / "model.pt", weights_only=True)
    theirs = torch.load(other, weights_only=True)
    for name, tensor in theirs["state_dict"].items():
        assert torch.equal(ours["state_dict"][name], tensor), name
    history = json.loads(ours["privacy_history"]) if isinstance(ours["privacy_history"], str) \
        else ours["privacy_history"]
    releases = history["releases"]
    assert [r["mechanism"] for r in releases] == ["gaussian"]
    assert releases[0]["params"]["noise_multiplier"] == 0.5
    assert releases[0]["params"]["sample_rate"] == 0.8
    assert ours["federated_round"]["noise_multiplier"] == 0.5


def test_missing_flower_is_a_one_line_error(tmp_path):
    code = ("import sys; sys.modules['flwr'] = None; from asrpriv.cli import main; "
            "sys.argv = ['asrpriv', 'fl-simulate', '--init', 'x', '--train', 'y', '--rounds', '1',"
            " '--sample-rate', '1', '--out', %r]; main()" % str(tmp_path / "o"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "asrpriv fl-simulate: Flower is not installed: pip install 'asrpriv[flower]'"]
