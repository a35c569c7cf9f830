"""Shape rules for fast CPU matrix products, and batch planning (no torch import: cheap to import
anywhere).

MKL (as shipped with torch 2.13) multiplies ``W @ B`` about 1.7x slower when the row length of
``B`` or of the result is not a multiple of 4-8 floats: on the 2-core AMD EPYC (AVX2) we
measure on, ``W [1024, 256] @ B [256, 512]`` runs at ~97 GFLOP/s when B is a column block of a
[256, 28903] matrix and at ~172 GFLOP/s when that matrix is [256, 28904]; an output-layer block
``[7444, 256] @ [256, N]`` runs at ~100 GFLOP/s for N = 570 and ~170 for N = 576. The products
whose row lengths are counts of tokens or nodes (the output layer, transposed) are therefore
padded with zero columns to a multiple of :data:`COLUMN_MULTIPLE`.
"""

from __future__ import annotations

from typing import Sequence

#: row lengths (in floats) of the transposed output-layer blocks are padded to a multiple of this
COLUMN_MULTIPLE = 8


def padded_columns(n: int) -> int:
    """``n`` rounded up to a multiple of :data:`COLUMN_MULTIPLE`."""
    return n + (-n % COLUMN_MULTIPLE)


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
