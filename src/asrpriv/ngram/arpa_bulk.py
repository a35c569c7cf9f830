"""The byte parser of ARPA files: the bulk path of :func:`asrpriv.ngram.packed.read_packed`.

**Two paths, one result.** A well-formed file (the common case) is parsed in bulk
(:func:`read_bulk`), without a Python object per token: the file is read in blocks of about
1 MB of whole lines (gzip inflated by a second thread meanwhile), each block tokenized with
numpy from the positions of its white space, numbers read exactly from the bytes (8 digits per
SWAR step, m / 10**f: the correctly rounded value, which is what ``float()`` gives), words
mapped to ids through a numpy hash table checked against each word's bytes; the blocks of the
higher orders are parsed by two threads. It accepts only what the line reader accepts *and*
can be parsed the simple way; on anything else (a malformed file, stdin, non-ASCII white
space, NaN, a damaged gzip, ...) it declines, and the file is read line by line through
:func:`asrpriv.ngram.arpa.iter_entries`, the one line parser, which locates the error to its
line. So the bulk path changes speed, never results or error messages
(``tests/test_arpa_bulk.py`` checks both on random files). On the 2M-bigram first-pass ARPA
it takes 0.7-0.8 s of CPU, gzip and threads included, against 2.1-2.3 s for the ``bytes.split``
bulk path it replaced (same run, loaded machine).
"""

from __future__ import annotations

import math
import re

import numpy as np

from asrpriv.ngram.packed import PackedArpa, PackedOrder, row_codes, stable_argsort


# ---- the bulk path ------------------------------------------------------------------------
#
# The file is read in blocks of whole lines (gzip inflated by a second thread while this one
# parses). Each block is tokenized with numpy: the separators are the bytes <= 32 (a control
# byte other than \t \n \v \f declines: str.split would cut at \x1c-\x1f and bytes.split would
# not), tokens lie between them, a newline among the separators after a token ends its line.
# Numbers and words are then read straight from the bytes, 8 at a time, through an unaligned
# uint64 view (``_Block.words``): no Python object per token.


class _Decline(Exception):
    """The bulk path does not read this file; the line reader will (and say why if it is bad)."""


#: bytes per read of a plain file (blocks of ~1 MB keep the per-block arrays in cache and their
#: memory reused: 4 MB blocks made 8x the page faults)
_BLOCK = 1 << 20
#: compressed bytes per read of the inflating thread
_GZ_READ = 1 << 18
#: non-ASCII whitespace (str.split cuts there, bytes.split does not): the bulk path declines
_ODD_WS = re.compile(r"[\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_COUNT = re.compile(rb"^ngram\s+(\d+)\s*=\s*(\d+)\s*$")
_PAD = bytes(24)  # after each block, so that 8-byte loads past a token stay inside the buffer
_HASHED = 16  # words up to 16 bytes are looked up by hash in numpy, longer ones in a dict

_U64 = np.uint64
_LOW = np.array([(1 << (8 * i)) - 1 for i in range(9)], dtype=_U64)  # the low i bytes set
_ZEROS = _U64(0x3030303030303030)  # "00000000"
_ZFILL = np.array([0x3030303030303030 & ((1 << (8 * (8 - i))) - 1) for i in range(9)],
                  dtype=_U64)  # "0" in the low 8 - i bytes
_NIBBLE_HI = _U64(0xF0F0F0F0F0F0F0F0)
_SIXES = _U64(0x0606060606060606)
_ONES = _U64(0x0101010101010101)
_EIGHTIES = _U64(0x8080808080808080)
_DOTS = _U64(0x2E2E2E2E2E2E2E2E)
_POW10F = 10.0 ** np.arange(16)
_HASH_MUL = _U64(0x9E3779B97F4A7C15)
_HASH_STEP = _U64(0xC2B2AE3D27D4EB4F)
_HASH_SIZE = _U64(0x165667B19E3779F9)


def read_bulk(path: str | None) -> PackedArpa | None:
    """A :class:`PackedArpa` of ``path``, or None when the file needs the line-by-line reader."""
    import os
    import stat

    if path is None or str(path) == "-":
        return None
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None  # a pipe is read once, by the line reader
    except OSError:
        return None  # the line reader reports it
    try:
        return _BulkReader(str(path)).read()
    except _Decline:
        return None


def _file_blocks(path: str):
    """The (decompressed) bytes of ``path`` in pieces; raises _Decline where it cannot read."""
    try:
        stream = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError:
        raise _Decline from None
    with stream:
        if not path.endswith(".gz"):
            while True:
                try:
                    piece = stream.read(_BLOCK)
                except OSError:
                    raise _Decline from None
                if not piece:
                    return
                yield piece
        else:
            yield from _gunzip(stream)


def _gunzip(stream):
    """Inflate a gzip stream (members one after another) in a second thread, piece by piece.

    zlib (or ISA-L's ``isal_zlib`` where installed: 0.05 s of CPU instead of 0.17 s for the
    45 MB of the 2M-bigram ARPA) releases the GIL while it inflates, so the parsing of one
    piece overlaps the inflating of the next. Anything but clean gzip members (a truncated or damaged stream, trailing
    bytes) declines: the line reader reads it through :mod:`gzip` and reports it.
    """
    import queue
    import threading

    try:  # ISA-L's inflate (pip install isal, in the ngram extra): the same bytes, 3.5x faster
        from isal import isal_zlib as zlib
    except ImportError:
        import zlib

    pieces: queue.Queue = queue.Queue(maxsize=8)
    stop = threading.Event()

    def put(item) -> None:
        while not stop.is_set():
            try:
                pieces.put(item, timeout=0.05)
                return
            except queue.Full:
                continue

    def inflate() -> None:
        try:
            unzip, fed, members = zlib.decompressobj(wbits=31), False, 0
            while not stop.is_set():
                raw = stream.read(_GZ_READ)
                if not raw:
                    break
                while raw:
                    fed = True
                    out = unzip.decompress(raw)
                    if out:
                        put(out)
                    if unzip.eof:
                        raw, members = unzip.unused_data, members + 1
                        unzip, fed = zlib.decompressobj(wbits=31), False
                    else:
                        raw = b""
            put(None if members and not fed else _Decline())
        except Exception:  # noqa: BLE001 - any failure: the line reader reads it again
            put(_Decline())

    worker = threading.Thread(target=inflate, name="asrpriv-gunzip", daemon=True)
    worker.start()
    try:
        while True:
            item = pieces.get()
            if item is None:
                return
            if isinstance(item, _Decline):
                raise item
            yield item
    finally:
        stop.set()
        worker.join()


class _BulkReader:
    """The bulk path: header and section lines in Python (this thread), entries with numpy.

    The entries of the unigram section are parsed here (they make the vocabulary); those of
    the higher orders, block by block, by two worker threads (numpy releases the GIL), their
    results kept in file order.
    """

    #: blocks parsed at once by the workers (their bytes wait in memory)
    AHEAD = 8

    def __init__(self, path: str) -> None:
        from asrpriv.io.lines import max_line_bytes

        self.path = path
        self.limit = max_line_bytes()
        self.state = "start"  # start -> header -> body -> end, as the line reader
        self.declared: list[int] = []
        self.n = self.seen = 0
        self.parts: list[list] = []  # per order: (ids, logp, bow) or the future of one
        self.words: list[str] = []
        self.word_text: list[bytes] = []  # the unigram words, each followed by a newline
        self.vocab: _Vocab | None = None
        self.pool = None
        self.pending: list = []

    def read(self) -> PackedArpa:
        from asrpriv.io.lines import BOM

        try:
            carry, first = b"", True
            for piece in _file_blocks(self.path):
                if first:
                    first = False
                    if piece.startswith(BOM):
                        piece = piece[len(BOM):]
                if b"\r" in piece or b"\x00" in piece:
                    raise _Decline
                data = carry + piece if carry else piece
                cut = data.rfind(b"\n") + 1
                if len(data) - cut > self.limit:
                    raise _Decline
                if cut:
                    self._block(data if cut == len(data) else data[:cut])
                carry = data[cut:]
            if carry:
                self._block(carry + b"\n")
            if self.state != "end" or not self.words:
                raise _Decline
            return PackedArpa(self.words, [self._order(n) for n in range(1, len(self.declared) + 1)])
        finally:
            if self.pool is not None:
                self.pool.shutdown(wait=True, cancel_futures=True)

    def _order(self, n: int) -> PackedOrder:
        parts = [p.result() if hasattr(p, "result") else p for p in self.parts[n - 1]]
        if sum(len(p[1]) for p in parts) != self.declared[n - 1]:
            raise _Decline
        if parts:
            ids = np.concatenate([p[0] for p in parts])
            logp = np.concatenate([p[1] for p in parts])
            bow = np.concatenate([p[2] for p in parts])
        else:
            ids, logp, bow = np.zeros((0, n), np.int32), np.zeros(0), np.zeros(0)
        order = PackedOrder(ids, logp, bow)
        if n > 1 and len(logp):
            order.sorted_index, codes = stable_argsort(row_codes([ids], len(self.words))[0])
            if (codes[1:] == codes[:-1]).any():
                raise _Decline  # a duplicate: the line reader says where
        return order

    # -- one block of whole lines
    def _block(self, block: bytes) -> None:
        pos, size = 0, len(block)
        while pos < size:
            if self.state == "body":
                if block[pos] == 92:  # a backslash opens the line: \N-grams: or \end\
                    end = block.index(b"\n", pos)
                    self._section(block[pos:end].strip())
                    pos = end + 1
                    continue
                stop = _next_backslash_line(block, pos)
                self._entries(block if pos == 0 and stop == size else block[pos:stop])
                pos = stop
            elif self.state == "end":
                if block[pos:].strip():
                    raise _Decline
                return
            else:
                end = block.index(b"\n", pos)
                if end - pos > self.limit:
                    raise _Decline
                self._header(block[pos:end].strip())
                pos = end + 1

    def _header(self, line: bytes) -> None:
        if self.state == "start":
            if not line or line.startswith(b"#"):  # comments before \data\, as kenlm/SRILM
                try:
                    line.decode("utf-8")  # the line reader decodes them
                except UnicodeDecodeError:
                    raise _Decline from None
                return
            if line != b"\\data\\":
                raise _Decline
            self.state = "header"
            return
        if not line:
            return
        match = _COUNT.match(line)
        if match:
            if int(match.group(1)) != len(self.declared) + 1:
                raise _Decline
            self.declared.append(int(match.group(2)))
            return
        if line != b"\\1-grams:" or not self.declared:
            raise _Decline
        self.state, self.n, self.seen = "body", 1, 0
        self.parts = [[] for _ in self.declared]

    def _section(self, line: bytes) -> None:
        if self.n == 1:  # (the counts of the other orders are checked at the end)
            if self.seen != self.declared[0]:
                raise _Decline
            text = b"".join(self.word_text)
            self.vocab = _Vocab(text, self.seen)
            self.words = text.decode("utf-8").split("\n")[:-1]
            if len(self.declared) > 1:
                from concurrent.futures import ThreadPoolExecutor

                self.pool = ThreadPoolExecutor(2, thread_name_prefix="asrpriv-arpa")
        if line == b"\\end\\":
            if self.n != len(self.declared):
                raise _Decline
            self.state = "end"
            return
        if line != b"\\%d-grams:" % (self.n + 1):
            raise _Decline
        self.n += 1

    def _entries(self, data: bytes) -> None:
        """The entries of order ``self.n`` on the lines ``data``."""
        if self.n == 1:
            ids, logp, bow, text = _parse_entries(data, 1, None, self.limit)
            self.word_text.append(text)
            ids = np.arange(self.seen, self.seen + len(logp), dtype=np.int32).reshape(-1, 1)
            self.parts[0].append((ids, logp, bow))
            self.seen += len(logp)
            return
        job = self.pool.submit(_parse_entries, data, self.n, self.vocab, self.limit)
        self.parts[self.n - 1].append(job)
        self.pending.append(job)
        if len(self.pending) > self.AHEAD:  # wait for the oldest (it raises a _Decline)
            self.pending.pop(0).result()


def _next_backslash_line(block: bytes, pos: int) -> int:
    """Offset of the first line after ``pos`` (a line start) that opens with a backslash, or
    the end of the block. Backslashes are rare in n-gram lines: one ``find`` each."""
    while True:
        at = block.find(b"\\", pos + 1)
        if at < 0:
            return len(block)
        if block[at - 1] == 10:
            return at
        pos = at


def _parse_entries(data: bytes, n: int, vocab: _Vocab | None, limit: int):
    """``(ids, logp, bow, words)`` of the entries of order ``n`` on the lines ``data`` (for
    unigrams ids is None and words their bytes, each followed by a newline); raises _Decline."""
    if not data.isascii():
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise _Decline from None
        if _ODD_WS.search(text):
            raise _Decline
    blk = _Block(data)
    if len(blk.newlines) and np.diff(blk.newlines, prepend=-1).max() - 1 > limit:
        raise _Decline
    starts, ends, last = blk.tokens(0, len(data))
    if len(starts) == 0:
        empty = np.zeros(0)
        return np.zeros((0, n), dtype=np.int32), empty, empty, b""
    line_end = np.flatnonzero(last)
    fields = np.diff(line_end, prepend=-1)
    count = len(fields)
    k = int(fields[0])
    if (fields == k).all() and k in (n + 1, n + 2):  # one shape for the whole piece
        def col(j):
            return slice(j, None, k)
        has_bow = None if k == n + 2 else np.zeros(0, dtype=np.int64)
    else:
        if not np.isin(fields, (n + 1, n + 2)).all():
            raise _Decline
        head = line_end - fields + 1

        def col(j):
            return head + j
        has_bow = np.flatnonzero(fields == n + 2)
    logp = blk.numbers(starts[col(0)], ends[col(0)])
    if has_bow is None:  # every line has a back-off weight
        bow = blk.numbers(starts[col(n + 1)], ends[col(n + 1)])
    else:
        bow = np.full(count, np.nan)
        if len(has_bow):
            at = head[has_bow] + n + 1
            bow[has_bow] = blk.numbers(starts[at], ends[at])
    if n == 1:
        return None, logp, bow, blk.lines(starts[col(1)], ends[col(1)])
    ids = np.empty((count, n), dtype=np.int32)
    for j in range(n):
        cols = col(1 + j)
        ids[:, j] = vocab.ids(blk, np.ascontiguousarray(starts[cols]), np.ascontiguousarray(ends[cols]))
    return ids, logp, bow, None


class _Block:
    """One block of whole lines as numpy views: bytes, 8-byte windows, separators."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        buf = data + _PAD
        self.bytes = np.frombuffer(buf, dtype=np.uint8)
        # words[i]: the 8 bytes from offset i, little-endian (byte i lowest), unaligned
        self.words = np.ndarray((len(buf) - 7,), dtype="<u8", buffer=buf, strides=(1,))
        self.seps = np.flatnonzero(self.bytes[:len(data)] <= 32)
        kind = self.bytes[self.seps]
        if ((kind < 9) | ((kind > 12) & (kind != 32))).any():
            raise _Decline  # a control byte (\x1c-\x1f: str.split and bytes.split differ)
        self.nl = kind == 10
        self.newlines = self.seps[self.nl]

    def lines(self, s: np.ndarray, e: np.ndarray) -> bytes:
        """The tokens ``[s, e)``, each followed by a newline, as one bytes object."""
        size = e - s + 1  # with the separator after the token, made a newline
        end = np.cumsum(size)
        out = self.bytes[np.repeat(s - (end - size), size) + np.arange(int(end[-1]) if len(end) else 0)]
        out[end - 1] = 10
        return out.tobytes()

    def tokens(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Start and end offsets of the tokens of the lines ``[lo, hi)``, and whether each is the
        last of its line (``hi - 1`` is a newline)."""
        a, b = np.searchsorted(self.seps, [lo, hi])
        seps = self.seps[a:b]
        bounds = np.empty(len(seps) + 1, dtype=np.int64)
        bounds[0] = lo - 1
        bounds[1:] = seps
        gap = np.diff(bounds)
        nl = self.nl[a:b]
        if gap.min() > 1:  # one separator after each token (the common case)
            return bounds[:-1] + 1, seps, nl
        tok = np.flatnonzero(gap > 1)
        if len(tok) == 0:
            return tok, tok, tok.astype(bool)
        seen = np.cumsum(nl)  # newlines among seps[:i + 1]
        after = np.append(tok[1:] - 1, len(seps) - 1)  # the last separator after each token
        before = np.where(tok > 0, seen[np.maximum(tok - 1, 0)], 0)
        return bounds[tok] + 1, seps[tok], seen[after] > before

    def numbers(self, s: np.ndarray, e: np.ndarray) -> np.ndarray:
        """The numbers of the tokens ``[s, e)``, each exactly as ``float()`` reads it.

        A token of at most 8 bytes ``[sign] digits [. digits]`` is read in numpy: its digits
        as an integer m (one 8-digit SWAR step) and m / 10**f, f the digits after the point;
        m and 10**f are exact doubles, so the quotient is the correctly rounded value of the
        decimal, which is what ``float()`` gives. The tokens that share the layout of a first
        one (``-d.dddd``: a section usually has one or two) are read with scalar shifts and
        masks, the others token by token in numpy; longer or other tokens (exponents,
        ``inf``) go through ``float()`` itself. NaN, or a token ``float()`` rejects, declines.
        """
        values = np.empty(len(s))
        todo = np.arange(len(s))
        for _ in range(4):  # the commonest layouts, with scalar shifts and masks
            if len(todo) == 0:
                return values
            first = int(todo[0])
            layout = _layout(self.data[s[first]:e[first]])
            if layout is None:
                break
            got, ok = self._numbers_like(s[todo], e[todo], *layout)
            values[todo[ok]] = got[ok]
            todo = todo[~ok]
        if len(todo):
            got, ok = self._numbers_any(s[todo], e[todo])
            values[todo] = got
            for i in todo[~ok].tolist():
                token = self.data[s[i]:e[i]].decode("utf-8")
                try:
                    values[i] = float(token)
                except ValueError:
                    raise _Decline from None
                if not math.isfinite(values[i]) or "_" in token:
                    raise _Decline  # the line reader says which line and why
        return values

    def _numbers_like(self, s, e, size: int, sign: int, point: int, dot: bool):
        """Numbers of tokens laid out as a ``size``-byte ``[sign] digits [. digits]`` with the
        point (if ``dot``) after ``point`` digits, and which tokens are."""
        x = self.words[s] & _LOW[size]
        signed = 1 if sign else 0
        mask = (0xFF if sign else 0) | ((0xFF << (8 * (signed + point))) if dot else 0)
        want = sign | ((0x2E << (8 * (signed + point))) if dot else 0)
        ok = (e - s) == size
        if mask:
            ok &= (x & _U64(mask)) == _U64(want)
        if signed:
            x >>= _U64(8)
        if dot:
            keep = _U64((1 << (8 * point)) - 1)
            x = (x & keep) | ((x >> _U64(8)) & ~keep)
        digits = size - signed - dot
        y = (x << _U64((8 - digits) * 8)) | _ZFILL[digits] if digits < 8 else x
        ok &= ((y & _NIBBLE_HI) == _ZEROS) & (((y + _SIXES) & _NIBBLE_HI) == _ZEROS)
        values = _swar8(y - _ZEROS).astype(np.float64)
        if digits > point:
            values /= _POW10F[digits - point]
        if sign == 0x2D:
            np.negative(values, out=values)
        return values, ok

    def _numbers_any(self, s, e):
        """Numbers of tokens of any layout of at most 8 bytes, and which tokens are such."""
        size = e - s
        short = size <= 8
        x = self.words[s] & _LOW[np.minimum(size, 8)]
        head = x & _U64(0xFF)
        neg = head == 0x2D
        signed = neg | (head == 0x2B)
        x >>= signed.astype(_U64) << _U64(3)
        length = size - signed
        # the point: the lowest byte of x equal to "." (bytes past the token are 0)
        t = x ^ _DOTS
        z = (t - _ONES) & ~t & _EIGHTIES
        has_dot = z != 0
        point = np.frexp((z & (~z + _U64(1))).astype(np.float64))[1]  # 2**(8p + 7) -> 8p + 8
        point = np.where(has_dot, (point >> 3) - 1, length)
        keep = _LOW[np.clip(point, 0, 8)]
        x = (x & keep) | ((x >> _U64(8)) & ~keep)  # the digits without the point
        digits = np.clip(length - has_dot, 0, 8)
        y = (x << (((8 - digits) % 8) * 8).astype(_U64)) | _ZFILL[digits]
        ok = ((y & _NIBBLE_HI) == _ZEROS) & (((y + _SIXES) & _NIBBLE_HI) == _ZEROS)
        ok &= short & (length - has_dot >= 1)
        values = _swar8(y - _ZEROS).astype(np.float64) / _POW10F[np.clip(digits - point, 0, 8)]
        np.negative(values, out=values, where=neg)
        return values, ok


def _layout(token: bytes) -> tuple[int, int, int, bool] | None:
    """``(size, sign byte or 0, digits before the point, has a point)`` of a token that is a
    plain decimal of at most 8 bytes, else None."""
    if not 1 <= len(token) <= 8:
        return None
    sign = token[0] if token[:1] in (b"-", b"+") else 0
    body = token[1:] if sign else token
    point = body.find(b".")
    dot = point >= 0
    digits = body.replace(b".", b"", 1) if dot else body
    if not digits or not digits.isdigit():
        return None
    return len(token), sign, point if dot else len(body), dot


def _swar8(y: np.ndarray) -> np.ndarray:
    """The value of 8 decimal digits, one per byte (0..9), the first in the lowest byte."""
    y = (y * _U64(10) + (y >> _U64(8))) & _U64(0x00FF00FF00FF00FF)
    y = (y * _U64(100) + (y >> _U64(16))) & _U64(0x0000FFFF0000FFFF)
    return (y * _U64(10000) + (y >> _U64(32))) & _U64(0xFFFFFFFF)


def _word_keys(words: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(first 8 bytes, last 8 bytes, size, hash)`` of tokens of at most 16 bytes: the first
    ``min(size, 8)`` bytes (zero above), the last 8 when the size is over 8 (else 0). Together
    with the size they are the token (its bytes ``[0, 8)`` and ``[size - 8, size)`` cover it)."""
    size = e - s
    first = words[s] & _LOW[np.minimum(size, 8)]
    last = np.where(size > 8, words[e - 8], _U64(0))
    h = (first * _HASH_MUL) ^ (last * _HASH_STEP) ^ (size.astype(_U64) * _HASH_SIZE)
    return first, last, size, h


class _Vocab:
    """Word ids of tokens: the unigram words of up to 16 bytes in an open-addressing hash table
    of ids (numpy, linear probing), each hit checked against the word's first and last 8 bytes
    and size; longer words in a dict of bytes."""

    def __init__(self, text: bytes, v: int) -> None:
        """The ``v`` words of ``text``, each followed by a newline."""
        self.index = dict(zip(text.split(b"\n"), range(v)))
        if len(self.index) != v:
            raise _Decline  # a duplicate unigram: the line reader says where
        text += _PAD
        buf = np.frombuffer(text, dtype=np.uint8)
        ends = np.flatnonzero(buf == 10)[:v]
        starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)
        words = np.ndarray((len(text) - 7,), dtype="<u8", buffer=text, strides=(1,))
        first, last, size, hashes = _word_keys(words, starts, ends)
        short = np.flatnonzero(size <= _HASHED)
        # by word id, and one more entry (id v) that no token matches: the empty slot
        self.first = np.append(first, _U64(0))
        self.last = np.append(last, _U64(0))
        self.size = np.append(np.where(size <= _HASHED, size, -1), -1)
        bits = max(10, (len(short) * 4).bit_length())
        self.shift = _U64(64 - bits)
        # linear probing, inserting in the order of the home slots: the word that comes i-th
        # lands on max(its home, the slot after the previous one), a running maximum
        home = (hashes[short] >> self.shift).astype(np.int64)
        order = np.argsort(home, kind="stable")
        rank = np.arange(len(short))
        slot = np.maximum.accumulate(home[order] - rank) + rank if len(short) else rank
        self.table = np.full(max((1 << bits), int(slot.max(initial=0)) + 1), v, dtype=np.int32)
        self.table[slot] = short[order]
        self.probes = int((slot - home[order]).max(initial=0)) + 1

    def ids(self, blk: _Block, s: np.ndarray, e: np.ndarray) -> np.ndarray:
        """Word id of each token ``[s, e)`` of a block; a token that is not a unigram declines."""
        first, last, size, h = _word_keys(blk.words, s, e)
        slot = (h >> self.shift).astype(np.int64)
        ids = self.table[slot]
        miss = np.flatnonzero((self.first[ids] != first) | (self.last[ids] != last)
                              | (self.size[ids] != size))
        for probe in range(1, self.probes):  # linear probing, for the few that need it
            if len(miss) == 0:
                break
            at = np.minimum(slot[miss] + probe, len(self.table) - 1)
            got = ids[miss] = self.table[at]
            miss = miss[(self.first[got] != first[miss]) | (self.last[got] != last[miss])
                        | (self.size[got] != size[miss])]
        if len(miss):  # words over 16 bytes (never in the table), or not a unigram: declines
            try:
                ids[miss] = [self.index[blk.data[a:b]] if b - a > _HASHED else None
                             for a, b in zip(s[miss].tolist(), e[miss].tolist())]
            except (KeyError, TypeError):
                raise _Decline from None
        return ids
