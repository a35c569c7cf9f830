"""Cluster quality against a labelling: purity and entropy (paper 004, Eq. 4.3-4.5), log base 2.

- Entropy of cluster i (Eq. 4.3): H(i) = - sum_j P(i_j) log2 P(i_j), P(i_j) the share of cluster i's
  items with class j.
- Total entropy (Eq. 4.4): H = sum_i (N_i / N) H(i). The thesis prints a leading minus sign
  (``H = - sum_i H(i) N_i / N``), which with its own non-negative H(i) would make every total
  negative; its tables report positive totals (e.g. 1.99 for random clusters of 4), so the sign is a
  typo and is dropped here.
- Purity (Eq. 4.5): (1/N) sum_i max_j |c_i ∩ t_j|.
- A cluster is pure when all of its items have one class.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class ClusterScores:
    purity: float
    entropy: float
    pure_clusters: int
    clusters: int
    items: int

    def as_dict(self) -> dict:
        return {"purity": self.purity, "entropy": self.entropy,
                "pure_clusters": self.pure_clusters, "clusters": self.clusters, "items": self.items}


def cluster_entropy(labels: list[str]) -> float:
    """H(i) of one cluster (Eq. 4.3), bits."""
    counts = Counter(labels)
    total = len(labels)
    return -sum((c / total) * math.log2(c / total) for c in counts.values() if c)


def score_clusters(assignment: list[int], labels: list[str]) -> ClusterScores:
    """Purity, entropy (Eq. 4.3-4.5) and pure-cluster count of ``assignment`` against ``labels``."""
    if len(assignment) != len(labels):
        raise ValueError("assignment and labels differ in length")
    members: dict[int, list[str]] = {}
    for cluster, label in zip(assignment, labels):
        members.setdefault(cluster, []).append(label)
    n = len(labels)
    purity = sum(max(Counter(m).values()) for m in members.values()) / n
    entropy = sum(len(m) / n * cluster_entropy(m) for m in members.values())
    pure = sum(1 for m in members.values() if len(set(m)) == 1)
    return ClusterScores(purity=purity, entropy=entropy, pure_clusters=pure,
                         clusters=len(members), items=n)


def size_histogram(assignment: list[int]) -> dict[int, int]:
    """cluster size -> number of clusters of that size (the bar charts of 004 Fig. 4.9-4.11)."""
    sizes = Counter(Counter(assignment).values())
    return dict(sorted(sizes.items()))


def confusion(assignment: list[int], labels: list[str]) -> dict[int, dict[str, int]]:
    """cluster -> {class: count} (004 Table 4.13)."""
    table: dict[int, dict[str, int]] = {}
    classes = sorted(set(labels))
    for cluster in sorted(set(assignment)):
        table[cluster] = {c: 0 for c in classes}
    for cluster, label in zip(assignment, labels):
        table[cluster][label] += 1
    return table
