#!/usr/bin/env python3
"""Write the importer samples from our AMI N-best list, in each tool's own conventions.

Usage: python examples/importers/make_samples.py [OUT_DIR]   (default: this directory)

Source: the first 5 utterances (20 hypotheses each) of examples/data/ami/dev/nbest.tsv and
their references in examples/data/ami/dev/ref.txt. Standard library only, so the samples
do not depend on the code they test. README.md in this directory says what each file is.
"""

from __future__ import annotations

import json
import math
import os
import sys
from decimal import Decimal

HERE = os.path.dirname(os.path.abspath(__file__))
AMI = os.path.join(HERE, "..", "data", "ami", "dev")
N_UTTS = 5
BYTELOG_NATS = 1024.0 / 10000.5  # SRILM: BytelogToLogP(b) = b * 1024 / 10000.5 / ln 10 (log10)


def load():
    rows, order = {}, []
    with open(os.path.join(AMI, "nbest.tsv"), encoding="utf-8") as f:
        cols = f.readline().rstrip("\n").split("\t")
        for line in f:
            r = dict(zip(cols, line.rstrip("\n").split("\t")))
            if r["utt_id"] not in rows:
                if len(order) == N_UTTS:
                    break
                order.append(r["utt_id"])
                rows[r["utt_id"]] = []
            rows[r["utt_id"]].append(r)
    refs = {}
    with open(os.path.join(AMI, "ref.txt"), encoding="utf-8") as f:
        for line in f:
            parts = line.split(None, 1)
            if parts and parts[0] in rows:
                refs[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    for u in order:
        rows[u].sort(key=lambda r: int(r["rank"]))
    return order, rows, refs


def neg(s: str) -> str:
    """Negate a decimal string exactly (a Kaldi cost is a negated log-likelihood)."""
    return str(-Decimal(s))


def write(path, lines):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(line + "\n" for line in lines)


def kaldi(out, order, rows):
    d = os.path.join(out, "kaldi")
    keyed = [(f"{u}-{r['rank']}", r) for u in order for r in rows[u]]
    write(os.path.join(d, "text"), [f"{k} {r['text']}".rstrip() for k, r in keyed])
    write(os.path.join(d, "ac_cost"), [f"{k} {neg(r['am_score'])}" for k, r in keyed])
    write(os.path.join(d, "lm_cost"), [f"{k} {neg(r['lm_score'])}" for k, r in keyed])
    vocab = sorted({w for _k, r in keyed for w in r["text"].split()})
    ids = {w: i for i, w in enumerate(vocab, 1)}
    write(os.path.join(d, "words.txt"), ["<eps> 0"] + [f"{w} {ids[w]}" for w in vocab])
    write(os.path.join(d, "words.int"),
          [" ".join([k] + [str(ids[w]) for w in r["text"].split()]) for k, r in keyed])


def espnet(out, order, rows):
    n_best = max(len(rows[u]) for u in order)
    for n in range(1, n_best + 1):
        d = os.path.join(out, "espnet", f"{n}best_recog")
        have = [(u, rows[u][n - 1]) for u in order if len(rows[u]) >= n]
        write(os.path.join(d, "text"), [f"{u} {r['text']}".rstrip() for u, r in have])
        # str(hyp.score) of a float32 tensor: torch prints 4 decimals
        write(os.path.join(d, "score"),
              [f"{u} tensor({Decimal(r['am_score']) + Decimal(r['lm_score'])})" for u, r in have])


def nemo(out, order, rows, refs):
    d = os.path.join(out, "nemo")
    write(os.path.join(d, "manifest.json"),
          [json.dumps({"audio_filepath": f"audio/{u}.wav", "duration": 0.0, "text": refs[u]})
           for u in order])
    width = len(rows[order[0]])
    assert all(len(rows[u]) == width for u in order), "NeMo beams need the same width everywhere"
    write(os.path.join(d, f"preds_out_width{width}_alpha1.0_beta0.0.tsv"),
          [f"{r['text']}\t{Decimal(r['am_score']) + Decimal(r['lm_score'])}"
           for u in order for r in rows[u]])
    write(os.path.join(d, "predictions.json"),
          [json.dumps({"audio_filepath": f"audio/{u}.wav", "duration": 0.0, "text": refs[u],
                       "pred_text": rows[u][0]["text"]}) for u in order])


def bytelog(nats: float) -> int:
    """SRILM LogPtoBytelog: rint(log10 * ln10 * 10000.5 / 1024) = rint(ln * 10000.5 / 1024)."""
    return int(round(nats / BYTELOG_NATS))


def split_bytelogs(total_nats: float, n: int) -> list[int]:
    """Per-word integer bytelogs whose sum is the rounded total (cumulative rounding)."""
    cum = [bytelog(total_nats * (i + 1) / n) for i in range(n)]
    return [c - p for c, p in zip(cum, [0] + cum[:-1])]


def srilm(out, order, rows):
    d = os.path.join(out, "srilm")
    ln10 = math.log(10.0)
    for u in order:
        plain, v1, v2 = [], ["NBestList1.0"], ["NBestList2.0"]
        for r in rows[u]:
            am, lm, words = float(r["am_score"]), float(r["lm_score"]), r["text"].split()
            plain.append(f"{am / ln10:.15g} {lm / ln10:.15g} {len(words)} {r['text']}".rstrip())
            v1.append(f"({bytelog(am + lm)}) {r['text']}".rstrip())
            gs, as_ = split_bytelogs(lm, len(words)), split_bytelogs(am, len(words))
            toks = [f"{w} ( st: {0.3 * i:.2f} et: {0.3 * i + 0.25:.2f} g: {g} a: {a} )"
                    for i, (w, g, a) in enumerate(zip(words, gs, as_))]
            v2.append(" ".join([f"({sum(gs) + sum(as_)})"] + toks))
        write(os.path.join(d, "plain", f"{u}.score"), plain)
        write(os.path.join(d, "nbest1", f"{u}.nbest"), v1)
        write(os.path.join(d, "nbest2", f"{u}.nbest"), v2)
    write(os.path.join(d, "plain.list"), [f"plain/{u}.score" for u in order])


def icefall(out, order, rows, refs):
    lines = []
    for u in sorted(order):  # icefall sorts its results by cut id
        lines.append(f"{u}:\tref={refs[u].split()!r}")
        lines.append(f"{u}:\thyp={rows[u][0]['text'].split()!r}")
    write(os.path.join(out, "icefall", "recogs-dev-sample.txt"), lines)


def tsv(out, order, rows):
    lines = ["key,n,ac,lm,hyp"]
    for u in order:
        for r in rows[u]:
            lines.append(f"{u},{r['rank']},{r['am_score']},{r['lm_score']},\"{r['text']}\"")
    write(os.path.join(out, "tsv", "nbest.csv"), lines)


def main(out: str) -> None:
    order, rows, refs = load()
    kaldi(out, order, rows)
    espnet(out, order, rows)
    nemo(out, order, rows, refs)
    srilm(out, order, rows)
    icefall(out, order, rows, refs)
    tsv(out, order, rows)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else HERE)
