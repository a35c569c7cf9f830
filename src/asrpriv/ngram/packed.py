"""ARPA back-off models held in numpy arrays (for models too large for :class:`ArpaModel` dicts).

:func:`read_packed` reads an ARPA file (``.gz`` too) into a :class:`PackedArpa`: the unigram
words, and per order n the n-grams as word-id rows ``int32[M, n]`` with their log10
probabilities and log10 back-off weights (``NaN`` where the file has none), in file order. The
2M-bigram first-pass ARPA takes about 60 MB this way instead of gigabytes of Python tuples.

:func:`row_codes` turns rows of word ids into int64 codes that sort like the rows
(lexicographically) and are equal exactly when the rows are, jointly for several arrays, so
that n-gram lookups are ``np.searchsorted`` calls (:func:`lookup`).

The checks are those of :func:`asrpriv.ngram.arpa.read_arpa`: header, numbers, field counts,
declared counts, duplicates (located to their line), ``\\end\\``; and every word of an n-gram
must be a unigram.

**Two paths, one result.** A well-formed file is parsed in bulk, without a Python object per
token (:mod:`asrpriv.ngram.arpa_bulk`: the byte parser); anything it declines is read line by
line (:func:`_read_lines`, through :func:`asrpriv.ngram.arpa.iter_entries`, the one line
parser, which locates an error to its line). The bulk path changes speed, never results or
error messages (``tests/test_arpa_bulk.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from asrpriv.errors import InputError


@dataclass
class PackedOrder:
    """The n-grams of one order: ``ids`` int32[M, n], ``logp`` / ``bow`` float64[M] (log10).

    ``sorted_index``, when the reader knows it (it sorts the rows to find duplicates), is
    ``stable_argsort`` of the rows' :func:`row_codes`: the rows in lexicographic order.
    """

    ids: np.ndarray
    logp: np.ndarray
    bow: np.ndarray
    sorted_index: np.ndarray | None = field(default=None, repr=False, compare=False)


@dataclass
class PackedArpa:
    """An ARPA model as arrays; ``words[i]`` is word id i (unigram file order)."""

    words: list[str]
    orders: list[PackedOrder]

    @property
    def order(self) -> int:
        return len(self.orders)

    def counts(self) -> list[int]:
        return [len(o.logp) for o in self.orders]


def row_codes(arrays: Sequence[np.ndarray], base: int) -> list[np.ndarray]:
    """int64 codes of the rows of several ``int[M_i, n]`` arrays (ids in ``[0, base)``).

    Codes of equal rows are equal, codes of different rows differ, and codes sort as the rows
    sort lexicographically. Codes are consistent across the arrays of one call only.
    """
    n = arrays[0].shape[1]
    if len(arrays) == 1 and max(base, 2) ** n <= 2 ** 62:  # one array, no re-ranking needed:
        rows = np.asarray(arrays[0]).reshape(-1, n)  # code = sum_j id_j base^(n-1-j), in place
        codes = rows[:, 0].astype(np.int64)
        for j in range(1, n):
            codes *= base
            codes += rows[:, j]
        return [codes]
    sizes = [len(a) for a in arrays]
    stacked = np.concatenate([np.asarray(a, dtype=np.int64).reshape(-1, n) for a in arrays])
    codes = stacked[:, 0].copy()
    limit = (2 ** 62) // max(base, 2)
    for j in range(1, n):
        if len(codes) and codes.max() >= limit:  # re-rank to keep the next product in int64
            codes = np.unique(codes, return_inverse=True)[1].astype(np.int64)
        codes = codes * base + stacked[:, j]
    return np.split(codes, np.cumsum(sizes)[:-1])


def stable_argsort(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(np.argsort(codes, kind="stable"), sorted codes)`` for int64 codes.

    Where a code and its index fit in 62 bits together (the row codes of n-grams usually do),
    one ``np.sort`` of ``code << b | index`` gives both: numpy's SIMD sort, 5x faster than the
    stable argsort, and the same order (equal codes stay in index order).
    """
    m = len(codes)
    bits = max(1, (m - 1).bit_length())
    if m and codes.min() >= 0 and int(codes.max()) < (1 << (62 - bits)):
        key = codes << bits
        key |= np.arange(m, dtype=np.int64)
        key.sort()
        srt = key & ((1 << bits) - 1)
        key >>= bits
        return srt, key
    srt = np.argsort(codes, kind="stable")
    return srt, codes[srt]


def lookup(sorted_codes: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Index of each of ``codes`` in ``sorted_codes`` (unique, ascending), -1 where absent."""
    if len(sorted_codes) == 0:
        return np.full(len(codes), -1, dtype=np.int64)
    pos = np.searchsorted(sorted_codes, codes)
    pos_c = np.minimum(pos, len(sorted_codes) - 1)
    return np.where(sorted_codes[pos_c] == codes, pos_c, -1)


def read_packed(path: str) -> PackedArpa:
    """Read an ARPA file into a :class:`PackedArpa`; malformed input raises InputError.

    Well-formed files take the bulk path (:func:`_read_bulk`); anything it declines is read
    line by line (:func:`_read_lines`: same result, errors located to their line).
    """
    packed = _read_bulk(path)
    if packed is not None and any(len(o.logp) and float(o.logp.max()) > 0 for o in packed.orders):
        packed = None  # a log-probability > 0: the line reader refuses it and names its line
    return packed if packed is not None else _read_lines(path)


def _read_bulk(path: str | None) -> PackedArpa | None:
    """The bulk path (:func:`asrpriv.ngram.arpa_bulk.read_bulk`): a :class:`PackedArpa`, or
    None when the file needs the line reader."""
    from asrpriv.ngram.arpa_bulk import read_bulk

    return read_bulk(path)


def _read_lines(path: str) -> PackedArpa:
    """The line-by-line reader (:func:`asrpriv.ngram.arpa.iter_entries`) into arrays."""
    from asrpriv.ngram.arpa import iter_entries

    declared: dict[int, int] = {}
    words: list[str] = []
    index: dict[str, int] = {}
    orders: list[PackedOrder] = []
    rows: list[tuple[list[int], list[float], list[float], list[int]]] = []
    nan = math.nan
    for n, lineno, prob, fields, bow in iter_entries(path, declared):
        while len(rows) < n:
            rows.append(([], [], [], []))
        ids, probs, bows, linenos = rows[n - 1]
        if n == 1:
            word = fields[0]
            if word in index:
                raise InputError(path, lineno, f"duplicate 1-gram {word!r}")
            index[word] = len(words)
            words.append(word)
            ids.append(index[word])
        else:
            try:
                ids.extend([index[w] for w in fields])
            except KeyError as err:
                raise InputError(path, lineno,
                                 f"word {err.args[0]!r} of a {n}-gram is not a 1-gram") from None
        probs.append(prob)
        bows.append(nan if bow is None else bow)
        linenos.append(lineno)
    rows += [([], [], [], []) for _ in range(len(declared) - len(rows))]
    for n, (ids, probs, bows, linenos) in enumerate(rows, 1):
        order = PackedOrder(np.asarray(ids, dtype=np.int32).reshape(-1, n),
                            np.asarray(probs, dtype=np.float64), np.asarray(bows, dtype=np.float64))
        if n > 1 and len(probs):
            order_idx, codes = stable_argsort(row_codes([order.ids], len(words))[0])
            dup = np.flatnonzero(codes[1:] == codes[:-1])
            if len(dup):
                row = int(order_idx[dup[0] + 1])
                raise InputError(path, linenos[row], f"duplicate {n}-gram "
                                 f"{' '.join(words[i] for i in order.ids[row])!r}")
            order.sorted_index = order_idx
        orders.append(order)
    return PackedArpa(words, orders)
