"""Writing a back-off model as ARPA text, fast: :func:`write_arpa_lines` (the writer of
``fma-adapt --arpa``), byte-identical to :meth:`MixedArpa.write`.

Rows are built in numpy where the format allows it (:class:`_RowWriter`, 6-8 digits after the
point), else one ``%`` formatting per chunk of rows; ``tests/test_arpa_bulk.py`` compares both
with Python's formatting on random models.
"""

from __future__ import annotations

import numpy as np

from asrpriv.ngram.mix import LOG10_ZERO, MixedArpa


def write_arpa_lines(out, model: MixedArpa, precision: int | None = 7, chunk: int = 1 << 16) -> None:
    """Write ``model`` as ARPA text, the same text as :meth:`MixedArpa.write` (probability 0 and
    ``<s>`` as -99, ``precision`` digits after the point, or ``repr`` with None), to a text or
    binary stream (a UTF-8 text stream with a ``buffer`` gets the bytes directly).

    With 6 to 8 digits (the step's default is 7) the rows are built in numpy
    (:class:`_RowWriter`), byte-identical to Python's formatting. Otherwise (``repr``, other
    precisions, huge numbers, a word with a NUL) each chunk of rows is one ``%`` formatting of
    a repeated row template over a flat tuple (``"%.7f\t%s %s\n" * rows % values``), the
    floats formatted in C as ``format(x, ".7f")`` / ``repr`` do.
    """
    import io

    from asrpriv.ngram.arpa import write_header

    sink = _byte_sink(out)
    header = io.StringIO()
    write_header(header, model.counts())
    sink(header.getvalue().encode("utf-8"))
    words = model.words
    fast = precision is not None and 6 <= precision <= 8
    vocab = _WordChunks(words) if fast else None
    if vocab is not None and vocab.chunks is None:
        vocab = None
    num = "%r" if precision is None else f"%.{int(precision)}f"
    pool = None
    if vocab is not None and sum(model.counts()) > 2 * chunk:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(2, thread_name_prefix="asrpriv-arpa")
    try:
        for n, order in enumerate(model.orders, 1):
            sink(f"\\{n}-grams:\n".encode("utf-8"))
            logp = np.maximum(np.where(np.isfinite(order.logp), order.logp, LOG10_ZERO), LOG10_ZERO)
            has_bow = not np.isnan(order.bow).all()
            bow = np.maximum(np.nan_to_num(order.bow, nan=0.0), LOG10_ZERO) if has_bow else None
            rows = None if vocab is None else _RowWriter(vocab, precision)
            template = num + "\t" + " ".join(["%s"] * n) + ("\t" + num if has_bow else "") + "\n"
            fields = 1 + n + has_bow

            def text(start: int):
                stop = min(start + chunk, len(logp))
                ids = order.ids[start:stop]
                part_bow = None if bow is None else bow[start:stop]
                got = None if rows is None else rows.format(logp[start:stop], ids, part_bow)
                if got is None:
                    flat: list = [None] * (fields * (stop - start))
                    flat[0::fields] = logp[start:stop].tolist()
                    for j in range(n):
                        flat[1 + j::fields] = map(words.__getitem__, ids[:, j].tolist())
                    if has_bow:
                        flat[n + 1::fields] = part_bow.tolist()
                    got = (template * (stop - start) % tuple(flat)).encode("utf-8")
                return got

            for got in _in_order(pool, text, range(0, len(logp), chunk)):
                sink(got)
            sink(b"\n")
        sink(b"\\end\\\n")
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _in_order(pool, fn, items, ahead: int = 6):
    """``fn(item)`` for each item, in order: by ``pool``'s threads, at most ``ahead`` at a
    time (numpy releases the GIL, so two threads format rows at once), or here without a pool."""
    if pool is None:
        yield from map(fn, items)
        return
    jobs = []
    for item in items:
        jobs.append(pool.submit(fn, item))
        if len(jobs) > ahead:
            yield jobs.pop(0).result()
    for job in jobs:
        yield job.result()


def _byte_sink(out):
    """A function writing bytes to ``out``: a binary stream, or a text stream (UTF-8 ones with a
    ``buffer`` get the bytes directly, after a flush; others the decoded text)."""
    import codecs
    import io

    if not isinstance(out, io.TextIOBase):
        return out.write
    buffer = getattr(out, "buffer", None)
    encoding = getattr(out, "encoding", None)
    if buffer is not None and encoding and codecs.lookup(encoding).name == "utf-8":
        out.flush()
        return buffer.write
    return lambda data: out.write(bytes(data).decode("utf-8"))


class _WordChunks:
    """The UTF-8 bytes of the words, 8 at a time: ``chunks[w, k]`` holds bytes ``[8k, 8k + 8)``
    of word w (zero-padded), ``size[w]`` its length; ``chunks`` is None if a word is empty."""

    def __init__(self, words: list[str]) -> None:
        self.chunks = None
        text = np.frombuffer("\n".join(words).encode("utf-8") + b"\n", dtype=np.uint8)
        end = np.flatnonzero(text == 10)
        if len(words) == 0 or len(end) != len(words):  # a word with a newline: the % path
            return
        self.size = np.diff(end, prepend=-1) - 1
        if self.size.min() == 0 or (text == 0).any():
            return
        k = -(-int(self.size.max()) // 8)
        padded = np.zeros((len(words), 8 * k + 1), dtype=np.uint8)  # + the newline
        row = np.repeat(np.arange(len(words)), self.size + 1)
        padded[row, np.arange(len(text)) - (end - self.size)[row]] = text
        padded[np.arange(len(words)), self.size] = 0  # the newlines
        self.chunks = np.ascontiguousarray(padded[:, :8 * k]).view("<u8")  # [V, k]


class _RowWriter:
    """The ARPA rows of one order as bytes, built in numpy, for 6 to 8 decimals.

    The rows' offsets in the output come from their lengths; each word is stored there 8 bytes
    at a time (unaligned uint64 stores), spilling up to 7 bytes past its end, so the words go
    first, left to right (a spill lands on what is written after: the next word, or the numbers
    and separators, and a row's last word on the next row's number, at least 8 bytes long with
    6 decimals or more); then the numbers and separators, exactly.

    Numbers: ``%.{p}f`` of x is the decimal of k = round(|x| 10^p) (the exact binary value,
    halves to even), with a minus sign when x is negative (``-0.0000000`` too). k is ``rint`` of
    the float product ``|x| 10^p`` unless that product lies within two ulps of a half, where it
    could round the other way: those few numbers are formatted by Python and k read back from
    the text (:func:`_fixed`). The p decimals are one SWAR store of 8 digits ending at the
    number's end (its leading digits land on the point and the integer part, written after),
    the integer part digit by digit.
    """

    def __init__(self, vocab: _WordChunks, precision: int) -> None:
        assert 6 <= precision <= 8
        self.vocab = vocab
        self.p = precision

    def format(self, logp: np.ndarray, ids: np.ndarray, bow: np.ndarray | None):
        """The rows as a uint8 array, or None for the ``%`` path (a number out of range)."""
        numbers = [_fixed(logp, self.p)]
        if bow is not None:
            numbers.append(_fixed(bow, self.p))
        if any(part is None for part in numbers):
            return None
        n = ids.shape[1]
        size = [self.vocab.size[ids[:, j]] for j in range(n)]
        width = [self._width(*part) for part in numbers]
        length = width[0] + sum(size) + n + 1  # number, tab, words and spaces, newline
        if bow is not None:
            length += 1 + width[1]
        end = np.cumsum(length)
        start = end - length
        out = np.empty(int(end[-1]) + 16, dtype=np.uint8)
        store = np.ndarray((len(out) - 7,), dtype="<u8", buffer=out, strides=(1,))
        at = start + width[0] + 1
        spaces = []
        for j in range(n):  # the words, left to right
            chunks = self.vocab.chunks
            w = ids[:, j]
            store[at] = chunks[w, 0]
            for k in range(1, chunks.shape[1]):
                more = np.flatnonzero(size[j] > 8 * k)
                if len(more) == 0:
                    break
                store[at[more] + 8 * k] = chunks[w[more], k]
            at = at + size[j]
            spaces.append(at)
            at = at + 1
        self._number(out, store, start, width[0], *numbers[0])
        out[start + width[0]] = 9  # tab
        for sep in spaces[:-1]:
            out[sep] = 32
        if bow is not None:
            out[spaces[-1]] = 9
            self._number(out, store, spaces[-1] + 1, width[1], *numbers[1])
        out[end - 1] = 10
        return out[:int(end[-1])]

    def _width(self, neg: np.ndarray, whole: np.ndarray, frac: np.ndarray) -> np.ndarray:
        """Characters of each number: sign, integer digits, point, decimals."""
        digits = np.ones(len(whole), dtype=np.int64)
        scale = 10
        top = int(whole.max(initial=0))
        while scale <= top:
            digits += whole >= scale
            scale *= 10
        return neg + digits + 1 + self.p

    def _number(self, out, store, start, width, neg, whole, frac) -> None:
        """Write numbers ``width`` characters long from ``start``."""
        end = start + width
        store[end - 8] = _ascii8(frac.astype(np.uint64))  # the decimals end the number
        out[end - self.p - 1] = 46  # the point
        units = end - self.p - 2
        out[units] = whole % 10 + 48
        scale, j = 10, 1
        top = int(whole.max(initial=0))
        while scale <= top:
            more = np.flatnonzero(whole >= scale)
            out[units[more] - j] = (whole[more] // scale) % 10 + 48
            scale, j = scale * 10, j + 1
        minus = np.flatnonzero(neg)
        out[start[minus]] = 45


def _fixed(x: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(negative, integer part, decimals)`` of ``"%.{p}f" % v`` for each v of ``x``, exactly
    (see :class:`_RowWriter`); None when a value is too large (or not finite) for that."""
    scale = 10.0 ** p
    a = np.abs(x)
    if not (a < 2.0 ** 52 / scale).all():
        return None
    y = a * scale
    k = np.rint(y)
    near = np.abs(y - np.floor(y) - 0.5) <= 2 * np.spacing(y)
    k = k.astype(np.int64)
    neg = np.signbit(x)
    for i in np.flatnonzero(near).tolist():
        text = "%.*f" % (p, x[i])
        k[i] = int(text.lstrip("-").replace(".", ""))
        neg[i] = text.startswith("-")
    whole = k // 10 ** p
    return neg, whole, k - whole * 10 ** p


def _ascii8(v: np.ndarray) -> np.ndarray:
    """The 8 decimal digits (zero-padded) of each ``v`` < 10^8 as ASCII bytes in a uint64, the
    first digit in the lowest byte (SWAR: halves, pairs, digits)."""
    u = np.uint64
    hi = v // u(10000)
    x = hi | ((v - hi * u(10000)) << u(32))  # two 4-digit lanes, the high half first
    q = ((x * u(5243)) >> u(19)) & u(0x0000007F0000007F)  # lane // 100
    x = q | ((x - q * u(100)) << u(16))  # four 2-digit lanes
    q = ((x * u(103)) >> u(10)) & u(0x000F000F000F000F)  # lane // 10
    x = q | ((x - q * u(10)) << u(8))  # eight digits
    return x + u(0x3030303030303030)
