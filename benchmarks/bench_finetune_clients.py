"""Benchmark: many-clients ``finetune-lm --by-client`` vs one process per client, and its
training loop vs a plain in-process PyTorch loop doing the same updates.

Model: paper 001's LSTM LM shape (emb 100, 2 layers of 512, vocabulary = AMI ``train_text``
words seen twice: ~7.4k), random initial weights (speed does not depend on them). Clients: the
rank-1 hypotheses of the bundled AMI adaptation N-best (``examples/data/ami/adapt``), cut into
clients of 24 consecutive utterances (``c000``, ``c001``, ...). Recipe ``client-001`` (SGD lr
1.0, 1 epoch, batch 8 sentences, Eq. 2 per-utterance loss), ``--seed 1``, one thread.

1. Client updates per second: one ``asrpriv finetune-lm --by-client`` process over N clients
   vs ``asrpriv finetune-lm --init --train CLIENT_PART --delta-out`` run as one process per
   client (each pays interpreter start, torch import and model load). The per-process series
   runs on the first ``--single`` clients only (the shared CPU is slow); rates are compared.
   Target >= 10x.
2. Tokens/s of ``asrpriv.federated.client.client_update`` vs a plain PyTorch loop in the same
   process doing the same updates (same model object reset to the same weights, the same
   batches of 8 sentences in the same order, the same per-utterance loss with
   ``F.cross_entropy`` over the padded logits, ``torch.optim.SGD``), alternated, best of
   ``--repeats``. Target >= 0.9x.

``--ablate`` instead times ``client_update`` with each of the loop's speed tricks turned off,
each variant in a fresh process (the allocator setting is per process), alternated.

    .venv/bin/python benchmarks/bench_finetune_clients.py [--clients 100] [--single 20]
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
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}


def make_inputs(work: Path, clients: int) -> None:
    """work/base.pt (paper-shape LSTM), work/clients.tsv (rank-1 rows, client column)."""
    import torch  # noqa: F401

    from _paper001 import UTTS_PER_CLIENT, write_client_inputs

    model, vocab, texts = write_client_inputs(work, clients)
    print(f"# paper-shape LSTM (emb 100, 2x512), vocabulary {len(vocab):,}, "
          f"{sum(p.numel() for p in model.parameters()):,} parameters; {len(texts) // UTTS_PER_CLIENT} "
          f"clients x {UTTS_PER_CLIENT} utterances, "
          f"{sum(len(t.split()) for t in texts):,} words")


def asrpriv(*args: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "asrpriv", *args, "-q"], check=True, env=ENV)
    return time.perf_counter() - start


def processes(work: Path, n_clients: int, n_single: int) -> None:
    lines = (work / "clients.tsv").read_text(encoding="utf-8").splitlines()
    common = ["--init", str(work / "base.pt"), "--recipe", "client-001", "--seed", "1", "--threads", "1"]
    many = asrpriv("finetune-lm", "--train", str(work / "clients.tsv"), "--by-client",
                   str(work / "many"), *common)
    single = 0.0
    for c in range(n_single):
        part = work / f"c{c:03d}.tsv"
        part.write_text("\n".join([lines[0]] + [ln for ln in lines[1:] if ln.split("\t")[1] == f"c{c:03d}"])
                        + "\n", encoding="utf-8")
        single += asrpriv("finetune-lm", "--train", str(part), "-o", str(work / "m.pt"),
                          "--delta-out", str(work / f"c{c:03d}.delta.pt"), *common)
        same = (work / f"c{c:03d}.delta.pt").read_bytes() == (work / "many" / f"c{c:03d}.delta.pt").read_bytes()
        assert same, f"client c{c:03d}: delta differs between the modes"
    many_rate, single_rate = n_clients / many, n_single / single
    print(f"by-client, one process:   {n_clients} clients in {many:.1f} s = {many_rate:.2f} clients/s")
    print(f"one process per client:   {n_single} clients in {single:.1f} s = {single_rate:.2f} clients/s "
          f"({single / n_single:.2f} s each)")
    print(f"ratio (client updates/s): {many_rate / single_rate:.1f}x   (target >= 10x; "
          f"deltas of the {n_single} clients byte-identical in both modes)")
    from _record import record

    record("finetune_clients", many_rate / single_rate, ">= 10x", repeats=1,
           best={"by_client_per_s": many_rate, "process_per_client_per_s": single_rate},
           what="finetune-lm --by-client / one process per client, client updates/s")


def plain_update(init, sentences, seed: int) -> None:
    """The same update as client_update, written as a plain PyTorch loop."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    from asrpriv.nnlm import train
    from asrpriv.nnlm.score import encode_sentences, pad_batch

    model, vocab = init.model, init.vocab
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            tensor.copy_(init.state[name])
    seqs = encode_sentences(vocab, sentences)
    lengths = np.array([len(s) for s in seqs])
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    for idx in train._batches(lengths, 8, rng, "sentences"):
        inputs, targets, mask = pad_batch([seqs[i] for i in idx], vocab.eos_id)
        logits = model(inputs)
        nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                              reduction="none").view_as(targets) * mask
        loss = (nll.sum(1) / mask.sum(1)).mean()  # Eq. 2: mean over utterances of per-word means
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()


def groups(work: Path) -> list[list[list[str]]]:
    from asrpriv.federated.by_client import group_by_client
    from asrpriv.nnlm.data import read_corpus

    corpus = read_corpus(str(work / "clients.tsv"))
    return [g.sentences for _, g in sorted(group_by_client(corpus, "clients.tsv", None).items())]


def in_process(work: Path, repeats: int, n_clients: int) -> None:
    import torch

    from asrpriv.federated import client

    torch.set_num_threads(1)
    init = client.load_init(str(work / "base.pt"))
    data = groups(work)[:n_clients]
    tokens = sum(len(s) + 1 for g in data for s in g)

    def ours():
        for g in data:
            client.client_update(init, g, settings=None, seed=1)

    def plain():
        for g in data:
            plain_update(init, g, 1)

    times = {"ours": [], "plain": []}
    for _ in range(repeats):
        for name, fn in (("ours", ours), ("plain", plain)):
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    best = {k: min(v) for k, v in times.items()}
    ratios = [p / o for o, p in zip(times["ours"], times["plain"])]
    print(f"in-process, {len(data)} clients, {tokens:,} tokens: client_update {tokens / best['ours']:,.0f} "
          f"tokens/s, plain PyTorch loop {tokens / best['plain']:,.0f} tokens/s; ratio best-of-{repeats} "
          f"{best['plain'] / best['ours']:.2f}x, per-run median {statistics.median(ratios):.2f}x "
          f"(target >= 0.9x)")
    from _record import record

    record("finetune_clients_loop", best["plain"] / best["ours"], ">= 0.9x", repeats=repeats,
           median=statistics.median(ratios), best={"ours_s": best["ours"], "plain_s": best["plain"]},
           what="client_update / a plain in-process PyTorch loop, tokens/s")


VARIANTS = ("all", "nn-dropout", "no-allocator", "none")


def ablate_worker(work: Path, variant: str) -> float:
    """Seconds of client_update over every client with the tricks of ``variant`` turned off."""
    import torch

    from asrpriv.federated import client
    from asrpriv.nnlm import model as model_mod, train

    torch.set_num_threads(1)
    off = {"none": {"nn-dropout", "no-allocator"}}.get(variant, {variant})
    if "no-allocator" in off:
        train.retain_freed_blocks = lambda: False
    init = client.load_init(str(work / "base.pt"))
    if "nn-dropout" in off:
        for parent in list(init.model.modules()):
            for name, child in list(parent.named_children()):
                if isinstance(child, model_mod.Dropout):
                    setattr(parent, name, torch.nn.Dropout(child.p))
    data = groups(work)
    start = time.perf_counter()
    for g in data:
        client.client_update(init, g, settings=None, seed=1)
    return time.perf_counter() - start


def ablate(work: Path, repeats: int, variants=VARIANTS) -> None:
    times: dict[str, list[float]] = {v: [] for v in variants}
    for _ in range(repeats):
        for v in variants:
            out = subprocess.run([sys.executable, __file__, "--worker", v, "--work", str(work)],
                                 check=True, env=ENV, capture_output=True, text=True).stdout
            times[v].append(float(out.split()[-1]))
    base = min(times["all"])
    for v in variants:
        print(f"{v:14s} best {min(times[v]):6.2f} s  (all tricks / this: {base / min(times[v]):.3f}; "
              f"runs {', '.join(f'{t:.2f}' for t in times[v])})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--single", type=int, default=20, help="clients run as one process each")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--inproc-clients", type=int, default=30, help="clients of the in-process comparison")
    parser.add_argument("--ablate", action="store_true")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="with --ablate")
    parser.add_argument("--worker", choices=VARIANTS)
    parser.add_argument("--work")
    args = parser.parse_args()
    if args.worker:
        print(ablate_worker(Path(args.work), args.worker))
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        make_inputs(work, args.clients)
        if args.ablate:
            ablate(work, args.repeats, args.variants.split(","))
            return
        processes(work, args.clients, min(args.single, args.clients))
        in_process(work, args.repeats, args.inproc_clients)


if __name__ == "__main__":
    main()
