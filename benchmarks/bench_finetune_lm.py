"""Benchmark: finetune-lm's training loop vs a plain pytorch/examples-style loop, same run.

Both loops train the same model (asrpriv's TransformerLM or LSTMLM, same config, same initial
weights) with the same number of sequences per batch, the same optimizer (plain SGD with
gradient-norm clipping, as pytorch/examples/word_language_model does) and the same thread count,
on the same slice of the bundled AMI text:

* baseline (pytorch/examples word_language_model ``main.py`` style): the text as one token stream
  (``</s>`` after each sentence), ``batchify`` into B columns, ``get_batch`` windows of ``bptt``
  tokens (bptt = the mean sentence length + 1, so a batch holds as many tokens as ours), one
  ``CrossEntropyLoss`` per window, ``loss.item()`` each step;
* ours: :func:`asrpriv.nnlm.train.train_lm` (B whole sentences per batch, grouped by length).

Each timed run is a fresh process (``--worker``), as each loop runs for real: finetune-lm's
process carries its own settings (``asrpriv.allocator``: glibc keeps freed blocks), a plain loop
does not. Runs alternate, ``--repeats`` of each; the ratio of the best runs and the median of
the per-run ratios (each run against its neighbour of the other loop) are printed: this
machine's speed drifts by 5-10% between minutes. A third series gives the baseline
finetune-lm's allocator setting too, to show what the loop alone is worth.

Prints training tokens/s of each and the ratio (target >= 1.0), then perplexity vs time on a
held-out AMI slice for a few epochs of ``finetune-lm``-style training.

    .venv/bin/python benchmarks/bench_finetune_lm.py [--arch transformer] [--sentences 3000]
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from asrpriv.nnlm import train  # noqa: E402
from asrpriv.nnlm.data import read_corpus  # noqa: E402
from asrpriv.nnlm.runtime import choose_threads  # noqa: E402
from asrpriv.nnlm.model import build_model  # noqa: E402


def baseline_examples_loop(model, vocab, sentences, batch_size, bptt, lr, clip):
    """pytorch/examples word_language_model: batchify + get_batch + manual SGD; returns (tokens, s)."""
    ids = []
    for s in sentences:
        ids.extend(vocab.encode(s))
        ids.append(vocab.eos_id)
    data = torch.tensor(ids, dtype=torch.long)
    nbatch = data.size(0) // batch_size
    data = data[: nbatch * batch_size].view(batch_size, -1).contiguous()  # [B, L], batch first
    criterion = torch.nn.CrossEntropyLoss()
    model.train()
    tokens = 0
    total_loss = 0.0
    start = time.perf_counter()
    for i in range(0, data.size(1) - 1, bptt):
        seq_len = min(bptt, data.size(1) - 1 - i)
        inp, target = data[:, i:i + seq_len], data[:, i + 1:i + 1 + seq_len]
        model.zero_grad()
        output = model(inp)
        loss = criterion(output.reshape(-1, output.size(-1)), target.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        total_loss += loss.item()
        tokens += target.numel()
    return tokens, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", choices=["transformer", "lstm"], default="transformer")
    ap.add_argument("--sentences", type=int, default=3000, help="training sentences per timed run")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3,
                    help="timed runs of each loop: best of each, and the median of per-run ratios")
    ap.add_argument("--epochs", type=int, default=2, help="epochs of the perplexity-vs-time run")
    ap.add_argument("--ppl-sentences", type=int, default=8000)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--batch-by", choices=["tokens", "sentences"], default="tokens",
                    help="finetune-lm batching (server recipe: tokens; client-001: sentences)")
    ap.add_argument("--min-count", type=int, default=2, help="vocabulary: words seen this often in AMI")
    ap.add_argument("--worker", choices=["ours", "base", "base-same-allocator"], default=None,
                    help=argparse.SUPPRESS)
    args = ap.parse_args()

    threads = choose_threads(args.threads)
    torch.set_num_threads(threads)
    corpus = read_corpus(str(ROOT / "examples/data/ami/train_text"), ids=True)
    sents = [s for s in corpus.sentences if s]
    bench = sents[: args.sentences]
    vocab = train.vocab_from_sentences(sents, min_count=args.min_count)  # the AMI vocabulary
    model, config = train.new_model(args.arch, vocab, seed=0)
    init = {k: v.clone() for k, v in model.state_dict().items()}
    mean_len = sum(len(s) + 1 for s in bench) / len(bench)
    bptt = max(2, round(mean_len))

    if args.worker:
        # one timed run in this fresh process: warm-up on a few batches, then the whole slice
        if args.worker == "ours":
            def run():
                model.load_state_dict(init)
                t0 = time.perf_counter()
                res = train.train_lm(model, vocab, bench, optimizer="sgd", lr=1.0, epochs=1,
                                     batch_size=args.batch_size, loss_norm="token", max_grad_norm=0.25,
                                     seed=0, batch_by=args.batch_by)
                return res.tokens / (time.perf_counter() - t0)
            train.train_lm(model, vocab, bench[: 4 * args.batch_size], optimizer="sgd", lr=1.0,
                           batch_size=args.batch_size, seed=0)
        else:
            if args.worker == "base-same-allocator":
                from asrpriv.allocator import retain_freed_blocks

                retain_freed_blocks()

            def run():
                model.load_state_dict(init)
                tokens, seconds = baseline_examples_loop(model, vocab, bench, args.batch_size, bptt,
                                                         lr=1.0, clip=0.25)
                return tokens / seconds
            baseline_examples_loop(model, vocab, bench[: 4 * args.batch_size], args.batch_size, bptt, 1.0, 0.25)
        print(f"{run():.1f}")
        return

    n_params = sum(p.numel() for p in model.parameters())
    print(f"# {args.arch} {n_params:,} parameters, vocabulary {len(vocab):,}, batch {args.batch_size}, "
          f"{len(bench)} sentences ({sum(len(s) + 1 for s in bench):,} tokens), bptt {bptt}, "
          f"{threads} thread(s), torch {torch.__version__}")

    def worker(kind: str) -> float:
        cmd = [sys.executable, __file__, "--worker", kind] + sys.argv[1:]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        return float(out.strip().splitlines()[-1])

    kinds = ["ours", "base", "base-same-allocator"]
    rates: dict[str, list[float]] = {k: [] for k in kinds}
    for rep in range(args.repeats):
        for kind in (kinds if rep % 2 == 0 else kinds[::-1]):
            rates[kind].append(worker(kind))
        print(f"run {rep + 1}: finetune-lm {rates['ours'][-1]:,.0f} tokens/s, examples-style "
              f"{rates['base'][-1]:,.0f} tokens/s, examples-style with finetune-lm's allocator "
              f"setting {rates['base-same-allocator'][-1]:,.0f} tokens/s", flush=True)
    best = {k: max(v) for k, v in rates.items()}
    pairs = sorted(o / b for o, b in zip(rates["ours"], rates["base"]))  # runs next to each other
    alone = sorted(o / b for o, b in zip(rates["ours"], rates["base-same-allocator"]))
    print(f"training throughput: finetune-lm {best['ours']:,.0f} tokens/s vs examples-style "
          f"{best['base']:,.0f} tokens/s (best of {args.repeats}): ratio {best['ours'] / best['base']:.2f}x; "
          f"per run {', '.join(f'{r:.2f}' for r in pairs)}, median {statistics.median(pairs):.2f}x "
          f"(target >= 1.0x)")
    from _record import record

    record("finetune_lm", best["ours"] / best["base"], ">= 1.0x", median=statistics.median(pairs),
           repeats=args.repeats, best={"finetune_lm_tokens_per_s": best["ours"],
                                       "examples_tokens_per_s": best["base"]},
           what=f"finetune-lm training / a pytorch/examples-style loop, tokens/s ({args.arch})")
    print(f"  loops alone (baseline given finetune-lm's allocator setting too): "
          f"{best['base-same-allocator']:,.0f} tokens/s: ratio {best['ours'] / best['base-same-allocator']:.2f}x; "
          f"per run median {statistics.median(alone):.2f}x")

    # perplexity vs time (server recipe: Adam, token-mean loss) on held-out AMI meetings
    train_s = sents[: args.ppl_sentences]
    valid = sents[-1500:]
    model = build_model(config)
    model.load_state_dict(init)
    before, _ = train.evaluate(model, vocab, valid)
    print(f"perplexity vs time ({len(train_s)} training sentences, {len(valid)} held-out):")
    print(f"  t=   0.0 s  epoch 0  valid ppl {math.exp(before):9.2f}")
    elapsed = [0.0]

    def on_epoch(rec):
        elapsed[0] += rec["seconds"]
        print(f"  t={elapsed[0]:6.1f} s  epoch {rec['epoch']}  train ppl {rec['train_ppl']:8.2f}  "
              f"valid ppl {rec['valid_ppl']:8.2f}", flush=True)

    train.train_lm(model, vocab, train_s, valid=valid, optimizer="adam", lr=1e-3, epochs=args.epochs,
                   batch_size=args.batch_size, loss_norm="token", max_grad_norm=1.0, seed=0,
                   batch_by="tokens", on_epoch=on_epoch)


if __name__ == "__main__":
    main()
