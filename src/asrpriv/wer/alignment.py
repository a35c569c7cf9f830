"""Word alignments of a hypothesis against a reference, as NIST sclite makes them.

Two ways to align, with the same result wherever it matters:

* :func:`count_errors` (the fast path, used for plain WER): RapidFuzz's Levenshtein (C++)
  gives a minimum-edit-distance alignment with unit weights; its substitutions, deletions and
  insertions are counted from ``Levenshtein.editops``. sclite does not use unit weights: its
  dynamic programme costs a substitution 4, an insertion or deletion 3, a match 0
  (``INS/DEL/SUB_COST_SCLITE`` in SCTK). Among alignments with the same number of errors it
  therefore prefers fewer substitutions (one deletion plus one insertion, cost 6, beats two
  substitutions, cost 8). Whenever the unit alignment has two or more substitutions, its
  sclite cost ``3 E + S`` (E = S + D + I errors) is compared with RapidFuzz's weighted
  distance (weights 3, 3, 4); if it is higher, the utterance is re-aligned with
  :func:`sclite_align` (between the common prefix and suffix), so the counts are those of a
  sclite-optimal alignment.
* :func:`sclite_align`: a port of sclite's ``Network_dpalign`` for two word strings (no
  alternations), including its tie-breaking (substitution/match first, then deletion, then
  insertion) and back-trace, for per-word alignments (``--details``, MAPSSWE). RapidFuzz
  cannot back-trace a weighted distance, so this one is written here.

Known difference with sclite: alignments with the same sclite cost ``3 E + S`` can still
split it differently (two substitutions more and one deletion/insertion pair less keeps E; in
principle even E can differ, one error more for three substitutions less). Where the fast
path's unit alignment ties with sclite's in cost but not in back-trace, its S/D/I split (and,
very rarely, E) may differ from sclite's. The tests check that the totals and the split agree
with sclite on the bundled data. Per-word alignments (``--details``, ``--compare``) always
use :func:`sclite_align` and agree with sclite word for word.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from rapidfuzz.distance import Levenshtein

#: sclite's costs (SCTK ``wwd`` defaults): insertion, deletion, substitution; a match costs 0
SCLITE_WEIGHTS = (3, 3, 4)

#: one alignment step: (eval, ref_index or -1, hyp_index or -1); eval is C, S, D or I
Step = tuple[str, int, int]


def count_errors(ref: Sequence, hyp: Sequence) -> tuple[int, int, int]:
    """Return ``(substitutions, deletions, insertions)`` of the sclite-optimal alignment.

    ``ref`` and ``hyp`` are sequences of hashable tokens (words or word ids). Unit-weight
    RapidFuzz alignment first; re-aligned with sclite's weights where that changes the cost.
    """
    if ref == hyp:
        return 0, 0, 0
    if not hyp:
        return 0, len(ref), 0
    if not ref:
        return 0, 0, len(hyp)
    subs = dels = ins = 0
    for op in Levenshtein.editops(ref, hyp):
        tag = op.tag
        if tag == "replace":
            subs += 1
        elif tag == "delete":
            dels += 1
        else:
            ins += 1
    if subs >= 2:
        errors = subs + dels + ins
        if Levenshtein.distance(ref, hyp, weights=SCLITE_WEIGHTS) < 3 * errors + subs:
            return _sclite_counts(ref, hyp)
    return subs, dels, ins


def count_totals(pairs: Iterable[tuple[Sequence, Sequence]]) -> tuple[int, int, int, int, int, int]:
    """Totals over ``(ref, hyp)`` pairs, :func:`count_errors` summed.

    Returns ``(sentences, sentence_errors, ref_words, substitutions, deletions, insertions)``.
    """
    sent = sent_err = n_ref = subs = dels = ins = 0
    for ref, hyp in pairs:
        sent += 1
        n_ref += len(ref)
        if ref == hyp:
            continue
        sent_err += 1
        s, d, i = count_errors(ref, hyp)
        subs += s
        dels += d
        ins += i
    return sent, sent_err, n_ref, subs, dels, ins


def _sclite_counts(ref: Sequence, hyp: Sequence) -> tuple[int, int, int]:
    """Counts of sclite's alignment, computed on the part between the common prefix and suffix.

    Matching a common prefix/suffix word for word is optimal under sclite's costs (a match
    costs 0 and a substitution, 4, costs less than a deletion plus an insertion, 6), so the
    trimmed programme has the same optimal cost; it is only a few words long.
    """
    n, m = len(ref), len(hyp)
    lo = 0
    while lo < n and lo < m and ref[lo] == hyp[lo]:
        lo += 1
    hi_r, hi_h = n, m
    while hi_r > lo and hi_h > lo and ref[hi_r - 1] == hyp[hi_h - 1]:
        hi_r -= 1
        hi_h -= 1
    return counts_of(sclite_align(ref[lo:hi_r], hyp[lo:hi_h]))


def counts_of(path: Sequence[Step]) -> tuple[int, int, int]:
    """``(substitutions, deletions, insertions)`` of an alignment path."""
    subs = dels = ins = 0
    for ev, _r, _h in path:
        if ev == "S":
            subs += 1
        elif ev == "D":
            dels += 1
        elif ev == "I":
            ins += 1
    return subs, dels, ins


#: above this many DP cells (reference x hypothesis words), :func:`sclite_align` runs the
#: row-vectorized, checkpointed programme (:func:`_align_checkpointed`) instead of the
#: pure-Python one; both give the same path
LARGE_CELLS = 40_000


def sclite_align(ref: Sequence, hyp: Sequence) -> list[Step]:
    """Align ``hyp`` to ``ref`` exactly as sclite does; return the path in order.

    Dynamic programme over cells ``D[a][b]`` (a reference words, b hypothesis words consumed):
    ``D[a][b] = min(D[a-1][b-1] + (0 if equal else 4), D[a-1][b] + 3, D[a][b-1] + 3)``, ties
    resolved as sclite's ``calculate_internal_cells`` does (match/substitution if not worse
    than both, else deletion if strictly better than insertion, else insertion); the margins
    are pure insertions (a = 0) and deletions (b = 0). Back-trace from ``(len(ref), len(hyp))``.

    Memory: short utterances keep every back pointer (``(n+1)(m+1)`` bytes); above
    :data:`LARGE_CELLS` cells the programme keeps only every k-th row of costs (k about
    sqrt(n)) and recomputes one block of k rows of back pointers at a time during the
    back-trace, so memory is O(m sqrt(n)) instead of O(n m) (a 30,000-word line: ~25 MB
    instead of ~0.9 GB), for twice the arithmetic. Same pointers, so the same path.
    """
    if ref == hyp:
        return [("C", i, i) for i in range(len(ref))]
    if (len(ref) + 1) * (len(hyp) + 1) > LARGE_CELLS:
        return _align_checkpointed(ref, hyp)
    return _align_full(ref, hyp)


def _align_full(ref: Sequence, hyp: Sequence) -> list[Step]:
    """The whole back-pointer table in memory (pure Python; for short utterances)."""
    n, m = len(ref), len(hyp)
    ins_w, del_w, sub_w = SCLITE_WEIGHTS
    # back pointers: 0 = diagonal, 1 = deletion (up), 2 = insertion (left)
    back = [bytearray(m + 1) for _ in range(n + 1)]
    prev = [ins_w * b for b in range(m + 1)]
    row0 = back[0]
    for b in range(1, m + 1):
        row0[b] = 2
    for a in range(1, n + 1):
        word = ref[a - 1]
        cur = [0] * (m + 1)
        cur[0] = prev[0] + del_w
        brow = back[a]
        brow[0] = 1
        left = cur[0]
        for b in range(1, m + 1):
            sub = prev[b - 1] + (0 if hyp[b - 1] == word else sub_w)
            dele = prev[b] + del_w
            ins = left + ins_w
            if sub <= dele and sub <= ins:
                left = sub
            elif dele < ins:
                left = dele
                brow[b] = 1
            else:
                left = ins
                brow[b] = 2
            cur[b] = left
        prev = cur
    path: list[Step] = []
    a, b = n, m
    while a > 0 or b > 0:
        move = back[a][b]
        if move == 0:
            a -= 1
            b -= 1
            path.append(("C" if ref[a] == hyp[b] else "S", a, b))
        elif move == 1:
            a -= 1
            path.append(("D", a, -1))
        else:
            b -= 1
            path.append(("I", -1, b))
    path.reverse()
    return path


def _row_pointers(np, prev, eq_row, first: int, out_cur, out_back) -> None:
    """One row of the programme, vectorized: costs into ``out_cur``, pointers into ``out_back``.

    ``cur[b] = min(t[b], cur[b-1] + 3)`` with ``t = min(sub, del)`` has the closed form
    ``cur[b] = 3 b + min_{k<=b} (t[k] - 3 k)`` (a running minimum), so a row needs no Python
    loop. The pointer of each cell applies sclite's tie rule to (sub, del, ins) with
    ``ins = cur[b-1] + 3``, exactly as :func:`_align_full` does.
    """
    ins_w, del_w, sub_w = SCLITE_WEIGHTS
    m = prev.shape[0] - 1
    sub = prev[:-1] + np.where(eq_row, 0, sub_w)
    dele = prev[1:] + del_w
    t = np.empty(m + 1, dtype=np.int64)
    t[0] = first
    np.minimum(sub, dele, out=t[1:])
    ramp = np.arange(m + 1, dtype=np.int64) * ins_w
    t -= ramp
    np.minimum.accumulate(t, out=t)
    t += ramp
    out_cur[:] = t
    ins = t[:-1] + ins_w
    diag = (sub <= dele) & (sub <= ins)
    back = np.where(dele < ins, 1, 2).astype(np.uint8)
    back[diag] = 0
    out_back[0] = 1
    out_back[1:] = back


def _align_checkpointed(ref: Sequence, hyp: Sequence) -> list[Step]:
    """:func:`_align_full`'s path in O(m sqrt(n)) memory (numpy rows, checkpointed costs)."""
    import math

    import numpy as np

    n, m = len(ref), len(hyp)
    ids: dict = {}
    hyp_ids = np.fromiter((ids.setdefault(w, len(ids)) for w in hyp), dtype=np.int64, count=m)
    ref_ids = [ids.get(w, -1) for w in ref]
    ins_w, del_w, _sub_w = SCLITE_WEIGHTS
    k = max(1, math.isqrt(n))
    # costs of rows 0, k, 2k, ... (row a = a reference words consumed)
    checkpoints: dict[int, np.ndarray] = {}
    prev = np.arange(m + 1, dtype=np.int64) * ins_w
    checkpoints[0] = prev.astype(np.int32)
    cur = np.empty(m + 1, dtype=np.int64)
    scratch = np.empty(m + 1, dtype=np.uint8)
    for a in range(1, n + 1):
        _row_pointers(np, prev, hyp_ids == ref_ids[a - 1], prev[0] + del_w, cur, scratch)
        prev, cur = cur, prev
        if a % k == 0:
            checkpoints[a] = prev.astype(np.int32)
    path: list[Step] = []
    a, b = n, m
    while a > 0 or b > 0:
        if a == 0:
            b -= 1
            path.append(("I", -1, b))
            continue
        # recompute the pointers of rows start+1 .. top (the block holding row a)
        start = ((a - 1) // k) * k
        rows = a - start
        back = np.empty((rows + 1, m + 1), dtype=np.uint8)
        prev = checkpoints[start].astype(np.int64)
        for r in range(1, rows + 1):
            row = start + r
            _row_pointers(np, prev, hyp_ids == ref_ids[row - 1], prev[0] + del_w, cur, back[r])
            prev, cur = cur, prev
        while a > start and (a > 0 or b > 0):
            move = back[a - start, b] if b > 0 else 1
            if move == 0:
                a -= 1
                b -= 1
                path.append(("C" if ref[a] == hyp[b] else "S", a, b))
            elif move == 1:
                a -= 1
                path.append(("D", a, -1))
            else:
                b -= 1
                path.append(("I", -1, b))
        del back
    path.reverse()
    return path
