"""Splits of Kaldi text by whole meetings (ids ``<meeting>_<n>``): the data selection of
bin/sanitized-lm-experiment (paper 003's training set, held-out slice and nested adaptation
sets), reached through ``select-text --split-dir`` (:func:`asrpriv.io.select.select_text`), so
that neither the recipe nor its report computes it.
"""

from __future__ import annotations

import json
import os
import random
from typing import Sequence

from asrpriv.errors import AsrprivError, InputError, arg
from asrpriv.io.lines import iter_lines

#: the scenario meetings (the dev set's kind): the pool of the held-out and adaptation sets
SCENARIO = ("ES", "IS", "TS")


def _meeting(utt_line: str) -> str:
    """The meeting of a Kaldi text line (ids ``<meeting>_<n>``)."""
    return utt_line.split()[0].split("_")[0]


def _take(meetings: list[str], words: dict[str, int], i: int, target: float, what: str) -> tuple[list[str], int, int]:
    """Meetings from position ``i`` on until their words reach ``target``: (taken, words, next i)."""
    taken, acc = [], 0
    while acc < target:
        if i >= len(meetings):
            raise AsrprivError(f"{what}: the scenario meetings ({len(meetings)}) run out before "
                               f"{target:.0f} words; lower {arg('heldout_share')} or {arg('adapt_shares')}")
        taken.append(meetings[i])
        acc += words[meetings[i]]
        i += 1
    return taken, acc, i


def split_meetings(text: str, spans: str, out: str, seed: int, heldout_share: float,
                   fractions: Sequence[int]) -> dict:
    """Step 1 of bin/sanitized-lm-experiment: Kaldi TEXT split by whole meetings.

    The scenario meetings (ES/IS/TS, the dev set's kind, as the paper's adaptation set matches
    its test set) in sorted order, shuffled with ``seed``, give first the held-out slice
    (``heldout_share`` % of all words), then the adaptation pool (max(fractions) % of what
    remains for T, i.e. of T + pool); the rest and every non-scenario meeting form the training
    set T. Adaptation set f = the pool's first meetings until f % of T's words. Writes OUT/NAME.txt
    (the lines of NAME's meetings, in file order) and OUT/NAME_ne.tsv (their rows of the span
    TSV ``spans``, after its header) for NAME = train, heldout and adapt<f>, and OUT/split.json
    (word counts and meetings, which it returns). Blank lines are dropped.
    """
    return split_counted(text, spans, out, seed, heldout_share, fractions)[0]


def split_counted(text: str, spans: str, out: str, seed: int, heldout_share: float,
                  fractions: Sequence[int]) -> tuple[dict, int]:
    """:func:`split_meetings` and the number of (non-blank) lines it split."""
    if not fractions:
        raise AsrprivError(f"{arg('adapt_shares')}: give at least one share (percent of T)")
    if not 0 <= float(heldout_share) < 100 or min(fractions) <= 0:
        raise AsrprivError(f"{arg('heldout_share')} must be in [0, 100) and every "
                           f"{arg('adapt_shares')} > 0, got {heldout_share} and {list(fractions)}")
    if not os.path.isdir(out):
        raise AsrprivError(f"{out}: not a directory (the split's folder)")
    lines = [line + "\n" for _n, line in iter_lines(text) if line.strip()]
    words: dict[str, int] = {}
    for line in lines:
        m = _meeting(line)
        words[m] = words.get(m, 0) + len(line.split()) - 1
    meetings = sorted(m for m in words if m[:2] in SCENARIO)
    random.Random(int(seed)).shuffle(meetings)
    total = sum(words.values())
    held, acc, i = _take(meetings, words, 0, total * float(heldout_share) / 100, "held-out slice")
    part = {m: "heldout" for m in held}
    rest = total - acc
    pool_target = rest * max(fractions) / (100 + max(fractions))   # pool = max% of what remains for T
    pool, pacc, i = _take(meetings, words, i, pool_target, "adaptation pool")
    for m in meetings[i:] + [m for m in words if m[:2] not in SCENARIO]:
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
    span_rows = list(iter_lines(spans))
    if not span_rows:
        raise InputError(spans, None, "empty span TSV: expected a header row")

    def write(name: str, keep: set[str]) -> None:
        with open(f"{out}/{name}.txt", "w", encoding="utf-8") as o:
            o.writelines(line for line in lines if _meeting(line) in keep)
        ids = {line.split()[0] for line in lines if _meeting(line) in keep}
        with open(f"{out}/{name}_ne.tsv", "w", encoding="utf-8") as o:
            o.write(span_rows[0][1] + "\n")
            o.writelines(row + "\n" for _n, row in span_rows[1:] if row.split("\t")[0] in ids)

    write("train", {m for m, p in part.items() if p == "train"})
    write("heldout", {m for m, p in part.items() if p == "heldout"})
    for f in fractions:
        write(f"adapt{f}", set(sets[f]))
    stats["meetings"] = {"heldout": sorted(m for m, p in part.items() if p == "heldout"),
                         **{f"adapt{f}": sorted(sets[f]) for f in fractions}}
    with open(f"{out}/split.json", "w", encoding="utf-8") as o:
        json.dump(stats, o, indent=1)
    return stats, len(lines)
