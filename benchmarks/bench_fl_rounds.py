"""Benchmark: ``asrpriv fl-rounds`` (T federated rounds in one process) vs the shell round of
the recipes (per round three processes: ``sample-clients``, ``finetune-lm --by-client``,
``aggregate --server fedadam --state``), in client updates per second.

Model: paper 001's LSTM LM shape (emb 100, 2 layers of 512, vocabulary = AMI ``train_text``
words seen twice: ~7.4k; ``benchmarks/_paper001.py``), random initial weights (speed does not
depend on them). Clients: the rank-1 hypotheses of the bundled AMI adaptation N-best, cut into
``--clients`` clients of 24 consecutive utterances (paper 001's ~24 utterances per client).
Recipe ``client-001``, FedAdam (lr 0.001), Poisson rate ``--rate``, ``--rounds`` rounds, the
same seeds on both sides (``--sample-seed 1``: no DP here, the seed only makes the cohorts
equal), one torch thread (``OMP_NUM_THREADS=1``, ``--threads 1``).

Rates are whole wall-clock times, interpreter starts and torch imports included: the sum of
the cohorts' sizes over the seconds from the first command's start to the last one's end.
The shell side's final model is checked byte-identical to fl-rounds' (one client at a time).
With ``--batch-clients K`` (K > 1), ``fl-rounds --batch-clients K`` (grouped products over K
stacked copies of the model, ``asrpriv.federated.batched``) is timed too: its deltas are those
of the one-client path within the stated tolerance (with this model's dropout 0.1: equally
distributed draws), so its model is not compared byte for byte. The ratio recorded is the
batched one's if it is the faster, and says which. (On the 2-core CPU it is slower: 0.5x the
shell round against 1.9x one client at a time, 20 clients a round, load 7.)

    .venv/bin/python benchmarks/bench_fl_rounds.py [--clients 114] [--rate 0.1] [--rounds 4]
        [--batch-clients K]
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
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}


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


def shell_rounds(work: Path, rate: float, rounds: int) -> tuple[float, int]:
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
                "--clients", str(cohort), "--seed", str(100000 + t), "--threads", "1", *DEVICE)
        asrpriv("aggregate", "--server", "fedadam", "--model", str(d / f"model-{t - 1}.pt"),
                "--state", str(d / "state.pt"), "-o", str(d / f"model-{t}.pt"), str(d / f"d{t}"))
    return time.perf_counter() - start, updates


def fl_rounds(work: Path, name: str, rate: float, rounds: int, batch: int) -> tuple[float, int]:
    run = work / name
    start = time.perf_counter()
    asrpriv("fl-rounds", "--init", str(work / "base.pt"), "--train", str(work / "clients.tsv"),
            "--run-dir", str(run), "--rounds", str(rounds), "--sample-rate", str(rate),
            "--sample-seed", "1", "--seed", "1", "--server", "fedadam", "--threads", "1",
            "--batch-clients", str(batch), *DEVICE)
    seconds = time.perf_counter() - start
    updates = sum(len(json.loads((run / f"round-{t}" / "report.json").read_text())["sampled"])
                  for t in range(1, rounds + 1))
    return seconds, updates


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # paper 001's round on the bundled data: q = 0.1 of the 114 adaptation clients (~11 a round)
    ap.add_argument("--clients", type=int, default=114)
    ap.add_argument("--rate", type=float, default=0.1)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--batch-clients", type=int, default=0,
                    help="also time fl-rounds --batch-clients K (K > 1; on a 2-core CPU it is "
                         "slower than one client at a time: it is meant for a GPU)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="where the clients train, on both sides (finetune-lm/fl-rounds --device)")
    args = ap.parse_args()
    if args.device != "cpu":
        DEVICE.extend(["--device", args.device])
    with tempfile.TemporaryDirectory(prefix="bench-fl-rounds-") as tmp:
        work = Path(tmp)
        make_inputs(work, args.clients)
        shell_s, shell_n = shell_rounds(work, args.rate, args.rounds)
        one_s, one_n = fl_rounds(work, "one", args.rate, args.rounds, 1)
        many_s, many_n = one_s, one_n
        if args.batch_clients > 1:
            many_s, many_n = fl_rounds(work, "many", args.rate, args.rounds, args.batch_clients)
        assert shell_n == one_n == many_n, (shell_n, one_n, many_n)
        same = ((work / "one" / f"model-{args.rounds}.pt").read_bytes()
                == (work / "shell" / f"model-{args.rounds}.pt").read_bytes())
        assert same or args.device != "cpu", "fl-rounds' model differs from the shell rounds'"
    rates = {"shell": shell_n / shell_s, "fl_rounds": one_n / one_s,
             "fl_rounds_batched": many_n / many_s}
    print(f"shell round (3 processes a round): {shell_n} client updates in {shell_s:.1f} s = "
          f"{rates['shell']:.2f}/s")
    print(f"fl-rounds, one client at a time:   {one_n} client updates in {one_s:.1f} s = "
          f"{rates['fl_rounds']:.2f}/s ({rates['fl_rounds'] / rates['shell']:.1f}x; final model "
          "byte-identical to the shell rounds')")
    if args.batch_clients > 1:
        print(f"fl-rounds --batch-clients {args.batch_clients}:      {many_n} client updates in "
              f"{many_s:.1f} s = {rates['fl_rounds_batched']:.2f}/s "
              f"({rates['fl_rounds_batched'] / rates['shell']:.1f}x)")
    else:
        del rates["fl_rounds_batched"]
    best = max((k for k in ("fl_rounds", "fl_rounds_batched") if k in rates), key=lambda k: rates[k])
    ratio = rates[best] / rates["shell"]
    label = "one client at a time" if best == "fl_rounds" else f"--batch-clients {args.batch_clients}"
    print(f"ratio (client updates/s, fl-rounds {label} / shell round): {ratio:.1f}x   "
          f"(target >= 5x; {args.rounds} rounds, q {args.rate:g} of {args.clients} clients)")
    per_round = {k: (one_s if k == "fl_rounds" else many_s if k == "fl_rounds_batched" else shell_s)
                 / args.rounds for k in rates}
    print("paper 001's 1,000 rounds at this q and clients projected (this run's seconds a round): "
          + ", ".join(f"{k} {1000 * v / 3600:.1f} h" for k, v in per_round.items()))
    from _record import record

    record("fl_rounds" + ("" if args.device == "cpu" else "_" + args.device), ratio, ">= 5x",
           repeats=1,
           best={k: round(v, 4) for k, v in rates.items()},
           what=f"fl-rounds ({label}) / the shell round (sample-clients + finetune-lm "
                "--by-client + aggregate --server, 3 processes a round), client updates/s")


if __name__ == "__main__":
    main()
