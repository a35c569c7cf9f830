#!/usr/bin/env python3
"""import-nbest --from kaldi-lattice on a lattice of 100k arcs: time and work against N.

The lattice is synthetic (random values; speed depends only on its shape): --states states in
a chain of time steps, each with arcs to 1-4 states ahead (a Kaldi word lattice's shape:
acyclic, forward), random word ids of a 5000-word vocabulary, one epsilon arc in ten, graph
costs in [0, 5) and acoustic costs in [-50, 200), the last five states final. Written in Kaldi's compact text form and parsed as import-nbest parses it.

Baseline, measured in the same run: N = 1 (one shortest path: the backward pass plus one walk).
For N = 10 and 100 it prints the time, its ratio to N times the baseline (the claim is time
linear in the lattice size times N, up to the heap's log factor: the ratio stays <= 1), and
the work done: heap pushes per N x arcs (<= 1 by construction: each state is expanded for
at most N distinct word prefixes). Target recorded: t(N=100) <= 100 x t(N=1).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from asrpriv.io.importers import kaldi_lattice  # noqa: E402


def make_lattice_text(states: int, arcs_per_state: int, seed: int) -> tuple[str, int]:
    rng = random.Random(seed)
    lines = ["bench-utt "]
    n_arcs = 0
    for s in range(states - 1):
        for _ in range(arcs_per_state):
            d = min(states - 1, s + rng.randint(1, 4))
            w = 0 if rng.random() < 0.1 else rng.randint(1, 5000)
            lines.append(f"{s}\t{d}\t{w}\t{rng.uniform(0, 5):.3f},{rng.uniform(-50, 200):.3f},1_2")
            n_arcs += 1
    for s in range(states - 5, states - 1):  # final states in the last frames, as Kaldi's
        lines.append(f"{s}\t{rng.uniform(0, 5):.3f},0,")
    lines.append(f"{states - 1}")
    return "\n".join(lines) + "\n\n", n_arcs


def run(lat, n: int, scale: float) -> tuple[float, int, int]:
    import heapq

    pushes = [0]
    real_push = heapq.heappush

    def counting_push(heap, item):
        pushes[0] += 1
        real_push(heap, item)

    kaldi_lattice.heapq.heappush = counting_push
    try:
        start = time.perf_counter()
        hyps = kaldi_lattice.nbest(lat, n, scale)
        elapsed = time.perf_counter() - start
    finally:
        kaldi_lattice.heapq.heappush = real_push
    return elapsed, pushes[0], len(hyps)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--states", type=int, default=20000)
    ap.add_argument("--arcs-per-state", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--acoustic-scale", type=float, default=0.1)
    args = ap.parse_args()
    text, n_arcs = make_lattice_text(args.states, args.arcs_per_state, seed=1)
    symbols = {str(i): f"w{i}" for i in range(5001)}
    start = time.perf_counter()
    (lat,) = list(kaldi_lattice.parse_lattices(enumerate(text.split("\n"), 1), "bench", symbols))
    t_parse = time.perf_counter() - start
    print(f"lattice: {args.states} states, {n_arcs} arcs; parse {t_parse:.2f} s")
    best: dict[int, float] = {}
    work: dict[int, int] = {}
    for n in (1, 10, 100):
        times = []
        for _ in range(args.repeats):
            t, pushes, got = run(lat, n, args.acoustic_scale)
            times.append(t)
        best[n], work[n] = min(times), pushes
        print(f"N = {n:3d}: {best[n]:.3f} s (best of {args.repeats}), {got} hypotheses, "
              f"{pushes} heap pushes = {pushes / (n * n_arcs):.3f} x N x arcs")
    for n in (10, 100):
        print(f"N = {n:3d}: time / (N x time at N = 1) = {best[n] / (n * best[1]):.3f} "
              f"(<= 1: linear in N or better)")
    ratio = best[100] / (100 * best[1])
    from _record import record

    record("lattice_nbest", ratio, "<= 1x", repeats=args.repeats,
           best={"n1_s": best[1], "n10_s": best[10], "n100_s": best[100], "parse_s": t_parse},
           what=f"kaldi-lattice N=100 / (100 x N=1) on {n_arcs} arcs",
           pushes_per_n_arcs={str(n): round(work[n] / (n * n_arcs), 4) for n in work})


if __name__ == "__main__":
    main()
