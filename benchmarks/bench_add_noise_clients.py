"""Benchmark: ``add-noise --by-client`` (one process, one release of each delta) against one
``add-noise`` process per delta (what ``bin/leakage-audit`` ran before: 464 processes a noise
level, each paying the interpreter and torch start-up).

Model: ``bin/leakage-audit``'s full-mode NNLM shape (LSTM, embedding 256, 2 layers of 256
units) over a vocabulary of ``--vocab`` words (10,000 there: 12.8 MB a delta). ``--clients``
random deltas of it are written to a temporary directory; both sides apply the Gaussian
mechanism (clip 0.5, z 1, secure noise) to every delta and write the releases. Wall-clock
seconds of the whole loop, each side ``--repeats`` times alternated (page cache warm for both);
the ratio is the per-process loop's best time over ``--by-client``'s best.

Target: >= 1.5x at the defaults (12.5 MB deltas, the audit's size). Profiled in one process
(loaded 2-core machine, 2026-11-28): a delta's release costs about 1.3 s of CPU (reading and
checking it, the L2 norm, 3.2M secure normals, writing it), and a process's start-up (Python,
torch, the CLI) about as much again, which --by-client pays once.

    .venv/bin/python benchmarks/bench_add_noise_clients.py [--clients 12] [--vocab 4000] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def write_deltas(where: Path, clients: int, vocab_size: int) -> list[str]:
    """``clients`` random deltas of the leakage audit's LSTM over ``vocab_size`` words."""
    import torch

    from asrpriv.federated.fingerprint import model_fingerprint
    from asrpriv.nnlm import modelfile, train
    from asrpriv.nnlm.vocab import Vocabulary

    vocab = Vocabulary(["<unk>", "<s>", "</s>", *(f"w{i}" for i in range(vocab_size - 3))])
    model, config = train.new_model("lstm", vocab, seed=0, emb_dim=256, hidden_dim=256, layers=2)
    state = {k: v.detach() for k, v in model.state_dict().items()}
    fingerprint = model_fingerprint(config, vocab.words, state)
    gen = torch.Generator().manual_seed(1)
    paths = []
    for i in range(clients):
        delta = {k: torch.randn(v.shape, generator=gen) * 0.01 for k, v in state.items()}
        path = where / f"item{i:03d}.delta.pt"
        modelfile.save_delta(str(path), delta, vocab, config, weight=100,
                             init_fingerprint=fingerprint, client=f"item{i:03d}")
        paths.append(str(path))
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=12)
    parser.add_argument("--vocab", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    asrpriv = [sys.executable, "-m", "asrpriv"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT / "src")}
    mechanism = ["add-noise", "-q", "--mechanism", "gaussian", "--noise-multiplier", "1",
                 "--clip", "0.5"]
    with tempfile.TemporaryDirectory(prefix="bench-add-noise-") as tmp:
        tmp = Path(tmp)
        (tmp / "in").mkdir()
        paths = write_deltas(tmp / "in", args.clients, args.vocab)
        size_mb = os.path.getsize(paths[0]) / 1e6
        times: dict[str, list[float]] = {"per_process": [], "by_client": []}
        for _ in range(args.repeats):
            out = tmp / "loop"
            out.mkdir()
            start = time.perf_counter()
            for path in paths:
                subprocess.run([*asrpriv, *mechanism, path, "-o", str(out / Path(path).name)],
                               check=True, env=env)
            times["per_process"].append(time.perf_counter() - start)
            shutil.rmtree(out)
            start = time.perf_counter()
            subprocess.run([*asrpriv, *mechanism, "--by-client", str(tmp / "batch"), *paths],
                           check=True, env=env)
            times["by_client"].append(time.perf_counter() - start)
            assert len(list((tmp / "batch").iterdir())) == len(paths)
            shutil.rmtree(tmp / "batch")
    best = {k: min(v) for k, v in times.items()}
    ratio = best["per_process"] / best["by_client"]
    print(f"{args.clients} deltas of {size_mb:.1f} MB: one process per delta {best['per_process']:.1f} s, "
          f"--by-client {best['by_client']:.1f} s (best of {args.repeats})")
    print(f"ratio (one process per delta / --by-client, seconds): {ratio:.1f}x   (target >= 1.5x)")
    from _record import record

    record("add_noise_clients", ratio, ">= 1.5x", repeats=args.repeats,
           best={k: round(v, 3) for k, v in best.items()},
           what=f"add-noise, one process per delta / --by-client, {args.clients} deltas of "
                f"{size_mb:.1f} MB (Gaussian, secure noise), seconds")


if __name__ == "__main__":
    main()
