"""``asrpriv fl-rounds``: T federated rounds in one process give the shell rounds' files.

The shell round is the three steps of the recipes: ``sample-clients`` + ``finetune-lm
--by-client`` + ``aggregate --server`` (one thread, the same seeds). Compared byte for byte:
every round's cohort, delta, model and the server state, for FedAvg, FedAdam and DP (clip,
fixed denominator, seeded test noise; the sampling seed chosen so that one round's cohort is
empty, which the shell round now releases as the noise alone too). Tolerance: none -- the same
library calls on the same float32 tensors.

And the privacy claim: under DP (secure sampling, secure noise), ``privacy-report`` of
``RUN/model-T.pt`` gives the epsilon that ``privacy-report --noise-multiplier Z --sample-rate
Q --rounds T`` gives, whatever the cohorts drawn.
"""

from __future__ import annotations

import json

import pytest

from conftest import AMI, run_cli
from _flower_helpers import ok, tiny_lm

from asrpriv.federated.sampling import poisson_sample

CLIENTS = ["ES2002a", "ES2002b", "ES2002c", "ES2002d"]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """base.pt (tiny Transformer), adapt.tsv (rank-1 rows of 4 clients), clients.txt."""
    d = tmp_path_factory.mktemp("flrounds")
    tiny_lm(d, 600, "base.pt")
    keep = {"ES2002a": 6, "ES2002b": 5, "ES2002c": 4, "ES2002d": 5}
    lines = (AMI / "adapt" / "nbest.tsv").read_text(encoding="utf-8").splitlines()
    rows = [lines[0]]
    for line in lines[1:]:
        fields = line.split("\t")
        if fields[1] in keep and fields[2] == "1" and keep[fields[1]] > 0:
            keep[fields[1]] -= 1
            rows.append(line)
    (d / "adapt.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (d / "clients.txt").write_text("".join(c + "\n" for c in CLIENTS), encoding="utf-8")
    return d


def shell_rounds(work, d, rounds, rate, sample_seed, seed, server, dp_args=(), noise_seed=None,
                 noise_draw=0):
    """The recipes' shell rounds (one process per step), the empty cohort included."""
    d.mkdir()
    (d / "model-0.pt").write_bytes((work / "base.pt").read_bytes())
    seeded = ["--allow-seeded-test-noise"] if noise_seed is not None else []
    clip = list(dp_args[dp_args.index("--clip"):dp_args.index("--clip") + 2]) if dp_args else []
    for t in range(1, rounds + 1):
        cohort = d / f"c{t}.txt"
        ok(run_cli(["sample-clients", "-q", "--rate", str(rate), "--round", str(t), "--seed",
                    str(sample_seed), str(work / "clients.txt"), "-o", str(cohort)]))
        if not cohort.read_text() and not dp_args:  # no DP: the model is carried over
            (d / f"model-{t}.pt").write_bytes((d / f"model-{t - 1}.pt").read_bytes())
            continue
        ok(run_cli(["finetune-lm", "-q", "--init", str(d / f"model-{t - 1}.pt"), "--train",
                    str(work / "adapt.tsv"), "--recipe", "client-001", "--by-client",
                    str(d / f"d{t}"), "--clients", str(cohort), "--seed", str(seed * 100000 + t),
                    "--threads", "1", *clip, *seeded]))
        # the seed rule written out (asrpriv.federated.seeds): S * 100000 + draw * 1000 + t
        noise = (["--seed", str(noise_seed * 100000 + noise_draw * 1000 + t)]
                 if noise_seed is not None else [])
        ok(run_cli(["aggregate", "-q", "--server", server, "--model", str(d / f"model-{t - 1}.pt"),
                    "--state", str(d / "state.pt"), "-o", str(d / f"model-{t}.pt"), *dp_args,
                    *noise, *seeded, str(d / f"d{t}")]))
    return d


def fl_rounds(work, run, rounds, rate, sample_seed, seed, server, dp_args=(), noise_seed=None,
              extra=()):
    seeded = ["--allow-seeded-test-noise"] if noise_seed is not None else []
    noise = ["--noise-seed", str(noise_seed)] if noise_seed is not None else []
    dp = [a for a in dp_args if a not in ("--sample-rate", str(rate))]
    return ok(run_cli(["fl-rounds", "-q", "--init", str(work / "base.pt"), "--train",
                       str(work / "adapt.tsv"), "--run-dir", str(run), "--rounds", str(rounds),
                       "--sample-rate", str(rate), "--sample-seed", str(sample_seed), "--seed",
                       str(seed), "--server", server, "--threads", "1", "--save-deltas",
                       *dp, *noise, *seeded, *extra]))


def assert_same_files(run, shell, rounds):
    for t in range(1, rounds + 1):
        cohort = (shell / f"c{t}.txt").read_text()
        assert (run / f"round-{t}" / "clients.txt").read_text() == cohort, t
        for name in cohort.split():
            assert (run / f"round-{t}" / "deltas" / f"{name}.delta.pt").read_bytes() == \
                (shell / f"d{t}" / f"{name}.delta.pt").read_bytes(), (t, name)
        assert (run / f"model-{t}.pt").read_bytes() == (shell / f"model-{t}.pt").read_bytes(), t
    assert (run / "state.pt").read_bytes() == (shell / "state.pt").read_bytes()


def seed_with_empty_round(rate, rounds):
    """A sampling seed whose cohorts are empty in exactly one round (not the first)."""
    for s in range(1000):
        sizes = [len(poisson_sample(CLIENTS, rate, t, s)) for t in range(1, rounds + 1)]
        if sizes[0] and sizes.count(0) == 1:
            return s
    raise AssertionError("no such seed")


@pytest.mark.parametrize("server", ["fedavg", "fedadam"])
def test_fl_rounds_equal_shell_rounds(work, tmp_path, server):
    """No DP, 3 rounds (one with an empty cohort: the model carried over): the same bytes."""
    rate, rounds = 0.4, 3
    sample_seed = seed_with_empty_round(rate, rounds)
    result = fl_rounds(work, tmp_path / "run", rounds, rate, sample_seed, 7, server)
    assert result.stdout.strip() == str(tmp_path / "run" / f"model-{rounds}.pt")
    shell = shell_rounds(work, tmp_path / "shell", rounds, rate, sample_seed, 7, server)
    assert_same_files(tmp_path / "run", shell, rounds)
    reports = [json.loads((tmp_path / "run" / f"round-{t}" / "report.json").read_text())
               for t in range(1, rounds + 1)]
    assert [r["updated"] for r in reports].count(False) == 1
    assert (tmp_path / "run" / "model-3.pt").read_bytes() != (work / "base.pt").read_bytes()


@pytest.mark.parametrize("draw", [0, 2])
def test_fl_rounds_dp_equal_shell_rounds_and_release_every_round(work, tmp_path, draw):
    """DP (seeded test noise and sampling): the same bytes as the shell rounds, and the
    empty round released the noise alone (every round is one release of the history).
    --noise-draw D: round t's noise seed is S * 100000 + D * 1000 + t (run.json names D)."""
    rate, rounds, z, clip = 0.4, 3, 1.0, 0.5
    sample_seed = seed_with_empty_round(rate, rounds)
    dp = ["--clip", str(clip), "--noise-multiplier", str(z), "--expected-clients", "1.6",
          "--sample-rate", str(rate)]
    run = tmp_path / "run"
    extra = ("--noise-draw", str(draw)) if draw else ()
    result = fl_rounds(work, run, rounds, rate, sample_seed, 3, "fedadam", dp, noise_seed=11,
                       extra=extra)
    assert "seeded" in result.stderr and "NOT private" in result.stderr
    shell = shell_rounds(work, tmp_path / "shell", rounds, rate, sample_seed, 3, "fedadam", dp,
                         noise_seed=11, noise_draw=draw)
    settings = json.loads((run / "run.json").read_text())
    assert settings.get("noise_draw") == (draw or None)  # draw 0: run.json as before
    assert_same_files(run, shell, rounds)
    reports = [json.loads((run / f"round-{t}" / "report.json").read_text())
               for t in range(1, rounds + 1)]
    assert all(r["updated"] and r["release"] for r in reports)
    assert [r["contributed"] for r in reports].count([]) == 1
    history = json.loads(ok(run_cli(["privacy-report", "--json", str(run / "model-3.pt")])).stdout)
    assert len(history["releases"]) == rounds and history["seeded"]


@pytest.mark.parametrize("stopped_in", [1, 2])
def test_resume_after_a_stop_between_model_and_state(work, tmp_path, stopped_in):
    """A run stopped after round t's model was written but before its state (the model is
    written first): --resume runs round t again from model-(t-1).pt and its state, and the
    seeded FedAdam run ends with the uninterrupted run's model and state, byte for byte.
    Round 1 has no state before it (no state.pt at all); round 2 has round 1's."""
    rate, rounds, server = 0.6, 3, "fedadam"
    whole = tmp_path / "whole"
    fl_rounds(work, whole, rounds, rate, 5, 7, server)
    run = tmp_path / "run"
    fl_rounds(work, run, stopped_in, rate, 5, 7, server)
    if stopped_in == 1:
        (run / "state.pt").unlink()  # round 1's state was never written
    else:  # round 1's state, as round 2 left it before writing its own
        part = tmp_path / "part"
        fl_rounds(work, part, 1, rate, 5, 7, server)
        (run / "state.pt").write_bytes((part / "state.pt").read_bytes())
    # the model and round directory of the round that was stopped (report and deltas)
    assert (run / f"model-{stopped_in}.pt").exists()
    assert (run / f"round-{stopped_in}" / "report.json").exists()
    (run / f"round-{stopped_in}" / "deltas" / "stale.delta.pt").write_bytes(b"")
    fl_rounds(work, run, rounds, rate, 5, 7, server, extra=("--resume",))
    for t in range(1, rounds + 1):
        assert (run / f"model-{t}.pt").read_bytes() == (whole / f"model-{t}.pt").read_bytes(), t
    assert (run / "state.pt").read_bytes() == (whole / "state.pt").read_bytes()
    assert not (run / f"round-{stopped_in}" / "deltas" / "stale.delta.pt").exists()
    # a state that belongs to neither model-t nor model-(t-1) is still refused
    other = tmp_path / "other"
    fl_rounds(work, other, 2, rate, 6, 8, server)
    (run / "state.pt").write_bytes((other / "state.pt").read_bytes())
    (run / "model-3.pt").unlink()
    bad = run_cli(["fl-rounds", "-q", "--init", str(work / "base.pt"), "--train",
                   str(work / "adapt.tsv"), "--run-dir", str(run), "--rounds", "3",
                   "--sample-rate", str(rate), "--sample-seed", "5", "--seed", "7", "--server",
                   server, "--threads", "1", "--save-deltas", "--resume"])
    assert bad.exit_code == 2 and "does not belong to model-2.pt" in bad.stderr, bad.stderr
    assert (run / "model-2.pt").exists()


def test_seeded_sampling_under_dp_needs_the_test_flag(work, tmp_path):
    result = run_cli(["fl-rounds", "-q", "--init", str(work / "base.pt"), "--train",
                      str(work / "adapt.tsv"), "--run-dir", str(tmp_path / "r"), "--rounds", "1",
                      "--sample-rate", "0.5", "--sample-seed", "1", "--clip", "0.5",
                      "--noise-multiplier", "1", "--expected-clients", "2"])
    assert result.exit_code == 2
    assert "--sample-seed" in result.stderr and "secret sampling" in result.stderr
    assert not (tmp_path / "r").exists()


def test_dp_epsilon_of_the_model_is_that_of_z_q_t(work, tmp_path):
    """Secure sampling and noise, q 0.3 of 4 clients (an empty cohort has probability 0.24 a
    round): the model's history gives privacy-report's epsilon for (z, q, T), and resuming
    adds the missing rounds."""
    z, q = 2.0, 0.3
    run = tmp_path / "run"
    args = ["fl-rounds", "-q", "--init", str(work / "base.pt"), "--train",
            str(work / "adapt.tsv"), "--run-dir", str(run), "--sample-rate", str(q),
            "--clip", "0.5", "--noise-multiplier", str(z), "--expected-clients", "1.2",
            "--server", "fedavg", "--threads", "1", "--epochs", "1"]
    ok(run_cli([*args, "--rounds", "2"]))
    assert run_cli([*args, "--rounds", "4"]).exit_code == 2  # not empty: --resume needed
    ok(run_cli([*args, "--rounds", "4", "--resume"]))
    ours = json.loads(ok(run_cli(["privacy-report", "--json", str(run / "model-4.pt")])).stdout)
    theirs = json.loads(ok(run_cli(["privacy-report", "--json", "--noise-multiplier", str(z),
                                    "--sample-rate", str(q), "--rounds", "4"])).stdout)
    assert not ours["seeded"] and len(ours["releases"]) == 4  # (mixed: base.pt saw private text)
    for key in ("epsilon_rdp", "epsilon_pld"):
        assert ours[key] == pytest.approx(theirs[key], rel=1e-9), key
    sampled = [(run / f"round-{t}" / "clients.txt").read_text().split() for t in range(1, 5)]
    assert all(set(c) <= set(CLIENTS) for c in sampled)


def test_speakers_as_clients(work, tmp_path):
    """CLIENT_BY=speaker: select-nbest --list-clients --utt2client lists the speakers of the
    selected utterances, and fl-rounds --utt2client samples exactly that population."""
    utt2spk = AMI / "adapt" / "utt2spk"
    listed = ok(run_cli(["select-nbest", "-q", "--list-clients", "--utt2client", str(utt2spk),
                         str(work / "adapt.tsv")])).stdout.split()
    speakers = {line.split()[1] for line in utt2spk.read_text().splitlines()
                if line.split()[0] in {r.split("\t")[0] for r in
                                       (work / "adapt.tsv").read_text().splitlines()[1:]}}
    assert listed == sorted(speakers) and not set(listed) & set(CLIENTS)  # speakers, not meetings
    run = tmp_path / "run"
    ok(run_cli(["fl-rounds", "-q", "--init", str(work / "base.pt"), "--train",
                str(work / "adapt.tsv"), "--utt2client", str(utt2spk), "--run-dir", str(run),
                "--rounds", "1", "--sample-rate", "1", "--server", "fedavg", "--threads", "1"]))
    report = json.loads((run / "round-1" / "report.json").read_text())
    assert report["sampled"] == listed
    bad = run_cli(["select-nbest", "-q", "--utt2client", str(utt2spk), str(work / "adapt.tsv")])
    assert bad.exit_code == 2 and "--list-clients" in bad.stderr
