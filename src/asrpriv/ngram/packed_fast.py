"""A vectorized fast path for :func:`asrpriv.ngram.packed.read_packed` (well-formed ARPA files).

:func:`read_packed_fast` reads the whole (decompressed) file at once and parses each order's
section with one ``bytes.split`` and numpy index arithmetic instead of a Python loop per
line. It accepts only what the line-by-line reader accepts *and* can be parsed the simple way;
on anything else (a malformed file, stdin, non-ASCII whitespace, NaN, ...) it returns None and
:func:`read_packed` reads the file line by line, which locates the error to its line. So the
fast path changes speed, never results or error messages.
"""

from __future__ import annotations

import re

import numpy as np

_WS = b" \t\x0b\x0c"
# str.split() whitespace that bytes.split() does not split on: the slow path would differ
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


def read_packed_fast(path: str):
    """A :class:`PackedArpa` of ``path``, or None when the file needs the line-by-line reader."""
    from asrpriv.ngram.packed import PackedArpa, PackedOrder, row_codes

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
    from asrpriv.ngram.packed import PackedOrder

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
            ids = np.fromiter(map(index.__getitem__, tok[cols].tolist()), dtype=np.int32,
                              count=len(cols)).reshape(-1, n)
        except KeyError:
            return None
    return PackedOrder(ids, logp, bow)


def _floats(tokens: list[bytes], count: int) -> np.ndarray | None:
    """``count`` numbers parsed in C (None if any does not parse: the slow path says where)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            values = np.fromstring(b" ".join(tokens), dtype=np.float64, sep=" ")
        except ValueError:
            return None
    if len(values) != count or np.isnan(values).any():
        return None
    return values


def _parse_uniform(tokens: list[bytes], n: int, k: int, count: int, words: list[str],
                   index: dict[bytes, int]):
    """A section whose lines all have ``k`` fields (n + 1: no back-off weights, n + 2: all)."""
    from asrpriv.ngram.packed import PackedOrder

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
            ids[:, j] = np.fromiter(map(index.__getitem__, tokens[1 + j::k]), dtype=np.int32, count=count)
    except KeyError:
        return None
    return PackedOrder(ids, logp, bow)
