"""The speaker-identification rank test of paper 004 §4.5.

For each class c (speaker) with at least two items: pick two of its items x_i, x_j once; then
``repeats`` times (004: 50) draw ``distractors`` items (004: 49) of other classes at random
(without replacement), sort the distractors and x_j by Euclidean distance from x_i, and note the
rank of x_j (1 = nearest; ties count half). The class's score is its mean rank; the test's result
is the mean over classes (004 Table 4.12).

If nothing leaks, x_j's rank is uniform on 1..distractors+1: mean (distractors + 2) / 2 (25.5 for
49 distractors). Perfectly separated classes give 1.0.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RankResult:
    mean_rank: float
    chance_rank: float
    classes: int
    distractors: int
    repeats: int
    per_class: dict

    def as_dict(self) -> dict:
        return {"mean_rank": self.mean_rank, "chance_rank": self.chance_rank,
                "classes": self.classes, "distractors": self.distractors,
                "repeats": self.repeats, "per_class": self.per_class}


def rank_test(distances, labels: list[str], rng, distractors: int = 49,
              repeats: int = 50) -> RankResult:
    """Run the rank test on an (n, n) distance matrix; ``rng`` is a ``random.Random``."""
    import numpy as np

    by_class: dict[str, list[int]] = {}
    for index, label in enumerate(labels):
        by_class.setdefault(label, []).append(index)
    eligible = [c for c in sorted(by_class) if len(by_class[c]) >= 2]
    if not eligible:
        raise ValueError("the rank test needs a class with at least two items")
    n = len(labels)
    per_class: dict[str, float] = {}
    used = distractors
    for cls in eligible:
        i, j = rng.sample(by_class[cls], 2)
        others = [k for k in range(n) if labels[k] != cls]
        take = min(distractors, len(others))
        used = min(used, take)
        ranks = []
        for _ in range(repeats):
            chosen = rng.sample(others, take)
            target = distances[i, j]
            pool = distances[i, chosen]
            closer = int(np.sum(pool < target))
            ties = int(np.sum(pool == target))
            ranks.append(1 + closer + 0.5 * ties)
        per_class[cls] = float(np.mean(ranks))
    mean_rank = float(np.mean(list(per_class.values())))
    return RankResult(mean_rank=mean_rank, chance_rank=(used + 2) / 2, classes=len(eligible),
                      distractors=used, repeats=repeats, per_class=per_class)
