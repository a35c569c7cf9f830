#!/usr/bin/env python3
"""approx-ngram's NNLM scoring vs rescore-nbest's on the same model.

Model: a paper-shape Transformer LM (asrpriv's default config, random weights: speed does
not depend on them) over the AMI training vocabulary. approx-ngram scores the first --lines
lines of train_text (the issue asks for all 807k words; the default is smaller for this
shared 2-core machine); the rescorer (NnlmScorer, prefix trees) scores the first --utts
utterances of the dev N-best lists, and also approx-ngram's own sentences as one-hypothesis
lists (the same tokens, nothing to share). Prints tokens/s of both and the ratios (target >= 0.8x),
and approx-ngram's end-to-end rate (scoring + averaging + back-off + ARPA text). Timings
alternate --repeats times; the best of each is used.
"""

from __future__ import annotations

import argparse
import io
import os
import time
from collections import Counter
from pathlib import Path

AMI = Path(__file__).resolve().parents[1] / "examples" / "data" / "ami"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=10000, help="train_text lines (0 = all)")
    ap.add_argument("--utts", type=int, default=200, help="dev N-best utterances for the rescorer")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeats", type=int, default=2, help="alternated timings, best of each")
    ap.add_argument("--batch-tokens", type=int, default=4096)
    args = ap.parse_args()

    import tempfile

    import torch

    from asrpriv.io.nbest import NbestReader
    from asrpriv.ngram.approx import average_ngrams, build_approx, token_logprobs, write_approx_arpa
    from asrpriv.nnlm.modelfile import save_model
    from asrpriv.nnlm.train import new_model
    from asrpriv.nnlm.vocab import build_vocabulary
    from asrpriv.rescore.nnlm import NnlmScorer

    torch.set_num_threads(args.threads)
    lines = (AMI / "train_text").read_text().splitlines()
    counts: Counter = Counter(w for line in lines for w in line.split()[1:])
    vocab = build_vocabulary(counts, None)
    model, config = new_model("transformer", vocab, seed=0)
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "bench.pt")
    save_model(path, model, vocab, config)
    print(f"model: {config}  |V|={len(vocab)} threads={args.threads} device={args.device}")

    # rescorer on dev N-best
    src = (AMI / "dev" / "nbest.tsv").read_text().splitlines(keepends=True)
    keep, seen = [src[0]], set()
    for line in src[1:]:
        utt = line.split("\t", 1)[0]
        if utt not in seen:
            if len(seen) == args.utts:
                break
            seen.add(utt)
        keep.append(line)
    nb = os.path.join(tmp, "nb.tsv")
    open(nb, "w").write("".join(keep))
    utts = list(NbestReader(nb))
    scorer = NnlmScorer(path, device=args.device, batch_tokens=args.batch_tokens)
    seqs = [scorer.encode(h.words) for u in utts for h in u.hyps]
    units = [i for i, u in enumerate(utts) for _ in u.hyps]
    r_tokens = sum(len(s) + 1 for s in seqs)
    # the rescorer computes each distinct history of an utterance's N-best once
    distinct = sum(len({tuple(s[:k]) for s in (seqs[i] for i, x in enumerate(units) if x == u)
                        for k in range(len(s) + 1)}) for u in set(units))
    scorer.score(seqs[:50], units=units[:50])  # warm-up

    # approx-ngram on training text
    text = [line.split()[1:] for line in (lines[:args.lines] if args.lines else lines)]
    text = [s for s in text if s]
    m, v = scorer.model, scorer.vocab
    # the rescorer on the same training sentences, each a one-hypothesis list (nothing shared)
    same = [scorer.encode(s) for s in text]
    same_units = list(range(len(same)))
    t_r = t_s = t_same = float("inf")
    for _ in range(args.repeats):  # alternated, best of each (the machine is shared)
        start = time.perf_counter()
        scorer.score(seqs, units=units)
        t_r = min(t_r, time.perf_counter() - start)
        start = time.perf_counter()
        scorer.score(same, units=same_units)
        t_same = min(t_same, time.perf_counter() - start)
        start = time.perf_counter()
        ids, logps = token_logprobs(m, v, text, args.batch_tokens, args.device, scorer=scorer)
        t_s = min(t_s, time.perf_counter() - start)
    start = time.perf_counter() - t_s
    a_tokens = sum(len(x) for x in logps)
    tables = average_ngrams(ids, logps, 3, len(v) + 1)
    orders = build_approx(tables, len(v) + 1, v.unk_id, v.bos_id)
    write_approx_arpa(io.StringIO(), orders, v.words)
    t_all = time.perf_counter() - start
    print(f"rescorer: {len(seqs)} hypotheses of {len(utts)} dev utterances, {r_tokens} tokens, "
          f"{t_r:.2f} s = {r_tokens / t_r:.0f} tokens/s")
    print(f"approx-ngram scoring: {len(text)} train_text sentences, {a_tokens} tokens, {t_s:.2f} s "
          f"= {a_tokens / t_s:.0f} tokens/s; end to end (3-gram ARPA text) {t_all:.2f} s = "
          f"{a_tokens / t_all:.0f} tokens/s")
    print(f"ratio approx-ngram scoring / rescorer: {(a_tokens / t_s) / (r_tokens / t_r):.2f}x "
          f"(target >= 0.8x); end to end: {(a_tokens / t_all) / (r_tokens / t_r):.2f}x")
    from _record import record

    record("approx_ngram", (a_tokens / t_s) / (r_tokens / t_r), ">= 0.8x", repeats=args.repeats,
           best={"approx_tokens_per_s": a_tokens / t_s, "rescorer_tokens_per_s": r_tokens / t_r},
           same_text_ratio=t_same / t_s,
           what="approx-ngram scoring / rescore-nbest's scorer, tokens/s (dev N-best vs train text)")
    print(f"the rescorer on approx-ngram's own sentences (one hypothesis each): {t_same:.2f} s; "
          f"approx-ngram scoring / rescorer on the same text: {t_same / t_s:.2f}x")
    print(f"the rescorer computed {distinct} distinct histories for its {r_tokens} tokens "
          f"({distinct / t_r:.0f} per s); per computed position approx-ngram / rescorer: "
          f"{(a_tokens / t_s) / (distinct / t_r):.2f}x")


if __name__ == "__main__":
    main()
