"""Benchmark: federated rounds on Flower's simulation engine vs the shell recipe, same clients.

Model: paper 001's LSTM LM shape (emb 100, 2 layers of 512, vocabulary = AMI ``train_text``
words seen twice), random initial weights. Clients: the 114 meetings of the bundled AMI
adaptation split (rank-1 rows of ``examples/data/ami/adapt/nbest.tsv``, its ``client``
column). Recipe ``client-001``, one thread per client, FedAdam, no noise. Each round samples
about ``--per-round`` clients (Poisson, q = per-round / 114, the same seed in both engines).

* shell round: ``asrpriv finetune-lm --by-client`` (one process, all of the round's clients)
  + ``asrpriv aggregate --server fedadam --state`` (one process);
* Flower round: ``asrpriv fl-simulate`` with ``--workers W --cpus-per-client 1``: the round's
  seconds from ``round-t/report.json`` (sampling, sending the model, client updates, replies,
  aggregation, files); the run's start (Ray, actors, the population's data) is reported apart.

Printed: client updates/s of both, the Flower round's overhead over the shell round (target
<= 20% at 100 clients per round), that both give the same model bytes, and the wall time of
paper 001's setting (100 clients x 1,000 rounds) on 1, 8 and 64 workers estimated from the
measured per-client cost (perfect scaling of the client updates; the server's per-round cost
and the engine's per-round overhead stay serial).

    .venv/bin/python benchmarks/bench_flower.py [--per-round 100] [--rounds 2] [--workers 1]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
ADAPT = ROOT / "examples" / "data" / "ami" / "adapt" / "nbest.tsv"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}


def asrpriv(*args: str) -> float:
    """Run ``asrpriv ARGS`` as a process; its wall seconds."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "asrpriv", *args], check=True, env=ENV,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def make_inputs(work: Path) -> list[str]:
    """work/base.pt (paper-shape LSTM), work/adapt.tsv (rank-1 rows); returns the clients."""
    from asrpriv.nnlm import modelfile
    from _paper001 import paper_lstm

    model, vocab, config = paper_lstm()
    modelfile.save_model(str(work / "base.pt"), model, vocab, config)
    lines = ADAPT.read_text(encoding="utf-8").splitlines()
    head = lines[0].split("\t")
    i_rank, i_client = head.index("rank"), head.index("client")
    rows = [ln for ln in lines[1:] if ln.split("\t")[i_rank] == "1"]
    (work / "adapt.tsv").write_text("\n".join([lines[0]] + rows) + "\n", encoding="utf-8")
    clients = sorted({ln.split("\t")[i_client] for ln in rows})
    (work / "clients.txt").write_text("".join(c + "\n" for c in clients), encoding="utf-8")
    return clients


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-round", type=float, default=100.0, help="expected clients per round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-flower-") as tmp:
        work = Path(tmp)
        clients = make_inputs(work)
        q = min(1.0, args.per_round / len(clients))
        # ---- shell recipe
        shell = work / "shell"
        shell.mkdir()
        (shell / "model-0.pt").write_bytes((work / "base.pt").read_bytes())
        shell_train, shell_agg, cohort_sizes = [], [], []
        for t in range(1, args.rounds + 1):
            asrpriv("sample-clients", "-q", "--rate", repr(q), "--round", str(t), "--seed", "1",
                    str(work / "clients.txt"), "-o", str(shell / f"c{t}.txt"))
            cohort_sizes.append(len((shell / f"c{t}.txt").read_text().split()))
            shell_train.append(asrpriv(
                "finetune-lm", "-q", "--init", str(shell / f"model-{t - 1}.pt"), "--train",
                str(work / "adapt.tsv"), "--recipe", "client-001", "--by-client", str(shell / f"d{t}"),
                "--clients", str(shell / f"c{t}.txt"), "--seed", str(100000 + t), "--threads", "1"))
            shell_agg.append(asrpriv(
                "aggregate", "-q", "--server", "fedadam", "--model", str(shell / f"model-{t - 1}.pt"),
                "--state", str(shell / "state.pt"), "-o", str(shell / f"model-{t}.pt"),
                str(shell / f"d{t}")))
        # ---- Flower simulation
        run = work / "run"
        flower_wall = asrpriv("fl-simulate", "-q", "--init", str(work / "base.pt"), "--train",
                              str(work / "adapt.tsv"), "--run-dir", str(run), "--rounds",
                              str(args.rounds), "--sample-rate", repr(q), "--sample-seed", "1",
                              "--seed", "1", "--workers", str(args.workers))
        reports = [json.loads((run / f"round-{t}" / "report.json").read_text())
                   for t in range(1, args.rounds + 1)]
        same = all((run / f"model-{t}.pt").read_bytes() == (shell / f"model-{t}.pt").read_bytes()
                   for t in range(1, args.rounds + 1))
    n = sum(cohort_sizes)
    shell_round = [a + b for a, b in zip(shell_train, shell_agg)]
    flower_round = [r["seconds"] for r in reports]
    startup = flower_wall - sum(flower_round)
    per_client = sum(shell_train) / n  # one process's cost per client update (load included)
    agg = sum(shell_agg) / args.rounds
    overhead = sum(flower_round) / sum(shell_round) - 1
    engine = (sum(flower_round) - sum(shell_round)) / args.rounds  # per round, beyond the shell's
    print(f"clients: {len(clients)} (AMI adaptation meetings); q {q:.4f}; cohorts {cohort_sizes}; "
          f"workers {args.workers}; model bytes identical in both engines: {same}")
    print(f"shell round   (finetune-lm --by-client + aggregate): "
          f"{', '.join(f'{s:.1f}' for s in shell_round)} s -> {n / sum(shell_round):.3f} client updates/s")
    print(f"flower round  (fl-simulate, report.json):            "
          f"{', '.join(f'{s:.1f}' for s in flower_round)} s -> {n / sum(flower_round):.3f} client updates/s; "
          f"run start/stop {startup:.1f} s")
    print(f"ratio: Flower/shell round time {sum(flower_round) / sum(shell_round):.3f}x "
          f"(overhead {100 * overhead:+.1f}%, target <= +20%); engine overhead {engine:+.1f} s/round")
    print(f"per-client update {per_client:.3f} s; server aggregate {agg:.2f} s/round")
    from _record import record

    record("flower", sum(flower_round) / sum(shell_round), "<= 1.2x", repeats=args.rounds,
           best={"flower_round_s": flower_round, "shell_round_s": shell_round, "startup_s": startup},
           what="fl-simulate round / shell round (finetune-lm --by-client + aggregate)")
    for workers in (1, 8, 64):
        round_s = math.ceil(100 / workers) * per_client + agg + max(engine, 0.0)
        hours = 1000 * round_s / 3600
        print(f"paper 001 (100 clients x 1000 rounds) on {workers:>2} worker(s): "
              f"{round_s:.1f} s/round -> {hours:.1f} h")


if __name__ == "__main__":
    main()
