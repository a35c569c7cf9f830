#!/usr/bin/env python3
"""fma-adapt --arpa on the 2M-bigram first-pass ARPA vs kenlm loading it; brute-force normalization.

Timed, each in its own process, ``--repeats`` alternated runs (default 3), best of each and the
median of per-pair ratios:

- baseline: ``kenlm.Model(ARPA)`` (python start, kenlm import, ARPA parse into its probing
  hash tables): the parse floor of any tool that reads the ARPA;
- ``asrpriv fma-adapt --arpa ARPA --adapt COUNTS --beta 0.5 -o OUT``, end to end (read, exact
  normalization through the back-off structure, write the adapted ARPA). Target: <= 2x
  (issue 28; 3x before). Its peak RSS (``wait4``) is reported too (target: < 1 GB).

Second ratio: the brute-force normalization SRILM's ``ngram -adapt-marginals`` does, Z(h) as
a sum over the whole vocabulary for every context. Measured in this process with numpy (one
vectorized pass over the 72,547-word vocabulary per context, which is generous to it) on 300
random contexts and **extrapolated** to every context of the model (each unigram is a bigram
context here), then divided by the fma-adapt time.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
AMI = ROOT / "examples" / "data" / "ami"
FIRSTPASS = AMI / "firstpass-en-us-2gram.arpa.gz"

BASELINE = """
import sys, kenlm
c = kenlm.Config(); c.show_progress = False
m = kenlm.Model(sys.argv[1], c)
print(m.order)
"""


def timed(cmd: list[str], env: dict) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}: {proc.stderr.read().decode()}")
    return wall, usage.ru_maxrss / 1024


def brute_force_seconds_per_context(n_sample: int = 300) -> tuple[float, int]:
    """Seconds per context of Z(h) = sum over the vocabulary of a(w) P_B(w|h), and #contexts."""
    sys.path.insert(0, str(ROOT / "src"))
    from asrpriv.ngram.packed import read_packed

    model = read_packed(str(FIRSTPASS))
    uni, big = model.orders
    v = len(model.words)
    a = np.random.default_rng(0).uniform(0.5, 2.0, v)  # any scaling factors
    bow = np.nan_to_num(uni.bow, nan=0.0)
    srt = np.argsort(big.ids[:, 0], kind="stable")
    starts = np.searchsorted(big.ids[srt, 0], np.arange(v + 1))
    contexts = random.Random(1).sample(range(v), n_sample)
    start = time.perf_counter()
    for h in contexts:
        logp = uni.logp + bow[h]  # every word backed off ...
        sel = srt[starts[h]:starts[h + 1]]
        logp[big.ids[sel, 1]] = big.logp[sel]  # ... except the listed successors
        z = float(np.dot(a, np.power(10.0, logp)))
        assert z > 0
    per = (time.perf_counter() - start) / n_sample
    return per, v


def main() -> None:
    import argparse
    import statistics

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        counts = tmp / "adapt.counts"
        subprocess.run([sys.executable, "-m", "asrpriv", "count-unigrams", "--text", "--ids", "-q",
                        "-o", str(counts), str(AMI / "adapt" / "ref.txt")], env=env, check=True)
        ours_cmd = [sys.executable, "-m", "asrpriv", "fma-adapt", "-q", "--arpa", str(FIRSTPASS),
                    "--adapt", str(counts), "--beta", "0.5", "-o", str(tmp / "out.arpa")]
        base_cmd = [sys.executable, "-c", BASELINE, str(FIRSTPASS)]
        base, ours = [], []
        for _ in range(args.repeats):
            base.append(timed(base_cmd, env))
            ours.append(timed(ours_cmd, env))
        b, o = min(t for t, _ in base), min(t for t, _ in ours)
        rss = max(r for _, r in ours)
        print(f"kenlm.Model load:        best {b:.2f} s  (runs {', '.join(f'{t:.2f}' for t, _ in base)}), "
              f"peak RSS {max(r for _, r in base):.0f} MB")
        print(f"fma-adapt --arpa:        best {o:.2f} s  (runs {', '.join(f'{t:.2f}' for t, _ in ours)}), "
              f"peak RSS {rss:.0f} MB")
        pairs = [t / k for (t, _), (k, _) in zip(ours, base)]
        print(f"ratio fma-adapt / kenlm load: {o / b:.2f}x best-of-{args.repeats}, median per pair "
              f"{statistics.median(pairs):.2f}x (target <= 2x); peak RSS < 1 GB: {rss < 1024}")
    per, contexts = brute_force_seconds_per_context()
    total = per * contexts
    print(f"brute-force Z(h) over the vocabulary: {per * 1e3:.2f} ms/context (numpy, 300 sampled), "
          f"extrapolated to {contexts} contexts: {total:.0f} s")
    print(f"ratio brute force (extrapolated) / fma-adapt: {total / o:.0f}x")
    from _record import record

    record("fma_arpa", o / b, "<= 2x", median=statistics.median(pairs), repeats=args.repeats,
           best={"fma_adapt_s": o, "kenlm_load_s": b}, peak_mb=round(rss), peak_target="< 1024 MB",
           what="fma-adapt --arpa on the 2M-bigram first-pass ARPA / kenlm.Model loading it")


if __name__ == "__main__":
    main()
