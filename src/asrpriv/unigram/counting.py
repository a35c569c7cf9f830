"""Kernel-weighted unigram pseudo-counts with enforced contribution bounds.

Paper 000, Section 2.2: each hypothesis s of an N-best list adds ``K(s) * c_s(w)`` to the count
of word w, with the Gaussian rank kernel of Eq. (3), ``K(s) = exp(-(rank(s)-1)^2 / (2 sigma^2))``;
the personal distribution q_i (Eq. 4) is the counts over their total c_i (Eq. 5).

Contribution bounding (for differential privacy): each unit's (utterance's or client's) whole
contribution vector is scaled down to L1 norm ``max_l1`` if larger, then floored onto a grid of
step ``grid`` so that sums are exact and the L1 bound holds exactly in the discrete domain that
the noise of :mod:`asrpriv.privacy.laplace` lives in.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Iterable, Iterator

#: default grid step for bounded counts: 2^-10 (exact in binary floating point and in decimal)
DEFAULT_GRID = 2.0 ** -10


def rank_kernel(rank: int, sigma: float) -> float:
    """Gaussian rank kernel, paper 000 Eq. (3); rank 1 = best gets weight 1.

    Computed as ``exp(-x*x/2)`` with ``x = (rank-1)/sigma``, so that a tiny sigma or a large
    rank underflows to weight 0 instead of dividing by zero or overflowing.
    """
    x = (rank - 1) / sigma
    return math.exp(-0.5 * x * x)


def nbest_contribution(hyps: Iterable[tuple[int, list[str]]], sigma: float,
                       top: int | None = None) -> dict[str, float]:
    """One utterance's pseudo-counts: sum over its hypotheses of ``K(s) * c_s(w)``.

    Args:
        hyps: ``(rank, words)`` of each hypothesis, best first.
        sigma: kernel bandwidth (> 0).
        top: use only the first ``top`` hypotheses (in rank order).
    """
    counts: dict[str, float] = {}
    for i, (rank, words) in enumerate(hyps):
        if top is not None and i >= top:
            break
        weight = rank_kernel(rank, sigma)
        if weight == 0.0:
            continue
        for word in words:
            counts[word] = counts.get(word, 0.0) + weight
    return counts


def bound_contribution(counts: dict[str, float], max_l1: float, grid: float) -> tuple[dict[str, float], bool]:
    """Scale a contribution to L1 norm <= max_l1, then floor it onto the grid.

    Returns:
        The bounded vector (zero entries dropped) and whether it was scaled down.
    """
    total = sum(counts.values())
    scale = 1.0
    clipped = total > max_l1
    if clipped:
        scale = max_l1 / total
    bounded: dict[str, float] = {}
    for word, value in counts.items():
        steps = math.floor(value * scale / grid)
        if steps > 0:
            bounded[word] = steps * grid
    # flooring can only lower the norm, but guard against rounding in value * scale
    while sum(bounded.values()) > max_l1 + 1e-12:
        word = max(bounded, key=bounded.__getitem__)
        bounded[word] -= grid
        if bounded[word] <= 0:
            del bounded[word]
    return bounded, clipped


class CountAccumulator:
    """Sums unit contributions, enforcing the bound on each unit when one is set.

    Args:
        max_l1: the per-unit L1 bound, or None for no bound.
        grid: grid step for bounded counts.
    """

    def __init__(self, max_l1: float | None = None, grid: float = DEFAULT_GRID) -> None:
        self.max_l1 = max_l1
        self.grid = grid
        self.counts: dict[str, float] = {}
        self.units = 0
        self.clipped_units = 0

    def add_unit(self, contribution: dict[str, float]) -> None:
        if self.max_l1 is not None:
            contribution, clipped = bound_contribution(contribution, self.max_l1, self.grid)
            self.clipped_units += clipped
        counts = self.counts
        for word, value in contribution.items():
            counts[word] = counts.get(word, 0.0) + value
        self.units += 1


def count_text_fast(blocks: Iterator[tuple[int, str]]) -> tuple[Counter, int]:
    """Unweighted word counts of plain text and its number of non-blank lines.

    One C-level ``split`` and ``Counter`` update per block of lines, no per-line Python work.
    """
    total: Counter = Counter()
    lines = 0
    for _, block in blocks:
        words = block.split()
        total.update(words)
        if words:
            lines += sum(1 for line in block.splitlines() if line.strip()) if len(block) < 4096 \
                else block.count("\n") - block.count("\n\n") + (not block.endswith("\n"))
    return total, lines
