"""Benchmark: ``asrpriv fl-rounds`` (T federated rounds in one process) vs the shell round of
the recipes (per round three processes: ``sample-clients``, ``finetune-lm --by-client``,
``aggregate --server fedadam --state``), in client updates per second, on the same cores.

Model: paper 001's LSTM LM shape (emb 100, 2 layers of 512, vocabulary = AMI ``train_text``
words seen twice: ~7.4k; ``benchmarks/_paper001.py``), random initial weights (speed does not
depend on them). Clients: the rank-1 hypotheses of the bundled AMI adaptation N-best, cut into
``--clients`` clients of 24 consecutive utterances (paper 001's ~24 utterances per client).
Recipe ``client-001``, FedAdam (lr 0.001), Poisson rate ``--rate``, ``--rounds`` rounds, the
same seeds on both sides (``--sample-seed 1``: no DP here, the seed only makes the cohorts
equal).

Both sides get the machine's cores (``--cores``, default: the usable CPUs):

* the shell round runs ``finetune-lm --threads CORES`` (its default thread count, torch's
  intra-op threads: the best a single shell step can do with the cores);
* ``fl-rounds --threads CORES`` (one process, one client at a time): its final model is
  checked byte-identical to the shell's (the same thread count gives the same bits);
* ``fl-rounds --workers CORES --threads 1`` (``asrpriv.federated.client_pool``: a round's
  clients in CORES forked processes; the same files as ``--workers 1 --threads 1``, tested
  in tests/test_fl_rounds_workers.py, not here: its thread count differs from the shell's).

Rates are whole wall-clock times, interpreter starts and torch imports included: the sum of
the cohorts' sizes over the seconds from the first command's start to the last one's end.
With ``--batch-clients K`` (K > 1), ``fl-rounds --batch-clients K`` (grouped products over K
stacked copies of the model, ``asrpriv.federated.batched``: meant for a GPU) is timed too.
The ratio recorded is the fastest fl-rounds mode's over the shell round's, and says which.

    .venv/bin/python benchmarks/bench_fl_rounds.py [--clients 114] [--rate 0.1] [--rounds 4]
        [--cores N] [--batch-clients K] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
ENV.pop("OMP_NUM_THREADS", None)  # every command says --threads


def make_inputs(work: Path, clients: int) -> None:
    """work/base.pt (paper-shape LSTM), work/clients.tsv (rank-1 rows, client column),
    work/clients.txt (the population)."""
    from _paper001 import UTTS_PER_CLIENT, write_client_inputs

    model, vocab, texts = write_client_inputs(work, clients)
    n = len(texts) // UTTS_PER_CLIENT
    (work / "clients.txt").write_text("".join(f"c{k:03d}\n" for k in range(n)), encoding="utf-8")
    print(f"# paper-shape LSTM (emb 100, 2x512), vocabulary {len(vocab):,}, "
          f"{sum(p.numel() for p in model.parameters()):,} parameters; {n} clients x "
          f"{UTTS_PER_CLIENT} utterances")


def asrpriv(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "asrpriv", *args, "-q"], check=True, env=ENV,
                   stdout=subprocess.DEVNULL)


DEVICE: list[str] = []   # ["--device", "cuda"] with --device cuda (both sides)


def shell_rounds(work: Path, rate: float, rounds: int, threads: int) -> tuple[float, int]:
    """The recipes' per-round three steps; (seconds, client updates)."""
    d = work / "shell"
    d.mkdir()
    (d / "model-0.pt").write_bytes((work / "base.pt").read_bytes())
    updates = 0
    start = time.perf_counter()
    for t in range(1, rounds + 1):
        cohort = d / f"c{t}.txt"
        asrpriv("sample-clients", "--rate", str(rate), "--round", str(t), "--seed", "1",
                str(work / "clients.txt"), "-o", str(cohort))
        n = len(cohort.read_text().split())
        if not n:
            (d / f"model-{t}.pt").write_bytes((d / f"model-{t - 1}.pt").read_bytes())
            continue
        updates += n
        asrpriv("finetune-lm", "--init", str(d / f"model-{t - 1}.pt"), "--train",
                str(work / "clients.tsv"), "--recipe", "client-001", "--by-client", str(d / f"d{t}"),
                "--clients", str(cohort), "--seed", str(100000 + t), "--threads", str(threads),
                *DEVICE)
        asrpriv("aggregate", "--server", "fedadam", "--model", str(d / f"model-{t - 1}.pt"),
                "--state", str(d / "state.pt"), "-o", str(d / f"model-{t}.pt"), str(d / f"d{t}"))
    return time.perf_counter() - start, updates


def fl_rounds(work: Path, name: str, rate: float, rounds: int, *options: str) -> tuple[float, int]:
    run = work / name
    start = time.perf_counter()
    asrpriv("fl-rounds", "--init", str(work / "base.pt"), "--train", str(work / "clients.tsv"),
            "--run-dir", str(run), "--rounds", str(rounds), "--sample-rate", str(rate),
            "--sample-seed", "1", "--seed", "1", "--server", "fedadam", *options, *DEVICE)
    seconds = time.perf_counter() - start
    updates = sum(len(json.loads((run / f"round-{t}" / "report.json").read_text())["sampled"])
                  for t in range(1, rounds + 1))
    return seconds, updates


def main() -> None:
    from asrpriv.nnlm.runtime import usable_cpus

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # paper 001's round on the bundled data: q = 0.1 of the 114 adaptation clients (~11 a round)
    ap.add_argument("--clients", type=int, default=114)
    ap.add_argument("--rate", type=float, default=0.1)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--cores", type=int, default=usable_cpus(),
                    help="the cores both sides get (default: the usable CPUs)")
    ap.add_argument("--batch-clients", type=int, default=0,
                    help="also time fl-rounds --batch-clients K (K > 1; meant for a GPU)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="where the clients train, on both sides (finetune-lm/fl-rounds --device)")
    args = ap.parse_args()
    if args.device != "cpu":
        DEVICE.extend(["--device", args.device])
    cores = max(1, args.cores)
    modes = {"fl_rounds": ("one process, one client at a time, --threads " + str(cores),
                           ("--threads", str(cores)))}
    if cores > 1 and args.device == "cpu":
        modes["fl_rounds_workers"] = (f"--workers {cores} --threads 1",
                                      ("--workers", str(cores), "--threads", "1"))
    if args.batch_clients > 1:
        modes["fl_rounds_batched"] = (f"--batch-clients {args.batch_clients}",
                                      ("--batch-clients", str(args.batch_clients),
                                       "--threads", str(cores)))
    seconds, counts = {}, {}
    with tempfile.TemporaryDirectory(prefix="bench-fl-rounds-") as tmp:
        work = Path(tmp)
        make_inputs(work, args.clients)
        seconds["shell"], counts["shell"] = shell_rounds(work, args.rate, args.rounds, cores)
        for key, (_, options) in modes.items():
            seconds[key], counts[key] = fl_rounds(work, key, args.rate, args.rounds, *options)
        assert len(set(counts.values())) == 1, counts
        same = ((work / "fl_rounds" / f"model-{args.rounds}.pt").read_bytes()
                == (work / "shell" / f"model-{args.rounds}.pt").read_bytes())
        assert same or args.device != "cpu", "fl-rounds' model differs from the shell rounds'"
    rates = {k: counts[k] / seconds[k] for k in seconds}
    print(f"shell round (3 processes a round, finetune-lm --threads {cores}): {counts['shell']} "
          f"client updates in {seconds['shell']:.1f} s = {rates['shell']:.2f}/s")
    for key, (label, _) in modes.items():
        extra = "; final model byte-identical to the shell rounds'" if key == "fl_rounds" else ""
        print(f"fl-rounds, {label}: {counts[key]} client updates in {seconds[key]:.1f} s = "
              f"{rates[key]:.2f}/s ({rates[key] / rates['shell']:.1f}x{extra})")
    best = max(modes, key=lambda k: rates[k])
    ratio = rates[best] / rates["shell"]
    print(f"ratio (client updates/s, fl-rounds {modes[best][0]} / shell round): {ratio:.1f}x   "
          f"(target >= 5x; {args.rounds} rounds, q {args.rate:g} of {args.clients} clients, "
          f"{cores} core(s) each)")
    print("paper 001's 1,000 rounds at this q and clients projected (this run's seconds a round): "
          + ", ".join(f"{k} {1000 * seconds[k] / args.rounds / 3600:.1f} h" for k in seconds))
    from _record import record

    record("fl_rounds" + ("" if args.device == "cpu" else "_" + args.device), ratio, ">= 5x",
           repeats=1,
           best={k: round(v, 4) for k, v in rates.items()},
           what=f"fl-rounds ({modes[best][0]}) / the shell round (sample-clients + finetune-lm "
                f"--by-client + aggregate --server, 3 processes a round), client updates/s, "
                f"{cores} core(s) each")


if __name__ == "__main__":
    main()
