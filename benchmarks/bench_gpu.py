"""Benchmark: the GPU rows of the record. ``finetune-lm --by-client --device cuda`` and
``rescore-nbest --device cuda`` against the same commands on the CPU (every core), in one run.

Model: paper 001's LSTM LM shape (emb 100, 2 layers of 512, vocabulary = AMI ``train_text``
words seen twice: ~7.4k), random weights (speed does not depend on them). Inputs:

1. ``finetune-lm --by-client``, recipe ``client-001`` (SGD lr 1.0, 1 epoch, batch 8), ``--seed 1``,
   on ``--clients`` clients of 24 consecutive rank-1 hypotheses of the bundled AMI adaptation
   N-best. Ratio: client updates/s on the GPU / on the CPU. The deltas are compared too
   (relative L2 difference of each client's delta). They are not close: dropout (p 0.1) draws
   different masks on the CPU and on CUDA from the same seed, which moves a delta by ~11%
   (measured on an H200: TF32 off changes the GPU's deltas by 3.6e-05 only; the CPU with 16 vs 1
   thread by 3.7e-07). Same seed, same device: byte-identical.
2. ``rescore-nbest --nnlm`` over the bundled AMI dev N-best (19,637 hypotheses of AMI text
   synthesized by flite and decoded by pocketsphinx: synthetic speech). Ratio: hypotheses/s on
   the GPU (fp32, and opt-in bf16) / on the CPU (fp32). The NNLM scores are compared
   (largest absolute difference, nats).

Each side is a whole ``python -m asrpriv`` process, as a user runs it: its time includes the
interpreter, torch's import and (on the GPU) CUDA's start, so short inputs favour the CPU. Best
of ``--repeats``, alternated. Without a CUDA device it says so and records nothing.

    .venv/bin/python benchmarks/bench_gpu.py [--clients 100] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))
DEV = ROOT / "examples" / "data" / "ami" / "dev" / "nbest.tsv"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def run(*args: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "asrpriv", *args, "-q"], check=True, env=ENV)
    return time.perf_counter() - start


def delta_gap(cpu_dir: Path, gpu_dir: Path) -> float:
    """The largest relative L2 difference between a client's CPU and GPU delta."""
    import torch

    worst = 0.0
    for f in sorted(cpu_dir.glob("*.delta.pt")):
        a = torch.load(f, map_location="cpu", weights_only=False)
        b = torch.load(gpu_dir / f.name, map_location="cpu", weights_only=False)
        sa, sb = a["state_dict"], b["state_dict"]
        num = sum(float((sa[k].double() - sb[k].double()).pow(2).sum()) for k in sa)
        den = sum(float(sa[k].double().pow(2).sum()) for k in sa)
        worst = max(worst, (num / den) ** 0.5 if den else 0.0)
    return worst


def score_gap(a: Path, b: Path) -> float:
    """The largest absolute difference of the nnlm_score column of two rescored TSVs (nats)."""
    def col(p: Path) -> list[float]:
        lines = p.read_text(encoding="utf-8").splitlines()
        i = lines[0].split("\t").index("nnlm_score")
        return [float(ln.split("\t")[i]) for ln in lines[1:]]
    return max(abs(x - y) for x, y in zip(col(a), col(b), strict=True))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--nbest", type=Path, default=DEV, help="the N-best TSV to rescore [AMI dev]")
    ap.add_argument("--device", default="cuda", help="the accelerated side (cpu: a dry run of this script)")
    args = ap.parse_args()
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("GPU rows: not measured: no CUDA device here (torch.cuda.is_available() is False)")
        return 0
    from _record import record
    from bench_finetune_clients import make_inputs

    cores = len(os.sched_getaffinity(0))
    gpu = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu (dry run)"
    print(f"# GPU {gpu}; CPU side: {cores} threads; torch {torch.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        make_inputs(work, args.clients)
        common = ["finetune-lm", "--init", str(work / "base.pt"), "--train", str(work / "clients.tsv"),
                  "--recipe", "client-001", "--seed", "1"]
        times = {"cpu": [], "cuda": []}
        for r in range(args.repeats):
            for dev in ("cpu", "cuda"):
                extra = ["--threads", str(cores)] if dev == "cpu" else ["--device", args.device]
                times[dev].append(run(*common, "--by-client", str(work / f"ft-{dev}-{r}"), *extra))
        cpu, gpu_t = min(times["cpu"]), min(times["cuda"])
        gap = delta_gap(work / "ft-cpu-0", work / "ft-cuda-0")
        ratio = cpu / gpu_t
        pairs = [c / g for c, g in zip(times["cpu"], times["cuda"])]
        print(f"finetune-lm --by-client, {args.clients} clients: CPU {cpu:.1f} s, GPU {gpu_t:.1f} s; "
              f"ratio (client updates/s, GPU / CPU) {ratio:.2f}x; largest relative L2 gap of a delta {gap:.2e}")
        record("finetune_clients_gpu", ratio, "> 1x", median=statistics.median(pairs), repeats=args.repeats,
               best={"cpu_s": cpu, "gpu_s": gpu_t, "clients": args.clients},
               what=f"finetune-lm --by-client on {gpu} / on {cores} CPU threads, whole process, "
                    f"{args.clients} clients (relative delta gap {gap:.1e})",
               machine=f"{gpu} + {cores} CPU threads (device machine)")

        n_hyps = sum(1 for _ in args.nbest.open(encoding="utf-8")) - 1
        times = {"cpu": [], "cuda": [], "bf16": []}
        for r in range(args.repeats):
            for dev in ("cpu", "cuda", "bf16"):
                extra = (["--threads", str(cores)] if dev == "cpu" else
                         ["--device", args.device] + (["--precision", "bf16"] if dev == "bf16" else []))
                times[dev].append(run("rescore-nbest", "--nnlm", str(work / "base.pt"), str(args.nbest),
                                      "-o", str(work / f"rs-{dev}.tsv"), *extra))
        cpu, gpu_t, bf = min(times["cpu"]), min(times["cuda"]), min(times["bf16"])
        gap = score_gap(work / "rs-cpu.tsv", work / "rs-cuda.tsv")
        gap_bf = score_gap(work / "rs-cpu.tsv", work / "rs-bf16.tsv")
        pairs = [c / g for c, g in zip(times["cpu"], times["cuda"])]
        print(f"rescore-nbest, {n_hyps} hypotheses: CPU {cpu:.1f} s, GPU fp32 {gpu_t:.1f} s, GPU bf16 {bf:.1f} s; "
              f"ratio (hyps/s, GPU fp32 / CPU) {cpu / gpu_t:.2f}x, bf16 {cpu / bf:.2f}x; "
              f"largest score gap {gap:.2e} nats (fp32), {gap_bf:.2e} (bf16)")
        record("rescore_nbest_gpu", cpu / gpu_t, "> 1x", median=statistics.median(pairs), repeats=args.repeats,
               best={"cpu_s": cpu, "gpu_s": gpu_t, "gpu_bf16_s": bf, "hyps": n_hyps},
               what=f"rescore-nbest --device cuda on {gpu} / on {cores} CPU threads, whole process, "
                    f"AMI dev N-best ({n_hyps} hyps); bf16 {cpu / bf:.2f}x; score gap {gap:.1e} nats "
                    f"(fp32), {gap_bf:.1e} (bf16)",
               machine=f"{gpu} + {cores} CPU threads (device machine)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
