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

**Two paths, one result.** A well-formed file (the common case) is parsed in bulk
(:func:`_read_bulk`): the whole decompressed file at once, each order's section with one
``bytes.split`` and numpy index arithmetic instead of a Python loop per line (numbers through
numpy's C conversion, which rounds as ``float()`` does). It accepts only what the line reader
accepts *and* can be parsed the simple way; on anything else (a malformed file, stdin,
non-ASCII whitespace, NaN, ...) it declines, and the file is read line by line through
:func:`asrpriv.ngram.arpa.iter_entries`, the one line parser, which locates the error to its
line. So the bulk path changes speed, never results or error messages. (A bulk path without
Python objects per token -- 8-byte-word hashing of the words, numbers from a masked copy of the
text -- was measured at the same CPU time, 3.45 s under load, with 10% less peak memory, and
was not kept: more code for no speed.)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from asrpriv.errors import InputError


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

    Well-formed files take the bulk path (:func:`_read_bulk`); anything it declines is read
    line by line (:func:`_read_lines`: same result, errors located to their line).
    """
    packed = _read_bulk(path)
    return packed if packed is not None else _read_lines(path)


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
            codes = row_codes([order.ids], len(words))[0]
            order_idx = np.argsort(codes, kind="stable")
            dup = np.flatnonzero(codes[order_idx][1:] == codes[order_idx][:-1])
            if len(dup):
                row = int(order_idx[dup[0] + 1])
                raise InputError(path, linenos[row], f"duplicate {n}-gram "
                                 f"{' '.join(words[i] for i in order.ids[row])!r}")
        orders.append(order)
    return PackedArpa(words, orders)


# ---- the bulk path ------------------------------------------------------------------------

# str.split() whitespace that bytes.split() does not split on: the line reader would differ
_WS = b" \t\x0b\x0c"
_ODD_WS = re.compile(r"[\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_SPACE = np.zeros(256, dtype=bool)
_SPACE[list(_WS + b"\n")] = True
_COUNT = re.compile(rb"^ngram\s+(\d+)\s*=\s*(\d+)\s*$")


def _load(path: str) -> bytes | None:
    from asrpriv.io.lines import BOM, max_line_bytes, open_binary

    if path is None or str(path) == "-":
        return None
    try:
        with open_binary(path) as stream:
            data = stream.read()
    except (OSError, EOFError):
        return None
    if data.startswith(BOM):
        data = data[len(BOM):]
    if b"\x00" in data or b"\r" in data:
        return None
    if not data.isascii():
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if _ODD_WS.search(text):
            return None
    arr = np.frombuffer(data, dtype=np.uint8)
    nl = np.flatnonzero(arr == 10)
    if len(nl) and (np.diff(nl, prepend=-1).max() - 1 > max_line_bytes()
                    or len(arr) - nl[-1] - 1 > max_line_bytes()):
        return None
    return data


def _read_bulk(path: str) -> PackedArpa | None:
    """A :class:`PackedArpa` of ``path``, or None when the file needs the line-by-line reader."""
    data = _load(path)
    if data is None:
        return None
    # --- header: blank / '#' lines, \data\, 'ngram N=COUNT' lines, \1-grams:
    pos = 0
    declared: list[int] = []
    state = "start"
    while True:
        end = data.find(b"\n", pos)
        if end < 0:
            return None
        line = data[pos:end].strip()
        pos = end + 1
        if state == "start":
            if not line or line.startswith(b"#"):
                continue
            if line != b"\\data\\":
                return None
            state = "header"
            continue
        if not line:
            continue
        match = _COUNT.match(line)
        if match:
            if int(match.group(1)) != len(declared) + 1:
                return None
            declared.append(int(match.group(2)))
            continue
        if line != b"\\1-grams:" or not declared:
            return None
        break
    # --- sections: split the body at lines whose first token starts with a backslash
    body = data[pos:]
    barr = np.frombuffer(body, dtype=np.uint8)
    at = np.flatnonzero(barr == 92)  # a backslash opening a line (indented ones: fallback, see below)
    marks = at[(at == 0) | (barr[np.maximum(at - 1, 0)] == 10)].tolist()
    if len(marks) != len(declared):  # \2-grams: ... \N-grams:, \end\
        return None
    bounds = [0] + marks
    words: list[str] = []
    orders = []
    index: dict[bytes, int] = {}
    for n in range(1, len(declared) + 1):
        block = body[bounds[n - 1]:bounds[n]]
        if n > 1:  # drop its own section line
            head_end = block.find(b"\n")
            if block[:head_end].strip() != f"\\{n}-grams:".encode():
                return None
            block = block[head_end + 1:]
        order = _parse_block(block, n, declared[n - 1], words, index)
        if order is None:
            return None
        if n > 1:
            codes = np.sort(row_codes([order.ids], len(words))[0])
            if (codes[1:] == codes[:-1]).any():
                return None
        orders.append(order)
    tail = body[bounds[-1]:].split(b"\n", 1)
    if tail[0].strip() != b"\\end\\" or (len(tail) > 1 and tail[1].strip()):
        return None
    if not words:
        return None
    return PackedArpa(words, orders)


def _parse_block(block: bytes, n: int, count: int, words: list[str], index: dict[bytes, int]):
    """One section's entries as a PackedOrder (unigrams also fill ``words``/``index``), or None."""
    arr = np.frombuffer(block, dtype=np.uint8)
    space = _SPACE[arr]
    starts = np.flatnonzero(~space & np.concatenate([[True], space[:-1]]))  # first byte of each token
    # tokens per line (an indented section line lands here as a 1-token line: declined)
    per_line = np.bincount(np.searchsorted(np.flatnonzero(arr == 10), starts))
    per_line = per_line[per_line > 0]
    if len(per_line) != count or not np.isin(per_line, (n + 1, n + 2)).all():
        return None
    tokens = block.split()
    if (per_line == per_line[0]).all() if count else False:  # one shape for the whole section
        return _parse_uniform(tokens, n, int(per_line[0]), count, words, index)
    first = np.concatenate([[0], np.cumsum(per_line)[:-1]])
    with_bow = per_line == n + 2
    try:
        tok = np.array(tokens, dtype=object)
        logp = tok[first].astype(np.bytes_).astype(np.float64)
        bow = np.full(count, np.nan)
        if with_bow.any():
            bow[with_bow] = tok[first[with_bow] + n + 1].astype(np.bytes_).astype(np.float64)
    except ValueError:
        return None
    if np.isnan(logp).any() or np.isnan(bow[with_bow]).any():
        return None
    if n == 1:
        for i, raw in enumerate(tok[first + 1].tolist()):
            if raw in index:
                return None
            index[raw] = i
            words.append(raw.decode("utf-8"))
        ids = np.arange(count, dtype=np.int32).reshape(-1, 1)
    else:
        cols = (first[:, None] + 1 + np.arange(n)[None, :]).ravel()
        try:
            ids = _ids(index, tok[cols].tolist()).reshape(-1, n)
        except KeyError:
            return None
    return PackedOrder(ids, logp, bow)


def _ids(index: dict[bytes, int], tokens: list[bytes]) -> np.ndarray:
    """Word ids of ``tokens`` (KeyError for a word that is not a unigram). One
    ``operator.itemgetter`` call looks them all up in C: 2.2x faster than ``map(index.__getitem__)``."""
    from operator import itemgetter

    if len(tokens) < 2:
        return np.array([index[t] for t in tokens], dtype=np.int32)
    return np.fromiter(itemgetter(*tokens)(index), dtype=np.int32, count=len(tokens))


def _floats(tokens: list[bytes], count: int) -> np.ndarray | None:
    """``count`` numbers, each read by ``float()`` as the line reader reads it (None if any
    does not parse or is NaN: the line reader says where). ``map(float, ...)`` into
    ``np.fromiter`` is 2.5x faster than joining the tokens for ``np.fromstring``."""
    if len(tokens) != count:
        return None
    try:
        values = np.fromiter(map(float, tokens), dtype=np.float64, count=count)
    except ValueError:
        return None
    if np.isnan(values).any():
        return None
    return values


def _parse_uniform(tokens: list[bytes], n: int, k: int, count: int, words: list[str],
                   index: dict[bytes, int]):
    """A section whose lines all have ``k`` fields (n + 1: no back-off weights, n + 2: all)."""
    logp = _floats(tokens[0::k], count)
    if logp is None:
        return None
    bow = np.full(count, np.nan)
    if k == n + 2:
        bow = _floats(tokens[k - 1::k], count)
        if bow is None:
            return None
    if n == 1:
        for i, raw in enumerate(tokens[1::k]):
            if raw in index:
                return None
            index[raw] = i
            words.append(raw.decode("utf-8"))
        return PackedOrder(np.arange(count, dtype=np.int32).reshape(-1, 1), logp, bow)
    ids = np.empty((count, n), dtype=np.int32)
    try:
        for j in range(n):
            ids[:, j] = _ids(index, tokens[1 + j::k])
    except KeyError:
        return None
    return PackedOrder(ids, logp, bow)
