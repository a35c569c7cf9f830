"""Splits of Kaldi text by whole meetings (ids ``<meeting>_<n>``): the data selection of
bin/sanitized-lm-experiment (paper 003's training set, held-out slice and nested adaptation
sets), done once here so that neither the recipe nor its report computes it.
"""

from __future__ import annotations

import json
import random


def _meeting(utt_line: str) -> str:
    """The meeting of a Kaldi text line (ids ``<meeting>_<n>``)."""
    return utt_line.split()[0].split("_")[0]


def split_meetings(data: str, out: str, seed: int, heldout_share: float,
                   fractions: list[int]) -> dict:
    """Step 1 of bin/sanitized-lm-experiment: DATA/train_text split by whole meetings.

    The scenario meetings (ES/IS/TS, the dev set's kind, as the paper's adaptation set matches
    its test set) in sorted order, shuffled with ``seed``, give first the held-out slice
    (``heldout_share`` % of all words), then the adaptation pool (max(fractions) % of what
    remains for T, i.e. of T + pool); the rest and every non-scenario meeting form the training
    set T. Adaptation set f = the pool's first meetings until f % of T's words. Writes OUT/NAME.txt
    (the lines of NAME's meetings, as they are) and OUT/NAME_ne.tsv (their rows of
    DATA/ne/train_ne.tsv) for NAME = train, heldout and adapt<f>, and OUT/split.json (word
    counts and meetings, which it returns).
    """
    with open(f"{data}/train_text", encoding="utf-8") as f:
        lines = [line for line in f if line.strip()]
    words: dict[str, int] = {}
    for line in lines:
        m = _meeting(line)
        words[m] = words.get(m, 0) + len(line.split()) - 1
    meetings = sorted(m for m in words if m[:2] in ("ES", "IS", "TS"))
    random.Random(int(seed)).shuffle(meetings)
    total = sum(words.values())
    part, acc, i = {}, 0, 0
    while acc < total * float(heldout_share) / 100:           # held-out slice
        part[meetings[i]] = "heldout"
        acc += words[meetings[i]]
        i += 1
    rest = total - acc
    pool_target = rest * max(fractions) / (100 + max(fractions))   # pool = max% of what remains for T
    pool, pacc = [], 0
    while pacc < pool_target:
        pool.append(meetings[i])
        pacc += words[meetings[i]]
        i += 1
    for m in meetings[i:] + [m for m in words if m[:2] not in ("ES", "IS", "TS")]:
        part[m] = "train"
    t_words = total - acc - pacc
    sets: dict[int, list[str]] = {f: [] for f in fractions}
    stats: dict = {"words": total, "heldout": acc, "train": t_words}
    for f in fractions:
        n = 0
        for m in pool:
            if n >= t_words * f / 100:
                break
            sets[f].append(m)
            n += words[m]
        stats[f"adapt{f}"] = n

    def write(name: str, keep: set[str]) -> None:
        with open(f"{out}/{name}.txt", "w", encoding="utf-8") as o:
            o.writelines(line for line in lines if _meeting(line) in keep)
        ids = {line.split()[0] for line in lines if _meeting(line) in keep}
        with open(f"{data}/ne/train_ne.tsv", encoding="utf-8") as src, \
                open(f"{out}/{name}_ne.tsv", "w", encoding="utf-8") as o:
            o.write(next(src))
            o.writelines(row for row in src if row.split("\t")[0] in ids)

    write("train", {m for m, p in part.items() if p == "train"})
    write("heldout", {m for m, p in part.items() if p == "heldout"})
    for f in fractions:
        write(f"adapt{f}", set(sets[f]))
    stats["meetings"] = {"heldout": sorted(m for m, p in part.items() if p == "heldout"),
                         **{f"adapt{f}": sorted(sets[f]) for f in fractions}}
    with open(f"{out}/split.json", "w", encoding="utf-8") as o:
        json.dump(stats, o, indent=1)
    return stats
