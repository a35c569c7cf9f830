"""Batch planning for padded LM batches (no torch import: cheap to import anywhere).

(The output layer's products were once padded to row lengths of a multiple of 8 floats: MKL ran
``W [1024, 256] @ B [256, N]`` ~1.7x slower for odd row lengths of ``B`` on an AMD EPYC. The
rescorer now multiplies ``states[block] @ W[rows]^T``, whose row lengths are the model width and
the tile's vocabulary rows, so nothing needs padding.)
"""

from __future__ import annotations

from typing import Sequence


def plan_batches(lengths: Sequence[int], batch_tokens: int) -> list[list[int]]:
    """Cut indices into batches, longest first, of at most ``batch_tokens`` padded positions.

    ``lengths`` are the padded-row lengths (words + 1). A row longer than the budget gets a
    batch of its own. Sorting by length keeps padding small; ties keep input order.
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    width = 0
    for i in order:
        n = lengths[i]
        new_width = max(width, n)
        if current and new_width * (len(current) + 1) > batch_tokens:
            batches.append(current)
            current, width = [], 0
            new_width = n
        current.append(i)
        width = new_width
    if current:
        batches.append(current)
    return batches
