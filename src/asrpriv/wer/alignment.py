"""Word alignments of a hypothesis against a reference, as NIST sclite makes them.

Two ways to align, with the same result wherever it matters:

* :func:`count_errors` (the fast path, used for plain WER): most utterances need no
  alignment at all. RapidFuzz's bit-parallel unit edit distance (C++), the lengths and, where
  needed, the longest common subsequence fix the counts of every sclite-optimal alignment
  (:func:`_forced_counts`). The others get a minimum-edit-distance alignment with unit
  weights, whose substitutions, deletions and insertions are counted from
  ``Levenshtein.editops``. sclite does not use unit weights: its
  dynamic programme costs a substitution 4, an insertion or deletion 3, a match 0
  (``INS/DEL/SUB_COST_SCLITE`` in SCTK). Among alignments with the same number of errors it
  therefore prefers fewer substitutions (one deletion plus one insertion, cost 6, beats two
  substitutions, cost 8). Whenever the unit alignment has two or more substitutions, its
  sclite cost ``3 E + S`` (E = S + D + I errors) is compared with RapidFuzz's weighted
  distance (weights 3, 3, 4); if it is higher, the utterance is re-aligned with
  :func:`sclite_align` (between the common prefix and suffix), so the counts are those of a
  sclite-optimal alignment. Long utterances (more than :data:`LARGE_CELLS` cells) with two
  or more substitutions go to :func:`sclite_align` directly (banded, see below): the
  weighted distance would cost as much as the alignment.
* :func:`sclite_align`: a port of sclite's ``Network_dpalign`` for two word strings (no
  alternations), including its tie-breaking (substitution/match first, then deletion, then
  insertion) and back-trace, for per-word alignments (``--details``, MAPSSWE). RapidFuzz
  cannot back-trace a weighted distance, so this one is written here. Long utterances use a
  banded, checkpointed form of the same programme (same path, memory O(w sqrt n) for a band
  of w columns instead of the (n+1)(m+1) byte table: a 30,000-word line takes tens of MB,
  not 0.9 GB).

Where several sclite-optimal alignments exist with different counts (same cost ``3 E + S``,
e.g. one error more and three substitutions less), the fast path hands the utterance to
:func:`sclite_align`, whose back-trace is sclite's; so counts equal sclite's (checked by
tests/test_score_wer_differential.py against sclite itself). Per-word alignments
(``--details``, ``--compare``) always use :func:`sclite_align` and agree with sclite word for
word.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from rapidfuzz.distance import Indel, Levenshtein

#: sclite's costs (SCTK ``wwd`` defaults): insertion, deletion, substitution; a match costs 0
SCLITE_WEIGHTS = (3, 3, 4)

#: one alignment step: (eval, ref_index or -1, hyp_index or -1); eval is C, S, D or I
Step = tuple[str, int, int]


def count_errors(ref: Sequence, hyp: Sequence) -> tuple[int, int, int]:
    """Return ``(substitutions, deletions, insertions)`` of the sclite-optimal alignment.

    ``ref`` and ``hyp`` are sequences of hashable tokens (words or word ids). Most utterances
    need only RapidFuzz's bit-parallel distances, no alignment (see :func:`_forced_counts`);
    the rest are aligned with unit weights and re-aligned with sclite's where that changes
    the cost.
    """
    if ref == hyp:
        return 0, 0, 0
    n, m = len(ref), len(hyp)
    if not m or not n:
        return 0, n, m
    counts = _forced_counts(ref, hyp, n, m, Levenshtein.distance(ref, hyp))
    return counts if counts is not None else _aligned_counts(ref, hyp)


def _forced_counts(ref: Sequence, hyp: Sequence, n: int, m: int,
                   errors: int) -> tuple[int, int, int] | None:
    """The counts when ``errors`` (the unit edit distance) and the lengths fix them, else None.

    Every unit-optimal alignment has ``S + D + I = errors`` and ``D - I = n - m``, so
    ``S = errors - |n - m| - 2 min(D, I)``:

    * when ``errors - |n - m| <= 1``, ``min(D, I) = 0`` and S is that difference (0 or 1), the
      same for every unit-optimal alignment, and with fewer than two substitutions the unit
      alignment is sclite-optimal (:func:`_aligned_counts` accepts it unchecked too);
    * otherwise a bound decides. An alignment with M matches and S substitutions costs
      ``3 (n + m) - 6 M - 2 S`` under sclite's weights (ins 3, del 3, sub 4), so the best one
      maximizes ``3 M + S``. Every alignment has ``M <= L`` (the longest common subsequence)
      and ``S <= min(n, m) - M``, hence ``3 M + S <= 2 L + min(n, m)``; an alignment that
      reaches the bound is optimal, and reaching it forces ``M = L`` and ``S = min(n, m) - L``:
      the counts are unique. An alignment has ``n + m - 2 M - S`` errors, so one reaches the
      bound exactly when ``errors = max(n, m) - L``. L comes from RapidFuzz's bit-parallel
      Indel distance (``n + m - 2 L``), much cheaper than an alignment.
    """
    gap = n - m
    forced = errors - (gap if gap >= 0 else -gap)
    if forced <= 1:
        subs = forced
    else:
        lcs = (n + m - Indel.distance(ref, hyp)) >> 1
        if errors + lcs != (n if n > m else m):
            return None
        subs = (m if n > m else n) - lcs
    rest = errors - subs                                 # D + I
    return subs, (rest + gap) >> 1, (rest - gap) >> 1


def _aligned_counts(ref: Sequence, hyp: Sequence) -> tuple[int, int, int]:
    """Counts of a unit-weight alignment (RapidFuzz editops) when they are sclite's, else of
    sclite's alignment (:func:`_sclite_counts`).

    With E errors and S substitutions in a unit-optimal alignment, every alignment of sclite
    cost ``3 E + S`` has the same counts when S <= 2 (one with E errors has S of the same
    parity, since D - I is fixed; one with more errors costs at least 3 more) -- provided the
    cost is optimal, which for S = 2 RapidFuzz's weighted distance checks (S <= 1 is always
    optimal). With S >= 3 an alignment with one error more and three substitutions less costs
    the same, and sclite's back-trace decides: those are aligned by :func:`_sclite_counts`.
    """
    subs = dels = ins = 0
    for op in Levenshtein.editops(ref, hyp):
        tag = op.tag
        if tag == "replace":
            subs += 1
        elif tag == "delete":
            dels += 1
        else:
            ins += 1
    if subs >= 3:
        # another alignment may cost the same with one error more and three substitutions
        # less (3 E + S unchanged); which one sclite reports is its back-trace's choice
        return _sclite_counts(ref, hyp)
    if subs == 2:          # (the bound of _forced_counts is not reached: checked by the callers)
        if (len(ref) + 1) * (len(hyp) + 1) > LARGE_CELLS:
            # RapidFuzz's weighted distance is a full O(n m) programme here; the banded
            # sclite alignment costs about the same and is exact, so use it directly
            return _sclite_counts(ref, hyp)
        errors = subs + dels + ins
        if Levenshtein.distance(ref, hyp, weights=SCLITE_WEIGHTS) < 3 * errors + subs:
            return _sclite_counts(ref, hyp)
    return subs, dels, ins


def count_totals(pairs: Iterable[tuple[Sequence, Sequence]]) -> tuple[int, int, int, int, int, int]:
    """Totals over ``(ref, hyp)`` pairs, :func:`count_errors` summed.

    Returns ``(sentences, sentence_errors, ref_words, substitutions, deletions, insertions)``.
    """
    sent = sent_err = n_ref = subs = dels = ins = 0
    distance = Levenshtein.distance
    for ref, hyp in pairs:                         # count_errors, inlined (the hot loop)
        sent += 1
        n = len(ref)
        n_ref += n
        if ref == hyp:
            continue
        sent_err += 1
        m = len(hyp)
        if not m or not n:
            dels += n
            ins += m
            continue
        counts = _forced_counts(ref, hyp, n, m, distance(ref, hyp)) or _aligned_counts(ref, hyp)
        subs += counts[0]
        dels += counts[1]
        ins += counts[2]
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
    _, b = _trace_rows(back, 0, ref, hyp, n, m, 0, path)
    while b > 0:  # row 0: only insertions are left
        b -= 1
        path.append(("I", -1, b))
    path.reverse()
    return path


def _trace_rows(back, offset: int, ref: Sequence, hyp: Sequence, a: int, b: int, stop: int,
                path: list[Step]) -> tuple[int, int]:
    """Follow back pointers from cell (a, b) up to row ``stop`` (``stop >= 0``), appending the steps.

    ``back[a - offset][b]`` is the move into cell (a, b): 0 diagonal, 1 deletion (up), 2 insertion
    (left); column 0 is always a deletion. The steps come last first. Returns the cell reached,
    ``(stop, b)``.
    """
    while a > stop:
        move = back[a - offset][b] if b > 0 else 1
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
    return a, b


def _band(ref: Sequence, hyp: Sequence) -> tuple[int, int]:
    """Diagonals ``d = b - a`` that a cheapest path can visit: ``[d_lo, d_hi]``.

    A cell (a, b) costs at least ``3 |a - b|`` to reach and ``3 |(n - a) - (m - b)|`` to
    leave, so on a path of cost at most ``C`` it has ``|d| + |(m - n) - d| <= C / 3``. ``C``
    is bounded by the sclite cost of RapidFuzz's unit alignment, ``3 E + S`` (fast,
    bit-parallel). Every cell of every cheapest path, and every predecessor that ties for
    such a cell's minimum, lies inside; cells outside can only be costlier, so leaving
    them out (infinite cost) changes no pointer that the back-trace follows.
    """
    subs = other = 0
    for op in Levenshtein.editops(ref, hyp):
        if op.tag == "replace":
            subs += 1
        else:
            other += 1
    bound = 3 * (subs + other) + subs
    reach = bound // 3 + 1
    delta = len(hyp) - len(ref)
    return (delta - reach) // 2 - 1, (delta + reach + 1) // 2 + 1


#: "infinite" cost of a cell outside the band
_INF = 1 << 50


def _row_pointers(np, prev, hyp_ids, word_id: int, lo: int, hi: int, out_cur, out_back) -> None:
    """One row of the programme (reference word ``word_id``) over columns ``lo..hi``, vectorized.

    ``cur[b] = min(t[b], cur[b-1] + 3)`` with ``t = min(sub, del)`` has the closed form
    ``cur[b] = 3 b + min_{k<=b} (t[k] - 3 k)`` (a running minimum), so a row needs no Python
    loop. The pointer of each cell applies sclite's tie rule to (sub, del, ins) with
    ``ins = cur[b-1] + 3``, exactly as :func:`_align_full` does. Columns outside ``lo..hi``
    of ``prev`` hold :data:`_INF`; only ``out_cur[lo:hi+1]`` and ``out_back[lo:hi+1]`` are
    written.
    """
    ins_w, del_w, sub_w = SCLITE_WEIGHTS
    width = hi - lo + 1
    t = np.empty(width, dtype=np.int64)
    b0 = lo
    if lo == 0:
        t[0] = prev[0] + del_w
        b0 = 1
    sub = prev[b0 - 1:hi] + np.where(hyp_ids[b0 - 1:hi] == word_id, 0, sub_w)
    dele = prev[b0:hi + 1] + del_w
    np.minimum(sub, dele, out=t[b0 - lo:])
    ramp = np.arange(lo, hi + 1, dtype=np.int64) * ins_w
    t -= ramp
    np.minimum.accumulate(t, out=t)
    t += ramp
    out_cur[lo:hi + 1] = t
    # insertion candidates: the left neighbour (outside the band on the first column)
    ins = np.empty(hi - b0 + 1, dtype=np.int64)
    if len(ins):
        ins[1:] = t[b0 - lo:-1] + ins_w
        ins[0] = (t[b0 - lo - 1] if b0 > lo else _INF) + ins_w
    diag = (sub <= dele) & (sub <= ins)
    back = np.where(dele < ins, 1, 2).astype(np.uint8)
    back[diag] = 0
    if lo == 0:
        out_back[0] = 1
    out_back[b0:hi + 1] = back


def _align_checkpointed(ref: Sequence, hyp: Sequence) -> list[Step]:
    """:func:`_align_full`'s path, banded (:func:`_band`) with checkpointed rows.

    Memory O(sqrt(n) (w + m)) for a band of w columns (w <= m + 1): the band costs of every
    k-th row (k about sqrt(n), 8 bytes a cell), and one block of k rows of back pointers
    (1 byte a cell) at a time during the back-trace; twice the arithmetic of one pass over
    the band.
    """
    import math

    import numpy as np

    n, m = len(ref), len(hyp)
    ids: dict = {}
    hyp_ids = np.fromiter((ids.setdefault(w, len(ids)) for w in hyp), dtype=np.int64, count=m)
    ref_ids = [ids.get(w, -1) for w in ref]
    ins_w = SCLITE_WEIGHTS[0]
    d_lo, d_hi = _band(ref, hyp)

    def cols(a: int) -> tuple[int, int]:
        return max(0, a + d_lo), min(m, a + d_hi)

    k = max(1, math.isqrt(n))
    # band costs of rows 0, k, 2k, ... (row a = a reference words consumed): (lo, costs)
    checkpoints: dict[int, tuple[int, np.ndarray]] = {}
    prev = np.full(m + 1, _INF, dtype=np.int64)
    lo0, hi0 = cols(0)
    prev[lo0:hi0 + 1] = np.arange(lo0, hi0 + 1, dtype=np.int64) * ins_w
    checkpoints[0] = (lo0, prev[lo0:hi0 + 1].copy())
    cur = np.full(m + 1, _INF, dtype=np.int64)
    scratch = np.empty(m + 1, dtype=np.uint8)

    def step(a, prev, cur, cur_span, back_row):
        lo, hi = cols(a)
        if lo > hi:
            raise AssertionError("empty band")  # cannot happen: (n, m) is always inside
        old_lo, old_hi = cur_span
        if old_lo < lo:
            cur[old_lo:min(lo, old_hi + 1)] = _INF
        if old_hi > hi:
            cur[max(hi + 1, old_lo):old_hi + 1] = _INF
        _row_pointers(np, prev, hyp_ids, ref_ids[a - 1], lo, hi, cur, back_row)
        return lo, hi

    prev_span = (lo0, hi0)
    cur_span = (0, m)  # cur is all INF; resetting it again is harmless
    for a in range(1, n + 1):
        span = step(a, prev, cur, cur_span, scratch)
        prev, cur = cur, prev
        cur_span, prev_span = prev_span, span
        if a % k == 0:
            checkpoints[a] = (span[0], prev[span[0]:span[1] + 1].copy())
    path: list[Step] = []
    a, b = n, m
    while a > 0 or b > 0:
        if a == 0:
            b -= 1
            path.append(("I", -1, b))
            continue
        # recompute the pointers of rows start+1 .. a (the block holding row a)
        start = ((a - 1) // k) * k
        rows = a - start
        back = np.zeros((rows + 1, m + 1), dtype=np.uint8)
        lo_s, costs = checkpoints[start]
        prev = np.full(m + 1, _INF, dtype=np.int64)
        prev[lo_s:lo_s + len(costs)] = costs
        cur = np.full(m + 1, _INF, dtype=np.int64)
        prev_span, cur_span = (lo_s, lo_s + len(costs) - 1), (0, m)
        for r in range(1, rows + 1):
            span = step(start + r, prev, cur, cur_span, back[r])
            prev, cur = cur, prev
            cur_span, prev_span = prev_span, span
        a, b = _trace_rows(back, start, ref, hyp, a, b, start, path)
        del back
    path.reverse()
    return path
