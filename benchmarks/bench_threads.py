#!/usr/bin/env python3
"""Benchmark: torch threads on a shared machine, idle and beside a competing CPU-bound job.

Two workloads, each timed inside a fresh process (imports excluded):

* train: one epoch of finetune-lm's training loop (``asrpriv.nnlm.train.train_lm``, the default
  Transformer over the AMI vocabulary, batch 32) on ``--sentences`` AMI training sentences;
* rescore: rescore-nbest's NNLM scoring (``asrpriv.rescore.nnlm.NnlmScorer``, the FMP paper's
  Transformer shape, random weights) on the first ``--utts`` AMI dev utterances.

Three thread settings:

* ``before``: what the steps did before this benchmark existed: ``min(CPUs, 4)`` threads and
  libgomp's default wait (spin 300,000 iterations before sleeping);
* ``ours``: what the steps do now (:mod:`asrpriv.nnlm.runtime`: the same thread count, and the
  short OpenMP spin ``GOMP_SPINCOUNT`` = :data:`asrpriv.nnlm.runtime.SPINCOUNT`);
* ``one``: one thread.

each run idle and again while this benchmark runs its own competing CPU-bound process (a
pure-Python busy loop, like one job of a batch queue beside ours). Runs alternate, ``--repeats``
of each. Ratios (best of each, and the median of per-round ratios):

* idle: ours / before, target <= 1.2x (the short spin must not cost at idle);
* loaded: ours / one thread, target <= 1.5x (threads must not fight the other job).

``--with-before-loaded`` also times the old setting under load (8-15x slower on 2 cores: long).

    .venv/bin/python benchmarks/bench_threads.py [--sentences 400] [--utts 40] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))
AMI = ROOT / "examples" / "data" / "ami"

WORKER = r"""
import json, os, sys, time
sys.path.insert(0, {src!r})
setting, workload, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
from asrpriv.nnlm import runtime
if setting == "ours":
    runtime.quiet_openmp_wait()
import torch
if setting == "before":
    torch.set_num_threads(max(1, min(runtime.usable_cpus(), 4)))
    threads = torch.get_num_threads()
else:
    threads = runtime.use_threads(1 if setting == "one" else 0)
from asrpriv.nnlm import train
from asrpriv.nnlm.data import read_corpus
sents = [s for s in read_corpus({text!r}, ids=True).sentences if s]
vocab = train.vocab_from_sentences(sents, min_count=2)
if workload == "train":
    model, config = train.new_model("transformer", vocab, seed=0)
    batch = sents[:n]
    train.train_lm(model, vocab, batch[:64], optimizer="sgd", lr=1.0, batch_size=32, seed=0)
    start = time.perf_counter()
    train.train_lm(model, vocab, batch, optimizer="sgd", lr=1.0, epochs=1, batch_size=32,
                   loss_norm="token", max_grad_norm=0.25, seed=0)
else:
    import tempfile
    from asrpriv.io.nbest import NbestReader
    from asrpriv.nnlm.modelfile import save_model
    from asrpriv.rescore.nnlm import NnlmScorer
    model, config = train.new_model("transformer", vocab, seed=0, emb_dim=256, ffn_dim=1024,
                                    layers=3, heads=4)
    path = os.path.join(tempfile.mkdtemp(), "m.pt")
    save_model(path, model, vocab, config)
    scorer = NnlmScorer(path)
    hyps, groups = [], []
    for u, utt in enumerate(NbestReader({nbest!r})):
        if u == n:
            break
        hyps += [scorer.encode(h.words) for h in utt.hyps]
        groups += [u] * len(utt.hyps)
    scorer.score(hyps[:50], units=groups[:50])
    start = time.perf_counter()
    scorer.score(hyps, units=groups)
print(json.dumps({{"seconds": time.perf_counter() - start, "threads": threads,
                  "spincount": os.environ.get("GOMP_SPINCOUNT")}}))
"""


def run(setting: str, workload: str, n: int) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
    code = WORKER.format(src=str(ROOT / "src"), text=str(AMI / "train_text"),
                         nbest=str(AMI / "dev" / "nbest.tsv"))
    proc = subprocess.run([sys.executable, "-c", code, setting, workload, str(n)],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"worker {setting} {workload} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def start_load() -> subprocess.Popen:
    """One CPU-bound competing process (a busy loop), started now."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    time.sleep(0.5)  # let the scheduler see it
    return proc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=400, help="training sentences (one epoch)")
    ap.add_argument("--utts", type=int, default=40, help="AMI dev utterances rescored")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--with-before-loaded", action="store_true",
                    help="also time the old setting under load (slow)")
    args = ap.parse_args()
    from _record import record

    sizes = {"train": args.sentences, "rescore": args.utts}
    settings = ["before", "ours", "one"]
    loaded_settings = (["before"] if args.with_before_loaded else []) + ["ours", "one"]
    times: dict = {}
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; train {args.sentences} "
          f"sentences, rescore {args.utts} utterances; {args.repeats} alternated repeats", flush=True)
    for rep in range(args.repeats):
        for workload in ("train", "rescore"):
            for s in (settings if rep % 2 == 0 else settings[::-1]):
                r = run(s, workload, sizes[workload])
                times.setdefault((workload, "idle", s), []).append(r["seconds"])
                print(f"  idle    {workload:7s} {s:6s} {r['seconds']:6.2f} s  ({r['threads']} threads, "
                      f"GOMP_SPINCOUNT={r['spincount']})", flush=True)
            load = start_load()
            try:
                for s in (loaded_settings if rep % 2 == 0 else loaded_settings[::-1]):
                    r = run(s, workload, sizes[workload])
                    times.setdefault((workload, "loaded", s), []).append(r["seconds"])
                    print(f"  loaded  {workload:7s} {s:6s} {r['seconds']:6.2f} s  ({r['threads']} "
                          f"threads)", flush=True)
            finally:
                load.kill()
                load.wait()
    for workload in ("train", "rescore"):
        for case, ours, base, target in (("idle", "ours", "before", 1.2), ("loaded", "ours", "one", 1.5)):
            a, b = times[(workload, case, ours)], times[(workload, case, base)]
            best = min(a) / min(b)
            med = statistics.median(x / y for x, y in zip(a, b))
            print(f"ratio {workload} {case}: {ours} / {base} thread setting {best:.2f}x best-of-"
                  f"{len(a)} ({min(a):.2f} s vs {min(b):.2f} s), median per round {med:.2f}x "
                  f"(target <= {target}x)")
            record(f"threads_{workload}_{case}", best, f"<= {target}x", median=med,
                   repeats=len(a), best={ours: min(a), base: min(b)},
                   what=f"{workload}: {ours} / {base} thread setting, "
                        + ("no competing job of its own" if case == "idle" else "beside its own busy loop"))
        if args.with_before_loaded:
            a, b = times[(workload, "loaded", "before")], times[(workload, "loaded", "one")]
            print(f"  (loaded, old setting / one thread: {min(a) / min(b):.2f}x)")


if __name__ == "__main__":
    main()
