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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from asrpriv.errors import InputError
from asrpriv.ngram.arpa import _COUNT_LINE, _SECTION


@dataclass
class PackedOrder:
    """The n-grams of one order: ``ids`` int32[M, n], ``logp`` / ``bow`` float64[M] (log10)."""

    ids: np.ndarray
    logp: np.ndarray
    bow: np.ndarray


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
    sizes = [len(a) for a in arrays]
    n = arrays[0].shape[1]
    stacked = np.concatenate([np.asarray(a, dtype=np.int64).reshape(-1, n) for a in arrays])
    codes = stacked[:, 0].copy()
    limit = (2 ** 62) // max(base, 2)
    for j in range(1, n):
        if len(codes) and codes.max() >= limit:  # re-rank to keep the next product in int64
            codes = np.unique(codes, return_inverse=True)[1].astype(np.int64)
        codes = codes * base + stacked[:, j]
    return np.split(codes, np.cumsum(sizes)[:-1])


def lookup(sorted_codes: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Index of each of ``codes`` in ``sorted_codes`` (unique, ascending), -1 where absent."""
    if len(sorted_codes) == 0:
        return np.full(len(codes), -1, dtype=np.int64)
    pos = np.searchsorted(sorted_codes, codes)
    pos_c = np.minimum(pos, len(sorted_codes) - 1)
    return np.where(sorted_codes[pos_c] == codes, pos_c, -1)


def read_packed(path: str) -> PackedArpa:
    """Read an ARPA file into a :class:`PackedArpa`; malformed input raises InputError.

    Well-formed files take the vectorized path (:mod:`asrpriv.ngram.packed_fast`); anything it
    declines is read line by line here (same result, errors located to their line).
    """
    from asrpriv.io.lines import iter_lines
    from asrpriv.ngram.packed_fast import read_packed_fast

    fast = read_packed_fast(path)
    if fast is not None:
        return fast

    declared: dict[int, int] = {}
    words: list[str] = []
    index: dict[str, int] = {}
    orders: list[PackedOrder] = []
    state = "start"
    n = 0
    ids: list[int] = []
    probs: list[float] = []
    bows: list[float] = []
    linenos: list[int] = []
    last_line = 0
    nan = math.nan

    def close(lineno: int) -> None:
        if len(probs) != declared.get(n, -1):
            raise InputError(path, lineno, f"header declares {declared.get(n)} {n}-grams, "
                                           f"the section lists {len(probs)}")
        order = PackedOrder(np.asarray(ids, dtype=np.int32).reshape(-1, n),
                            np.asarray(probs, dtype=np.float64), np.asarray(bows, dtype=np.float64))
        if np.isnan(order.logp).any():
            raise InputError(path, linenos[int(np.flatnonzero(np.isnan(order.logp))[0])],
                             "NaN in an ARPA file")
        if n > 1:
            codes = row_codes([order.ids], len(words))[0]
            order_idx = np.argsort(codes, kind="stable")
            dup = np.flatnonzero(codes[order_idx][1:] == codes[order_idx][:-1])
            if len(dup):
                row = int(order_idx[dup[0] + 1])
                raise InputError(path, linenos[row], f"duplicate {n}-gram "
                                 f"{' '.join(words[i] for i in order.ids[row])!r}")
        orders.append(order)

    for lineno, line in iter_lines(path):
        last_line = lineno
        if state == "body":
            fields = line.split()
            if not fields:
                continue
            if fields[0][0] == "\\":
                text = line.strip()
                close(lineno)
                ids, probs, bows, linenos = [], [], [], []
                if text == "\\end\\":
                    state = "end"
                    continue
                match = _SECTION.match(text)
                if not match or int(match.group(1)) != n + 1:
                    raise InputError(path, lineno,
                                     f"expected \\{n + 1}-grams: or \\end\\, got {text[:40]!r}")
                n += 1
                continue
            if len(fields) == n + 1:
                bows.append(nan)
            elif len(fields) == n + 2:
                try:
                    bows.append(float(fields[-1]))
                except ValueError:
                    raise InputError(path, lineno, f"expected a number, got {fields[-1][:40]!r}") from None
            else:
                raise InputError(path, lineno, f"expected a {n}-gram entry (log10 prob, {n} words, "
                                               f"optional back-off), got {len(fields)} fields")
            try:
                probs.append(float(fields[0]))
            except ValueError:
                raise InputError(path, lineno, f"expected a number, got {fields[0][:40]!r}") from None
            linenos.append(lineno)
            if n == 1:
                word = fields[1]
                if word in index:
                    raise InputError(path, lineno, f"duplicate 1-gram {word!r}")
                index[word] = len(words)
                words.append(word)
                ids.append(index[word])
            else:
                try:
                    ids.extend([index[w] for w in fields[1:n + 1]])
                except KeyError as err:
                    raise InputError(path, lineno,
                                     f"word {err.args[0]!r} of a {n}-gram is not a 1-gram") from None
        elif state == "start":
            text = line.strip()
            if not text or text.startswith("#"):  # blank or comment lines before \data\
                continue
            if text != "\\data\\":
                raise InputError(path, lineno, "not an ARPA file: expected \\data\\")
            state = "header"
        elif state == "header":
            text = line.strip()
            if not text:
                continue
            match = _COUNT_LINE.match(text)
            if match:
                order = int(match.group(1))
                if order != len(declared) + 1:
                    raise InputError(path, lineno, f"expected 'ngram {len(declared) + 1}=COUNT', got {text!r}")
                declared[order] = int(match.group(2))
                continue
            match = _SECTION.match(text)
            if not match or int(match.group(1)) != 1 or not declared:
                raise InputError(path, lineno, f"expected 'ngram N=COUNT' or \\1-grams:, got {text[:40]!r}")
            state, n = "body", 1
        elif line.strip():
            raise InputError(path, lineno, "text after \\end\\")
    if state == "start":
        raise InputError(path, None, "empty input: expected an ARPA language model")
    if state != "end":
        raise InputError(path, last_line, "unexpected end of file: missing \\end\\")
    if len(orders) != len(declared):
        raise InputError(path, last_line, f"header declares {len(declared)} orders, file has {len(orders)}")
    if not words:
        raise InputError(path, None, "no unigrams")
    return PackedArpa(words, orders)
