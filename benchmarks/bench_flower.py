#!/usr/bin/env python3
"""Flower simulation vs the shell recipe's many-clients finetune-lm, on the same clients.

Both run the same client updates (paper 001's client recipe on AMI adaptation meetings, the
first ``--utts`` rank-1 utterances of ``--clients`` meetings) from the same initial model:

- shell: one round = ``finetune-lm --by-client`` over every client + ``aggregate --server
  fedadam`` (two processes);
- flower: ``asrpriv fl-simulate --sample-rate 1`` with 1 and with 4 rounds; a third of the
  difference is one round's cost inside the engine, so Ray's start-up is not charged to the
  rounds (it varies by seconds between runs: use enough clients that a round dominates it).

Prints client updates/s for each and the engine's overhead per round (target, issue 20:
<= 20% over the many-clients process at 100 clients per round), then the wall time of paper
001's setting (100 clients x 1,000 rounds) on 1, 8 and 64 workers from the measured
per-client cost and per-round server cost (clients spread evenly over workers; the server
step is serial).

    .venv/bin/python benchmarks/bench_flower.py [--clients 20] [--utts 24] [--dim 64]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AMI = ROOT / "examples" / "data" / "ami"


def asrpriv(*args: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "asrpriv", *args], check=True,
                   env=dict(os.environ, PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1"),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--utts", type=int, default=24)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--nodes", type=int, default=2)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_flower_"))
    lines = (AMI / "train_text").read_text(encoding="utf-8").splitlines()[:3000]
    (work / "pre.txt").write_text("".join(l.partition(" ")[2] + "\n" for l in lines))
    asrpriv("finetune-lm", "-q", "--arch", "lstm", "--emb-dim", str(args.dim), "--hidden-dim",
            str(args.dim), "--epochs", "1", "--seed", "1", "--train", str(work / "pre.txt"),
            "-o", str(work / "init.pt"))
    rows = (AMI / "adapt" / "nbest.tsv").read_text(encoding="utf-8").splitlines()
    header, kept, count = rows[0], [], {}
    for row in rows[1:]:
        f = row.split("\t")
        if f[2] != "1" or (f[1] not in count and len(count) == args.clients):
            continue
        count[f[1]] = count.get(f[1], 0) + 1
        if count[f[1]] <= args.utts:
            kept.append(row)
    (work / "adapt.tsv").write_text(header + "\n" + "\n".join(kept) + "\n")
    n = len(count)

    t_clients = asrpriv("finetune-lm", "-q", "--init", str(work / "init.pt"), "--train",
                        str(work / "adapt.tsv"), "--recipe", "client-001", "--by-client",
                        str(work / "d"), "--seed", "3")
    t_server = asrpriv("aggregate", "-q", "--server", "fedadam", "--model",
                       str(work / "init.pt"), "--state", str(work / "s.pt"), "-o",
                       str(work / "m.pt"), str(work / "d"))
    shell_round = t_clients + t_server
    flower = {}
    for rounds in (1, 4):
        flower[rounds] = asrpriv("fl-simulate", "-q", "--init", str(work / "init.pt"), "--train",
                                 str(work / "adapt.tsv"), "--rounds", str(rounds),
                                 "--sample-rate", "1", "--seed", "3", "--num-supernodes",
                                 str(args.nodes), "--out", str(work / f"fl{rounds}"))
    flower_round = (flower[4] - flower[1]) / 3
    print(f"# {n} clients x <= {args.utts} utterances, LSTM {args.dim}x{args.dim}, "
          f"{args.nodes} Flower nodes, {os.cpu_count()} CPUs")
    print(f"shell   round {shell_round:7.2f} s  (finetune-lm --by-client {t_clients:.2f} s incl. "
          f"start-up, aggregate {t_server:.2f} s)  {n / shell_round:6.2f} client updates/s")
    print(f"flower  round {flower_round:7.2f} s  (1 round {flower[1]:.2f} s, 4 rounds "
          f"{flower[4]:.2f} s incl. Ray start-up)  {n / flower_round:6.2f} client updates/s")
    print(f"# engine overhead per round: {100 * (flower_round / shell_round - 1):+.0f}% "
          "(target <= +20% at 100 clients per round)")
    per_client = t_clients / n
    for workers in (1, 8, 64):
        hours = 1000 * (100 / workers * per_client + t_server) / 3600
        print(f"paper 001 scale (100 clients x 1,000 rounds) on {workers:2d} workers: "
              f"~{hours:.1f} h (this model; per client {per_client:.2f} s, server {t_server:.2f} s)")
    print(f"# files in {work} (delete when done)")


if __name__ == "__main__":
    main()
