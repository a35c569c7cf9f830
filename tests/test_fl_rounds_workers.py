"""``fl-rounds --workers N``: a round's clients trained in N forked processes.

The claim: the same files as ``--workers 1`` (which tests/test_fl_rounds.py ties byte for byte
to the shell rounds), for FedAvg, FedAdam and DP with an empty round; a speed knob, so a run
may be resumed with another worker count. And the process manners: a dead worker is a
one-line error naming it, the workers die with the step (SIGTERM or SIGKILL of the step),
unseeded workers never repeat one another's dropout draws.

Also here, the changes that made the round cheaper, each against the path it replaced:
:class:`asrpriv.nnlm.train.PlainSGD` against ``torch.optim.SGD`` (bit for bit), FedAdam in one
pass against two, loading a model or training without importing ``torch._dynamo``, and
:func:`asrpriv.federated.client.reload_init` against :func:`load_init`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import run_cli
from _flower_helpers import ok
from test_fl_rounds import CLIENTS, fl_rounds, seed_with_empty_round, work  # noqa: F401

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def same_run(a, b, rounds):
    for t in range(1, rounds + 1):
        assert (a / f"model-{t}.pt").read_bytes() == (b / f"model-{t}.pt").read_bytes(), t
        assert (a / f"round-{t}" / "clients.txt").read_text() == \
            (b / f"round-{t}" / "clients.txt").read_text()
        deltas = sorted(p.name for p in (a / f"round-{t}" / "deltas").glob("*")) \
            if (a / f"round-{t}" / "deltas").exists() else []
        for name in deltas:
            assert (a / f"round-{t}" / "deltas" / name).read_bytes() == \
                (b / f"round-{t}" / "deltas" / name).read_bytes(), (t, name)
    assert (a / "state.pt").read_bytes() == (b / "state.pt").read_bytes()


@pytest.mark.parametrize("server,dp", [("fedavg", False), ("fedadam", False), ("fedadam", True)])
def test_workers_give_the_one_process_files(work, tmp_path, server, dp):  # noqa: F811
    rate, rounds = 0.5, 3
    sample_seed = seed_with_empty_round(rate, rounds)
    dp_args = (["--clip", "0.3", "--noise-multiplier", "0.7", "--expected-clients", "2"]
               if dp else [])
    noise = 7 if dp else None
    fl_rounds(work, tmp_path / "one", rounds, rate, sample_seed, 3, server, dp_args, noise)
    fl_rounds(work, tmp_path / "two", rounds, rate, sample_seed, 3, server, dp_args, noise,
              extra=["--workers", "2"])
    same_run(tmp_path / "one", tmp_path / "two", rounds)
    run_json = json.loads((tmp_path / "two" / "run.json").read_text())
    assert "workers" not in run_json  # a speed knob: not a setting of the run


def test_resume_with_another_worker_count(work, tmp_path):  # noqa: F811
    fl_rounds(work, tmp_path / "ref", 3, 0.75, 1, 3, "fedadam")
    fl_rounds(work, tmp_path / "run", 2, 0.75, 1, 3, "fedadam", extra=["--workers", "2"])
    fl_rounds(work, tmp_path / "run", 3, 0.75, 1, 3, "fedadam", extra=["--resume"])
    same_run(tmp_path / "ref", tmp_path / "run", 3)


def test_two_clients_with_equal_updates_both_count(work, tmp_path):  # noqa: F811
    """Two clients whose data (and so, seeded, whose deltas) are equal are two clients: fl-rounds
    made both deltas itself, so the copy check (for files) does not refuse them."""
    lines = (work / "adapt.tsv").read_text(encoding="utf-8").splitlines()
    twin = [line for line in lines[1:] if line.split("\t")[1] == "ES2002a"]
    again = [line.replace("ES2002a", "TWIN", 1).replace("\tES2002a\t", "\tTWIN\t") for line in twin]
    (tmp_path / "adapt.tsv").write_text("\n".join([lines[0], *twin, *again]) + "\n", encoding="utf-8")
    run = tmp_path / "run"
    ok(run_cli(["fl-rounds", "-q", "--init", str(work / "base.pt"), "--train",
                str(tmp_path / "adapt.tsv"), "--run-dir", str(run), "--rounds", "1",
                "--sample-rate", "1", "--sample-seed", "1", "--seed", "1", "--threads", "1",
                "--save-deltas", "--workers", "2"]))
    report = json.loads((run / "round-1" / "report.json").read_text())
    assert report["contributed"] == ["ES2002a", "TWIN"]
    a, b = sorted((run / "round-1" / "deltas").glob("*.delta.pt"))
    import torch

    da = torch.load(a, weights_only=True)["state_dict"]
    db = torch.load(b, weights_only=True)["state_dict"]
    assert all(torch.equal(da[k], db[k]) for k in da)


@pytest.mark.parametrize("extra,says", [
    (["--workers", "2", "--batch-clients", "2"], "do not combine"),
    (["--workers", "2", "--device", "cuda"], "CPU only"),
    (["--workers", "0"], "workers"),
])
def test_refused_combinations(work, tmp_path, extra, says):  # noqa: F811
    result = run_cli(["fl-rounds", "-q", "--init", str(work / "base.pt"), "--train",
                      str(work / "adapt.tsv"), "--run-dir", str(tmp_path / "r"), "--rounds", "1",
                      "--sample-rate", "0.5", *extra])
    assert result.exit_code == 2
    assert says in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def pool_inputs(work):  # noqa: F811
    from asrpriv.federated.client import load_init
    from asrpriv.federated.rounds import RoundSettings, client_data

    settings = RoundSettings(init=str(work / "base.pt"), train=str(work / "adapt.tsv"),
                             run_dir="", rounds=1, sample_rate=1.0, threads=1, workers=2)
    return load_init(str(work / "base.pt")), client_data(settings), settings


def test_a_dead_worker_is_an_error_naming_it(work):  # noqa: F811
    from asrpriv.errors import AsrprivError
    from asrpriv.federated.client_pool import ClientPool

    init, groups, settings = pool_inputs(work)
    with ClientPool(init, groups, settings, 2) as pool:
        pool._procs[0].kill()
        pool._procs[0].join(5)
        with pytest.raises(AsrprivError, match="client worker 1 died"):
            pool.updates(init, CLIENTS, seed=1)


def test_unseeded_workers_draw_their_own_dropout(work):  # noqa: F811
    """Without a seed each forked worker reseeds torch from the OS: the same client trained by
    the two workers at once gets two different updates (dropout), as two in-process clients do."""
    import torch

    from asrpriv.federated.client_pool import ClientPool

    init, groups, settings = pool_inputs(work)
    groups = {**groups, "TWIN": groups["ES2002a"]}
    with ClientPool(init, groups, settings, 2) as pool:
        updates = pool.updates(init, ["ES2002a", "TWIN"], seed=None)
        seeded = pool.updates(init, ["ES2002a", "TWIN"], seed=5)
    a, b = updates["ES2002a"].delta, updates["TWIN"].delta
    assert not all(torch.equal(a[k], b[k]) for k in a)
    a, b = seeded["ES2002a"].delta, seeded["TWIN"].delta
    assert all(torch.equal(a[k], b[k]) for k in a)


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc: no procps needed)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_workers_die_with_the_step(work, tmp_path, sig):  # noqa: F811
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "asrpriv", "fl-rounds", "-q", "--init", str(work / "base.pt"),
         "--train", str(work / "adapt.tsv"), "--run-dir", str(tmp_path / "r"), "--rounds", "500",
         "--sample-rate", "1", "--threads", "1", "--workers", "2"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "r" / "model-1.pt").exists():
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline
            time.sleep(0.1)
        workers = children(proc.pid)
        assert len(workers) == 2
        proc.send_signal(sig)
        proc.wait(30)
        assert proc.returncode in (-sig, 128 + sig)
        deadline = time.monotonic() + 20
        while any(alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(alive(w) for w in workers)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_plain_sgd_is_torch_sgd_bit_for_bit():
    import torch

    from asrpriv.nnlm.model import build_model, make_config
    from asrpriv.nnlm.train import PlainSGD, clipped_step

    torch.manual_seed(0)
    base = build_model(make_config("lstm", 50, emb_dim=8, hidden_dim=16, layers=2))
    finals = []
    for make in (lambda ps: torch.optim.SGD(ps, lr=0.7, foreach=True), lambda ps: PlainSGD(ps, 0.7)):
        model = build_model(make_config("lstm", 50, emb_dim=8, hidden_dim=16, layers=2))
        model.load_state_dict(base.state_dict())
        params = list(model.parameters())
        opt = make(params)
        torch.manual_seed(1)
        for step in range(4):
            x = torch.randint(0, 50, (3, 7))
            loss = model(x).logsumexp(-1).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            clipped_step(opt, params, 0.5 if step % 2 else 0.0, linear=True)
        finals.append({k: v.clone() for k, v in model.state_dict().items()})
    assert all(torch.equal(finals[0][k], finals[1][k]) for k in finals[0])


def test_fedadam_in_one_pass_writes_the_two_pass_files(work, tmp_path, monkeypatch):  # noqa: F811
    """A model under ONE_PASS_BYTES is stepped once (theta, m, v together); the files are those
    of the two-pass path (moments first, then theta), round after round."""
    from asrpriv.federated import aggregate

    fl_rounds(work, tmp_path / "one", 3, 0.75, 1, 3, "fedadam")
    monkeypatch.setattr(aggregate, "ONE_PASS_BYTES", 0)
    fl_rounds(work, tmp_path / "two", 3, 0.75, 1, 3, "fedadam")
    same_run(tmp_path / "one", tmp_path / "two", 3)


def test_loading_and_training_do_not_import_dynamo(work):  # noqa: F811
    """torch._dynamo costs ~1 s of every step's start: building a model to load it, and the
    client recipe's optimizer, must not import it."""
    code = (
        "import sys\n"
        "from asrpriv.federated.client import load_init, client_update\n"
        f"init = load_init({str(work / 'base.pt')!r})\n"
        "client_update(init, [['hello', 'world'], ['good', 'morning', 'all']], seed=1)\n"
        "print('torch._dynamo' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "src")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_reload_init_is_load_init(work, tmp_path):  # noqa: F811
    import torch

    from asrpriv.federated.client import load_init, reload_init

    fl_rounds(work, tmp_path / "r", 1, 1.0, 1, 3, "fedavg")
    init = load_init(str(work / "base.pt"))
    state, module = init.state, init.model
    again = reload_init(init, str(tmp_path / "r" / "model-1.pt"))
    fresh = load_init(str(tmp_path / "r" / "model-1.pt"))
    assert again.state is state and again.model is module  # in place: the workers see it
    assert again.fingerprint == fresh.fingerprint != init.fingerprint
    assert all(torch.equal(again.state[k], fresh.state[k]) for k in fresh.state)
    assert again.privacy == fresh.privacy
    # another shape: loaded afresh, not copied into the old tensors
    from _flower_helpers import tiny_lm

    other = tiny_lm(tmp_path, 300, "other.pt")
    lm = reload_init(again, str(other))
    assert lm.state is not state and lm.fingerprint == load_init(str(other)).fingerprint


def test_too_little_shared_memory_is_said_before_anything_starts(work, tmp_path, monkeypatch):  # noqa: F811
    """A container's small /dev/shm would kill the workers with SIGBUS: measured and refused."""
    from asrpriv.federated import client_pool

    small = tmp_path / "shm"
    small.mkdir()
    real = os.statvfs

    class Tiny:  # a /dev/shm with 4 KiB free (the tiny test model needs ~100 KiB x 5)
        f_bavail, f_frsize = 1, 4096

    monkeypatch.setattr(client_pool, "SHM_DIR", str(small))
    monkeypatch.setattr(client_pool.os, "statvfs",
                        lambda p: Tiny() if p == str(small) else real(p))
    result = run_cli(["fl-rounds", "-q", "--init", str(work / "base.pt"), "--train",
                      str(work / "adapt.tsv"), "--run-dir", str(tmp_path / "r"), "--rounds", "1",
                      "--sample-rate", "0.5", "--workers", "2"])
    assert result.exit_code == 2
    assert "shared memory" in result.stderr and "--workers 2 needs" in result.stderr
