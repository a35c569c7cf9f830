"""The Matched-Pair Sentence-Segment Word Error test (MAPSSWE), as NIST sc_stats does it.

Gillick & Cox (1989), "Some statistical issues in the comparison of speech recognition
algorithms"; the significance test of paper 003. Implementation follows SCTK's
``mtchprs.c`` (``test_comp_sents``, ``count_seg``, ``seg_count``) and ``statdist.c``
(``calc_mean_var_std_dev_Zstat``) so that the numbers equal ``sc_stats -t mapsswe``:

* each utterance's two alignments (sclite paths, see :func:`asrpriv.wer.alignment.sclite_align`)
  are walked together over the reference words; a segment ends where ``min_good`` (2)
  consecutive reference words are correct in both systems, the good words bounding it on
  either side being part of it; insertions put the walk into the error state;
* a segment's errors are the path steps in it that are not correct (S, D, I) for each system;
  its reference words are ``(ref1 + ref2) // 2`` (non-insertion steps); segments without an
  error in either system are dropped;
* with ``d_k = err_A(k) - err_B(k)`` over the n segments: mean ``mu = sum d / n``, sample
  variance ``s^2 = sum (d - mu)^2 / (n - 1)``, ``Z = mu / (s / sqrt(n))`` (0 when s = 0);
  the two-sided p-value is ``2 (1 - Phi(|Z|))`` (normal approximation, as sc_stats).

Quirks kept for agreement: the walk stops when the first system's path ends, so insertions
at the very end of the second system's path after the last reference word are only counted
when the segment is still open (as in sc_stats).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from asrpriv.wer.alignment import Step

#: sc_stats' default minimum number of correct boundary words (DEFAULT_MIN_NUM_GOOD)
MIN_GOOD = 2


@dataclass
class Segments:
    """Per-segment counts: reference words and errors of system A and B."""

    ref: list[int] = field(default_factory=list)
    err_a: list[int] = field(default_factory=list)
    err_b: list[int] = field(default_factory=list)


def _seg_count(path: Sequence[Step], start: int, end: int) -> tuple[int, int]:
    err = ref = 0
    for i in range(start, end + 1):
        ev = path[i][0]
        if ev != "C":
            err += 1
        if ev != "I":
            ref += 1
    return err, ref


def _count_seg(p1, p2, beg1, beg2, end1, end2, segs: Segments) -> None:
    beg1 = max(beg1, 0)
    beg2 = max(beg2, 0)
    err1, ref1 = _seg_count(p1, beg1, end1)
    err2, ref2 = _seg_count(p2, beg2, end2)
    if err1 == 0 and err2 == 0:
        return
    segs.ref.append((ref1 + ref2) // 2)
    segs.err_a.append(err1)
    segs.err_b.append(err2)


def split_segments(p1: Sequence[Step], p2: Sequence[Step], segs: Segments,
                   min_good: int = MIN_GOOD) -> None:
    """Add the segments of one utterance (two paths against the same reference) to ``segs``.

    A direct transcription of sc_stats' ``test_comp_sents`` state machine (states b: no
    error yet, e: in an error region, g: counting good words after errors).
    """
    n1, n2 = len(p1), len(p2)
    i1 = i2 = 0
    eog1 = eog2 = 0
    state = "b"
    num_good = 0
    while i1 < n1 or i2 < n2:
        while i1 < n1 and p1[i1][0] == "I":
            i1 += 1
            state = "e"
        while i2 < n2 and p2[i2][0] == "I":
            i2 += 1
            state = "e"
        if i1 < n1 and i2 < n2 and p1[i1][1] != p2[i2][1]:
            raise ValueError("MAPSSWE: the two alignments are not against the same reference")
        both = i1 < n1 and p1[i1][0] == "C" and i2 < n2 and p2[i2][0] == "C"
        if state == "b":
            if both:
                eog1, eog2 = i1, i2
            else:
                state = "e"
        elif state == "e":
            if both:
                num_good = 1
                if num_good == min_good:
                    _count_seg(p1, p2, eog1 - (min_good - 1), eog2 - (min_good - 1), i1, i2, segs)
                    eog1, eog2, state = i1, i2, "b"
                else:
                    state = "g"
        else:  # "g"
            if both:
                num_good += 1
                if num_good == min_good:
                    _count_seg(p1, p2, eog1 - (min_good - 1), eog2 - (min_good - 1), i1, i2, segs)
                    eog1, eog2, state = i1, i2, "b"
            else:
                state = "e"
        if i1 < n1:
            i1 += 1
        if i2 < n2:
            i2 += 1
    if state != "b":
        _count_seg(p1, p2, eog1 - (min_good - 1), eog2 - (min_good - 1), i1 - 1, i2 - 1, segs)


@dataclass
class MapssweResult:
    """The test's outcome; ``mean``/``sd`` are errors per segment (A minus B)."""

    segments: int
    mean: float
    sd: float
    z: float
    p_value: float
    significant: bool
    alpha: float
    seg_ref_words: int
    seg_errors_a: int
    seg_errors_b: int

    @property
    def seg_pct_a(self) -> float:
        """Percent errors of system A within the segments (sc_stats' ``% Error``)."""
        return 100.0 * self.seg_errors_a / self.seg_ref_words if self.seg_ref_words else 0.0

    @property
    def seg_pct_b(self) -> float:
        return 100.0 * self.seg_errors_b / self.seg_ref_words if self.seg_ref_words else 0.0


def statistic(diffs: Sequence[int]) -> tuple[float, float, float]:
    """``(mean, sd, Z)`` of per-segment error differences (sc_stats' n-1 variance)."""
    n = len(diffs)
    if n == 0:
        return 0.0, 0.0, 0.0
    mean = sum(diffs) / n
    ss = sum((d - mean) * (d - mean) for d in diffs)
    if ss == 0.0:
        return mean, 0.0, 0.0
    variance = ss / (n - 1)
    sd = math.sqrt(variance)
    return mean, sd, mean / (sd / math.sqrt(n))


def two_sided_p(z: float) -> float:
    """``2 (1 - Phi(|z|))`` for a standard normal Phi."""
    return math.erfc(abs(z) / math.sqrt(2.0))


def mapsswe(pairs: Iterable[tuple[Sequence[Step], Sequence[Step]]], alpha: float = 0.05,
            min_good: int = MIN_GOOD) -> MapssweResult:
    """Run the test over ``(path_A, path_B)`` pairs, one per utterance."""
    segs = Segments()
    for p1, p2 in pairs:
        split_segments(p1, p2, segs, min_good)
    diffs = [a - b for a, b in zip(segs.err_a, segs.err_b)]
    mean, sd, z = statistic(diffs)
    p = two_sided_p(z) if diffs and sd > 0 else 1.0
    return MapssweResult(segments=len(diffs), mean=mean, sd=sd, z=z, p_value=p,
                         significant=p < alpha, alpha=alpha, seg_ref_words=sum(segs.ref),
                         seg_errors_a=sum(segs.err_a), seg_errors_b=sum(segs.err_b))
