"""Benchmark: ``aggregate --server fedadam`` on 100 deltas vs just reading the 100 files.

Model: paper 001's NNLM shape (Sec. 3: LSTM, embedding 100, 2 layers of 512 units) as a word
LM over the bundled AMI vocabulary (words seen twice in ``train_text``). 100 random deltas of
it with the model's fingerprint are written to a temporary directory.

Two kinds of fresh processes, alternated (``--repeats`` each, so the page cache is warm for
both): the baseline loads every delta with ``read_model_file`` (torch.load, weights only) one
at a time and drops it; ours runs the real step (``asrpriv aggregate --server fedadam --state``,
which also validates, checks fingerprints and finiteness, accumulates in float64, applies
FedAdam and writes the model and the state). Times exclude interpreter start and imports
(measured inside each process). Peak memory: the peak RSS during the work minus the RSS after
the imports, in units of one model's float32 size. ``resource.getrusage(RUSAGE_SELF).ru_maxrss``
cannot be reset and is dominated by the transient peak of ``import torch`` (about 8 models of
this size above the settled RSS, the same for every run), so the high-water mark is reset
after the imports (``/proc/self/clear_refs`` = 5, Linux) and read from ``VmHWM``; ru_maxrss is
printed too.

Targets (issue 28): time <= 1.5x the reading, peak memory <= 3 models.

    .venv/bin/python benchmarks/bench_aggregate_deltas.py [--clients 100] [--repeats 2] [--dp]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

WORKER = r"""
import json, os, resource, sys, time
sys.path.insert(0, {src!r})
def status_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
import torch
from asrpriv.nnlm.modelfile import read_model_file
from asrpriv.cli import cli
import asrpriv.federated.aggregate, asrpriv.federated.server, numpy
import gc; gc.collect()
base = status_kb("VmRSS")
try:  # reset the high-water mark: the imports' transient peak is not the step's
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    reset = True
except OSError:
    reset = False
mode, args = sys.argv[1], sys.argv[2:]
start = time.perf_counter()
if mode == "read":
    for path in args:
        payload = read_model_file(path)
        del payload
else:
    try:
        cli.main(args, standalone_mode=False)
    except SystemExit as e:
        assert not e.code, e.code
seconds = time.perf_counter() - start
maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
peak = status_kb("VmHWM") if reset else maxrss
print(json.dumps({{"seconds": seconds, "peak_kb": peak, "base_kb": base, "maxrss_kb": maxrss}}))
"""


def run(mode: str, args: list[str]) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", WORKER.format(src=str(ROOT / "src")), mode, *args],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--dp", action="store_true", help="also time the DP path (clip + noise)")
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()

    import torch

    from asrpriv.federated.fingerprint import model_fingerprint
    from asrpriv.nnlm import modelfile
    from _paper001 import paper_lstm

    model, vocab, config = paper_lstm()
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    n_params = sum(v.numel() for v in state.values())
    model_mb = sum(v.numel() * v.element_size() for v in state.values()) / 2 ** 20
    print(f"# paper-shape LSTM LM (emb 100, 2x512): vocabulary {len(vocab):,}, "
          f"{n_params:,} parameters, {model_mb:.1f} MiB per model; {args.clients} deltas")
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench_agg_"))
    work.mkdir(parents=True, exist_ok=True)
    modelfile.save_model(str(work / "m0.pt"), state, vocab, config)
    fp = model_fingerprint(config, vocab.words, state)
    gen = torch.Generator().manual_seed(0)
    deltas = []
    for i in range(args.clients):
        path = work / f"c{i:03d}.delta.pt"
        if not path.exists():
            delta = {k: torch.randn(v.shape, generator=gen) * 1e-3 for k, v in state.items()}
            modelfile.save_delta(str(path), delta, vocab, config, weight=100 + i,
                                 init_fingerprint=fp)
        deltas.append(str(path))
    del model, state

    def ours(dp: bool) -> list[str]:
        state_file = work / "state.pt"
        if state_file.exists():
            state_file.unlink()
        extra = (["--noise-multiplier", "1.0", "--clip", "0.5", "--expected-clients",
                  str(args.clients), "--sample-rate", "0.01"] if dp else [])
        return ["aggregate", "-q", "--server", "fedadam", "--model", str(work / "m0.pt"), "--state",
                str(state_file), "-o", str(work / "m1.pt"), *extra, str(work)]

    rows = {"read": [], "fedadam": [], "fedadam+dp": []}
    for _ in range(args.repeats):
        rows["read"].append(run("read", deltas))
        rows["fedadam"].append(run("agg", ours(False)))
        if args.dp:
            rows["fedadam+dp"].append(run("agg", ours(True)))
    base = min(r["seconds"] for r in rows["read"])
    for name, runs in rows.items():
        if not runs:
            continue
        best = min(r["seconds"] for r in runs)
        extra_mb = max(r["peak_kb"] - r["base_kb"] for r in runs) / 1024
        maxrss_mb = max(r["maxrss_kb"] for r in runs) / 1024
        times = ", ".join(f"{r['seconds']:.2f}" for r in runs)
        print(f"{name:11s} best {best:6.2f} s  (runs {times})"
              f"  ratio {best / base:4.2f}x  peak RSS above imports {extra_mb:7.1f} MiB = "
              f"{extra_mb / model_mb:4.2f} models (ru_maxrss {maxrss_mb:.0f} MiB)")
    ratios = [a["seconds"] / r["seconds"] for a, r in zip(rows["fedadam"], rows["read"])]
    print(f"# fedadam / read: best-of {min(r['seconds'] for r in rows['fedadam']) / base:.2f}x, "
          f"median per-pair {statistics.median(ratios):.2f}x (target <= 1.5x); "
          f"peak memory target <= 3 models")
    from _record import record

    agg = rows["fedadam"]
    record("aggregate_deltas", min(r["seconds"] for r in agg) / base, "<= 1.5x",
           median=statistics.median(ratios), repeats=len(agg),
           best={"fedadam_s": min(r["seconds"] for r in agg), "read_s": base},
           peak_models=max(r["peak_kb"] - r["base_kb"] for r in agg) / 1024 / model_mb,
           peak_target="<= 3 models", what="aggregate --server fedadam of 100 deltas / reading them")
    print(f"# files in {work} (delete when done)")


if __name__ == "__main__":
    main()
