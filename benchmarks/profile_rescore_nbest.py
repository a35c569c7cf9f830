"""Where rescore-nbest's time goes: the measured reason behind its FLOP-rate ratio (issue 28).

``bench_rescore_nbest.py`` divides the FLOPs that rescore-nbest executes by its whole time and
compares that rate with a same-run torch matmul at its best shape (1024 x 1024 x 1024, or the
output layer's [2048, d] x [d, V]). This script splits the same run (same model: the paper-shape
Transformer with random weights and the AMI training vocabulary; same dev N-best lists) into:

1. the whole step (read, score, combine, re-rank, write) against the scoring alone
   (``NnlmScorer.score``), timed alternately, best of ``--repeats``;
2. within scoring, on one thread (the scorer's worker threads each run the same operators
   single-threaded, and the profiler does not follow them), ``torch.profiler`` self time by
   kind of operator: matrix products
   (``addmm``/``mm``/``bmm``), attention, the output tiles' exponentials and (weighted) sums, copies and
   index operations, layer norms and activations, the rest;
3. each matrix-product shape's own rate (profiler FLOPs / self time) against the same-run
   one-thread matmul: the ceiling that the products alone put on the whole step's ratio.

The printed ``ratio`` lines are measurements, not targets: the target lives in
``bench_rescore_nbest.py`` (>= 70% of the matmul rate).

    .venv/bin/python benchmarks/profile_rescore_nbest.py [--utts 300] [--threads 2] [--precision fp32]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "src"))

#: operator names (torch.profiler keys) by the kind of work they do
KINDS = {
    "matrix products": ("aten::addmm", "aten::mm", "aten::bmm", "aten::matmul"),
    "attention": ("aten::_scaled_dot_product_flash_attention_for_cpu",
                  "aten::_scaled_dot_product_attention_math", "aten::_softmax"),
    # addmm_ is the tiles' weighted sum (a [rows, 1024] x [1024, G] matrix-vector product that
    # replaces the sum when the bias and factors enter as weights): memory-bound, like the sum
    "output tiles: exp, (weighted) sums, log": ("aten::exp_", "aten::exp", "aten::sum", "aten::addmm_",
                                                "aten::log", "aten::logsumexp"),
    "copies, conversions, index ops": ("aten::copy_", "aten::index_copy_", "aten::index_select",
                                       "aten::index_add_", "aten::cat", "aten::fill_", "aten::zero_",
                                       "aten::gather", "aten::index", "aten::where"),
    "norms, activations, adds": ("aten::native_layer_norm", "aten::relu_", "aten::clamp_min_",
                                 "aten::add", "aten::add_", "aten::mul", "aten::mul_"),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--utts", type=int, default=300, help="dev utterances (0 = all 986)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    args = ap.parse_args()

    import torch
    from torch.profiler import ProfilerActivity, profile

    from asrpriv.io.nbest import NbestReader
    from asrpriv.rescore.combine import Weights
    from asrpriv.rescore.nnlm import NnlmScorer
    from asrpriv.rescore.pipeline import Rescorer
    from bench_rescore_nbest import bench_model, dev_slice, matmul_gflops

    torch.set_num_threads(args.threads)
    tmp = tempfile.mkdtemp()
    _model, vocab, config, model_path = bench_model(tmp)
    nbest = dev_slice(tmp, args.utts)
    utts = list(NbestReader(nbest))
    scorer = NnlmScorer(model_path, precision=args.precision)
    seqs = [scorer.encode(h.words) for u in utts for h in u.hyps]
    groups = [i for i, u in enumerate(utts) for _ in u.hyps]
    scorer.score(seqs[:200], groups[:200])  # warm-up
    print(f"model: transformer {config}  |V|={len(vocab)}  threads={args.threads} precision={args.precision}")
    print(f"data: {len(utts)} AMI dev utterances (synthetic speech: flite + pocketsphinx), {len(seqs)} hypotheses")

    # 1. the whole step against the scoring alone
    whole = score = float("inf")
    for _ in range(args.repeats):
        t = time.perf_counter()
        Rescorer(Weights(), nnlm=scorer).run([nbest], open(os.devnull, "w"))
        whole = min(whole, time.perf_counter() - t)
        t = time.perf_counter()
        scorer.score(seqs, groups)
        score = min(score, time.perf_counter() - t)
    print(f"whole step {whole:.2f} s, scoring alone {score:.2f} s: scoring is {100 * score / whole:.0f}% "
          f"of the step (the rest: reading, combining, re-ranking, writing the TSV)")

    # 2. and 3. the scoring's operators. With several threads the scorer runs its work on worker
    # threads, each op single-threaded, which the profiler does not follow: profile one thread
    # (the same operators as each worker runs) and compare with a one-thread matmul
    torch.set_num_threads(1)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True) as prof:
        scorer.score(seqs, groups)
    by_kind: dict[str, float] = defaultdict(float)
    products = []
    total = 0.0
    for event in prof.key_averages(group_by_input_shape=True):
        seconds = event.self_cpu_time_total / 1e6
        total += seconds
        kind = next((k for k, names in KINDS.items() if event.key in names), "other (Python, small ops)")
        by_kind[kind] += seconds
        if kind == "matrix products" and event.flops:
            products.append((seconds, event.flops, event.count, event.input_shapes))
    dtype = "bfloat16" if args.precision == "bf16" else "float32"
    d, v = config["emb_dim"], config["vocab_size"]
    ref = max(matmul_gflops(1, "cpu", 2048, d, v, 5, dtype),
              matmul_gflops(1, "cpu", 1024, 1024, 1024, 10, dtype))
    torch.set_num_threads(args.threads)
    print(f"scoring's profiled self time on one thread {total:.2f} s, by kind of operator:")
    for kind, seconds in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        print(f"  {kind:34s} {seconds:7.3f} s  {100 * seconds / total:5.1f}%")
    flops = sum(f for _s, f, _c, _shape in products)
    seconds = sum(s for s, _f, _c, _shape in products)
    print(f"same-run torch {dtype} matmul, one thread: {ref:.1f} GFLOP/s")
    print(f"matrix products alone: {flops / seconds / 1e9:.1f} GFLOP/s -> ratio {100 * flops / seconds / 1e9 / ref:.0f}% "
          f"of the matmul rate (their shapes: K = d = {d} or the FFN's width)")
    for s, f, count, shape in sorted(products, key=lambda p: -p[0])[:6]:
        print(f"  {s:6.3f} s {f / s / 1e9:6.1f} GFLOP/s  x{count:<4d} {shape}")
    share = by_kind["matrix products"] / total
    print(f"ceiling from the products alone: {100 * share * flops / seconds / 1e9 / ref:.0f}% of the matmul rate "
          f"= their share of the time ({100 * share:.0f}%) x their own rate's ratio; the whole step adds "
          f"its {100 * (1 - score / whole):.0f}% outside scoring")


if __name__ == "__main__":
    main()
