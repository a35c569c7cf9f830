"""Family-wise error control over several tests reported together.

Holm (1979), "A simple sequentially rejective multiple test procedure", Scand. J. Statist. 6:65-70:
sort the m p-values ascending, p_(1) <= ... <= p_(m); the adjusted value of p_(i) is
max_{j <= i} min(1, (m - j + 1) p_(j)). Rejecting where the adjusted value is <= alpha controls the
family-wise error rate at alpha under any dependence between the tests.
"""

from __future__ import annotations

import math
from typing import Sequence


def holm_adjust(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values, in the input's order.

    ``None`` (a test that was not made) stays ``None`` and does not count in the family size m.
    Raises ValueError on a p-value outside [0, 1] or not a number.
    """
    present = [(i, p) for i, p in enumerate(pvalues) if p is not None]
    for i, p in present:
        if not isinstance(p, (int, float)) or math.isnan(p) or not 0.0 <= p <= 1.0:
            raise ValueError(f"p-value {i + 1}: expected a number in [0, 1], got {p!r}")
    m = len(present)
    adjusted: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (i, p) in enumerate(sorted(present, key=lambda item: item[1])):
        running = max(running, min(1.0, (m - rank) * float(p)))
        adjusted[i] = running
    return adjusted
