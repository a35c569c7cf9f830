"""Fast unweighted word counts of a large plain-text file, on all cores.

The file is cut into byte ranges at line boundaries; each worker process counts its range with
one C-level ``split``/``Counter`` update per block, and the parent sums the (vocabulary-sized)
counters. Any decoding problem makes the parent re-read sequentially, which reports the exact
``FILE:LINE`` of the first bad line.
"""

from __future__ import annotations

import os
from collections import Counter

from asrpriv.io.lines import BLOCK_SIZE, BOM, iter_blocks, max_line_bytes

#: files smaller than this are counted in-process (start-up of workers costs ~0.1 s)
PARALLEL_MIN_BYTES = 32 << 20


class _BadBlock(Exception):
    pass


def _count_range(path: str, start: int, end: int, limit: int) -> tuple[Counter, int]:
    counts: Counter = Counter()
    lines = 0
    with open(path, "rb") as stream:
        if start == 0 and stream.read(len(BOM)) != BOM:
            stream.seek(0)
        if start > 0:
            stream.seek(start - 1)
            if stream.read(1) != b"\n":
                skipped = stream.readline(limit + 1)  # the line straddling `start` is the previous range's
                if len(skipped) > limit and not skipped.endswith(b"\n"):
                    raise _BadBlock()
        position = stream.tell()
        while position < end:
            block = stream.read(min(BLOCK_SIZE, end - position))
            if not block:
                break
            position += len(block)
            if not block.endswith(b"\n"):
                rest = stream.readline(limit + 1)  # finish the last line, even past `end`
                if len(rest) > limit and not rest.endswith(b"\n"):
                    raise _BadBlock()  # a too long line: the sequential re-read locates it
                position += len(rest)
                block += rest
            if b"\x00" in block:
                raise _BadBlock()
            try:
                words = block.decode("utf-8").split()
            except UnicodeDecodeError:
                raise _BadBlock() from None
            counts.update(words)
            lines += block.count(b"\n") - block.count(b"\n\n")
    return counts, lines


def count_words(path: str | None, workers: int | None = None) -> tuple[Counter, int]:
    """Word counts and (approximate: blank lines excluded) number of lines of a text file."""
    from asrpriv.unigram.counting import count_text_fast

    size = _regular_file_size(path)
    workers = workers or min(os.cpu_count() or 1, 8)
    if size is None or size < PARALLEL_MIN_BYTES or workers < 2 or str(path).endswith(".gz"):
        return count_text_fast(iter_blocks(path))
    from concurrent.futures import ProcessPoolExecutor

    bounds = [size * i // workers for i in range(workers + 1)]
    total: Counter = Counter()
    lines = 0
    try:
        with ProcessPoolExecutor(workers) as pool:
            for counts, n in pool.map(_count_range, [path] * workers, bounds[:-1], bounds[1:],
                                      [max_line_bytes()] * workers):
                total.update(counts)
                lines += n
    except _BadBlock:
        return count_text_fast(iter_blocks(path))  # raises the located InputError
    return total, lines


def _regular_file_size(path: str | None) -> int | None:
    if path is None or path == "-":
        return None
    try:
        info = os.stat(path)
    except OSError:
        return None
    import stat

    return info.st_size if stat.S_ISREG(info.st_mode) else None
