"""Kaldi table specifiers: ``ark:``, ``ark,t:``, ``scp:``, pipes and stdin, text and binary.

Kaldi's tools name a table by an *rspecifier* (src/util/kaldi-table.h, kaldi-asr/kaldi at
f4007661, 2025-07-22): ``ark[,opts]:RX`` reads an archive (``key value`` after ``key
value``), ``scp[,opts]:RX`` a script file of ``key RX`` lines each naming one object (``RX``
may end in ``:OFFSET``, the byte where the object starts in an archive, as ``ark,scp:`` writes
it). ``RX`` is a file, ``-`` (standard input) or a command ending in ``|`` (its standard
output; a command that fails is an error). The options ``t`` (text), ``b``, ``s``, ``cs``,
``o``, ``p`` are accepted; the text/binary form of each entry is read from the entry itself,
as Kaldi does (a binary value starts with ``\\0B``), so ``ark:`` and ``ark,t:`` read the same.

Specifiers are parsed and opened (files, stdin, pipes) and binary integer vectors decoded by
``kaldiio`` (the maintained reader of Kaldi archives in Python, used by ESPnet; pure Python on
numpy, no Kaldi build). Which *holder* an entry is (Kaldi writes no type tag for scalars and
token vectors) is given by the caller, as a Kaldi tool knows it from its own code:

* ``tokens``: ``TokenVectorHolder`` (``text``, ``compute-wer``'s ``ark:ref.txt``): ``key w1
  w2 ...`` per line; Kaldi writes it as text even into a binary archive;
* ``int32s``: ``BasicVectorHolder<int32>`` (word ids: ``nbest-to-linear``'s and
  ``lattice-best-path``'s words archives): text ``key 1 2 3`` (a ``[ 1 2 3 ]`` as kaldiio's
  text writer puts it is read too), binary ``\\0B \\4 n (\\4 int32)*n``;
* ``float``: ``BasicHolder<BaseFloat>`` (costs: ``nbest-to-linear``'s LM and acoustic cost
  archives): text ``key 1.5``, binary ``\\0B \\4 float32`` (or ``\\8 float64``).

Text entries are decoded as strict UTF-8 and located by line (``FILE:LINE``); binary ones by
key. Memory: one entry at a time.
"""

from __future__ import annotations

import io
import re
import struct
import subprocess
from dataclasses import dataclass
from typing import BinaryIO, Iterator

from asrpriv.errors import AsrprivError, InputError

#: ``ark:``/``scp:`` with options, as Kaldi's ClassifyRspecifier accepts them
_SPEC = re.compile(r"^(?P<opts>[a-z]+(?:,[a-z]+)*):(?P<rx>.*)$", re.S)
_OPTIONS = {"ark", "scp", "t", "b", "s", "cs", "o", "p", "ns", "nt", "no", "np", "f", "nf"}
KINDS = ("tokens", "int32s", "float", "int32s_or_tokens")


def is_specifier(path: str | None) -> bool:
    """True when ``path`` is a Kaldi rspecifier/wspecifier (``ark...:`` or ``scp...:``)."""
    if not path:
        return False
    m = _SPEC.match(path)
    if not m:
        return False
    opts = m.group("opts").split(",")
    return ("ark" in opts or "scp" in opts) and all(o in _OPTIONS for o in opts)


def reads_stdin(path: str | None) -> bool:
    """True when an input ``path`` reads standard input: ``-`` or a specifier on ``-``."""
    if path == "-":
        return True
    return is_specifier(path) and parse(path).rx == "-"


@dataclass(frozen=True)
class Specifier:
    """A parsed specifier: ``kind`` ``ark`` or ``scp``, the stream ``rx``, the options."""

    kind: str
    rx: str
    options: frozenset
    text: str


def parse(spec: str) -> Specifier:
    """Parse an rspecifier; ``ark,scp:`` pairs (writing only) are refused here."""
    m = _SPEC.match(spec)
    if not m or not is_specifier(spec):
        raise AsrprivError(f"{spec}: not a Kaldi table specifier (ark:FILE, ark,t:-, scp:FILE, "
                           "ark:COMMAND |)")
    opts = m.group("opts").split(",")
    if "ark" in opts and "scp" in opts:
        raise AsrprivError(f"{spec}: ark,scp: names an output pair; read ark:FILE or scp:FILE")
    kind = "ark" if "ark" in opts else "scp"
    rx = m.group("rx").strip()
    if not rx:
        raise AsrprivError(f"{spec}: no file, '-' or command after '{kind}:'")
    return Specifier(kind, rx, frozenset(o for o in opts if o not in ("ark", "scp")), spec)


class _Pipe:
    """The standard output of ``cmd |``; closing waits for the command and checks its status."""

    def __init__(self, command: str, name: str) -> None:
        self.name = name
        self.command = command
        self.proc = subprocess.Popen(command, shell=True, stdout=subprocess.PIPE)  # noqa: S602 - Kaldi semantics
        self.stream = self.proc.stdout

    def close(self, check: bool = True) -> None:
        self.stream.close()
        status = self.proc.wait()
        if check and status != 0:
            raise AsrprivError(f"{self.name}: command '{self.command}' exited with status {status}")


def open_rx(rx: str, name: str | None = None) -> tuple[BinaryIO, object]:
    """Open a Kaldi rxfilename for binary reading: a file (``.gz`` decompressed as every input
    of asrpriv is), ``-`` (stdin) or ``COMMAND |``. Returns the stream and a closer
    ``closer(check=True)``; for a pipe it waits for the command and, with ``check``, raises
    if it failed."""
    from kaldiio.utils import open_like_kaldi

    name = name or rx
    stripped = rx.strip()
    if stripped.endswith("|"):
        pipe = _Pipe(stripped[:-1].strip(), name)
        return pipe.stream, pipe.close
    if stripped.startswith("|"):
        raise AsrprivError(f"{name}: '| COMMAND' is an output; read 'COMMAND |'")
    if stripped == "-":
        from asrpriv.io.lines import open_binary

        return open_binary("-"), lambda check=True: None
    if stripped.endswith(".gz"):
        from asrpriv.io.lines import open_binary

        stream = open_binary(stripped)
    else:
        stream = open_like_kaldi(stripped, "rb")
    return stream, lambda check=True: stream.close()


def _buffered(stream) -> io.BufferedReader:
    if hasattr(stream, "peek"):
        return stream
    return io.BufferedReader(stream)


@dataclass
class Entry:
    """One table entry: key, value, and where it is (``path``, 1-based line for text entries)."""

    key: str
    value: object
    path: str
    line: int | None


def iter_table(spec: str, kind: str) -> Iterator[Entry]:
    """The entries of table ``spec`` (an rspecifier) read as holder ``kind`` (:data:`KINDS`)."""
    if kind not in KINDS:
        raise ValueError(f"unknown holder kind {kind!r}")
    s = parse(spec)
    if s.kind == "ark":
        yield from _ark_entries(s.rx, spec, kind)
    else:
        yield from _scp_entries(s.rx, spec, kind)


def _ark_entries(rx: str, name: str, kind: str) -> Iterator[Entry]:
    raw, closer = open_rx(rx, name)
    ok = False
    try:
        yield from read_archive(raw, name, kind)
        ok = True
    finally:
        closer(ok)  # a pipe's exit status is checked only when the whole table was read


def read_archive(stream: BinaryIO, name: str, kind: str) -> Iterator[Entry]:
    """Entries of an open archive stream (text and binary entries may alternate).

    Each entry is ``KEY`` then a space; a binary value follows at once (``\\0B``, never in
    text), a text value runs to the end of the line. Keys are found in the stream's buffer
    (``peek``), byte by byte only where one straddles a buffer boundary, so any entry may
    cross one."""
    from asrpriv.io.lines import BOM, decode_line, max_line_bytes

    stream = _buffered(stream)
    max_line = max_line_bytes()
    lineno = 0
    head = stream.peek(len(BOM))
    if head[:len(BOM)] == BOM:
        stream.read(len(BOM))
    while True:
        head = stream.peek(1)
        if not head:
            return
        if head[:1] == b"\n":  # a blank line
            stream.read(1)
            lineno += 1
            continue
        cut = _separator(head)
        if cut >= 0:
            key_raw, sep = stream.read(cut), stream.read(1)
        else:  # the key straddles the buffer's end: read it byte by byte
            key_raw, sep = _read_key(stream, name, lineno, max_line)
        if sep == b" " and stream.peek(1)[:1] == b"\0":
            key = _key(key_raw, name, lineno)
            yield Entry(key, _binary_value(stream, name, key, kind), name, None)
            continue
        lineno += 1
        rest = stream.readline(max_line + 1) if sep == b" " else b""
        if len(key_raw) + len(rest) > max_line and not rest.endswith(b"\n"):
            raise InputError(name, lineno, f"line longer than {max_line} bytes")
        line = decode_line(key_raw + sep + rest, name, lineno).rstrip("\r\n")
        if not line.strip():
            continue
        yield _split_entry(line, name, lineno, kind)


def _read_key(stream, name: str, lineno: int, max_line: int) -> tuple[bytes, bytes]:
    """Bytes up to the first space or newline, and that separator (b"" at the end)."""
    key = bytearray()
    while True:
        c = stream.read(1)
        if not c or c in (b" ", b"\n"):
            return bytes(key), c
        key += c
        if len(key) > max_line:
            raise InputError(name, lineno + 1, f"line longer than {max_line} bytes")


def _separator(head: bytes) -> int:
    """Index of the first space or newline in ``head`` (-1: none)."""
    sp, nl = head.find(b" "), head.find(b"\n")
    if sp < 0:
        return nl
    return sp if nl < 0 else min(sp, nl)


def _split_entry(line: str, name: str, lineno: int, kind: str) -> Entry:
    if line[0].isspace():
        raise InputError(name, lineno, "line without a key (it starts with white space)")
    parts = line.split(None, 1)
    return _text_entry(parts[0], parts[1] if len(parts) > 1 else "", name, lineno, kind)


def _text_entry(key: str, rest: str, name: str, lineno: int, kind: str) -> Entry:
    return Entry(key, _text_value(rest, name, lineno, kind), name, lineno)


def _key(raw: bytes, name: str, lineno: int) -> str:
    try:
        key = raw.decode("utf-8").lstrip("\n")
    except UnicodeDecodeError:
        raise InputError(name, lineno + 1, "a key that is not valid UTF-8") from None
    if not key or any(ch.isspace() for ch in key):
        raise InputError(name, lineno + 1, f"bad key {key!r} before a binary value")
    return key


def _text_value(rest: str, name: str, lineno: int, kind: str):
    if kind in ("tokens", "int32s_or_tokens"):
        return rest.split()
    toks = rest.split()
    if kind == "int32s":
        if toks[:1] == ["["] and toks[-1:] == ["]"]:
            toks = toks[1:-1]
        try:
            return [int(t) for t in toks]
        except ValueError:
            raise InputError(name, lineno, f"expected integers (word ids), got {rest.strip()!r}") from None
    if len(toks) != 1:
        raise InputError(name, lineno, f"expected 'KEY number', got {len(toks)} values")
    from asrpriv.io.importers.common import parse_float

    return parse_float(toks[0], name, lineno, "cost")


def _binary_value(stream: BinaryIO, name: str, key: str, kind: str):
    marker = stream.read(2)
    if marker != b"\0B":  # pragma: no cover - checked by the caller's peek
        raise InputError(name, None, f"entry {key!r}: expected a binary value")
    if kind == "tokens":
        raise InputError(name, None, f"entry {key!r}: a binary value where a token vector (text) "
                                     "was expected; give --words words.txt for word ids")
    size = stream.read(1)
    if kind in ("int32s", "int32s_or_tokens"):
        if size != b"\4":
            raise InputError(name, None, f"entry {key!r}: not a binary int32 vector "
                                         f"(type byte {size!r}); expected word ids")
        from kaldiio.matio import read_int32vector

        from kaldiio.utils import MultiFileDescriptor

        fd = MultiFileDescriptor(io.BytesIO(b"\0B" + size), stream)
        try:
            return [int(x) for x in read_int32vector(fd)]
        except (AssertionError, struct.error):
            raise InputError(name, None, f"entry {key!r}: truncated or damaged int32 vector") from None
    if size == b"\4":
        data = stream.read(4)
        fmt = "<f"
    elif size == b"\x08":
        data = stream.read(8)
        fmt = "<d"
    else:
        raise InputError(name, None, f"entry {key!r}: not a binary float (type byte {size!r})")
    if len(data) != struct.calcsize(fmt):
        raise InputError(name, None, f"entry {key!r}: truncated binary float")
    return float(struct.unpack(fmt, data)[0])


def _scp_entries(rx: str, name: str, kind: str) -> Iterator[Entry]:
    from kaldiio.matio import _parse_arkpath

    from asrpriv.io.lines import iter_lines

    if rx.endswith("|") or rx == "-":
        raw, closer = open_rx(rx, name)
        lines = _numbered(raw, name)
    else:
        lines, closer = iter_lines(rx), None
    try:
        for lineno, line in lines:
            parts = line.split(None, 1)
            if not parts:
                continue
            if len(parts) != 2:
                raise InputError(name, lineno, "expected 'KEY RXFILENAME[:OFFSET]'")
            key, target = parts[0], parts[1].strip()
            path, offset, _slices = _parse_arkpath(target)
            raw, close_target = open_rx(path, f"{name}:{lineno}")
            try:
                if offset is not None:
                    raw.seek(offset)
                entries = read_archive_value(raw, f"{path}", key, kind, lineno, name)
                yield Entry(key, entries, name, lineno)
            finally:
                close_target()
    finally:
        if closer is not None:
            closer()


def read_archive_value(stream: BinaryIO, path: str, key: str, kind: str, lineno: int,
                       scp: str):
    """One object at the current position of ``stream`` (an scp target: no key before it)."""
    stream = _buffered(stream)
    head = stream.peek(2)[:2]
    if head == b"\0B":
        return _binary_value(stream, path, key, kind)
    from asrpriv.io.lines import decode_line

    raw = stream.readline()
    return _text_value(decode_line(raw, path, 1).rstrip("\r\n"), scp, lineno, kind)


def _numbered(raw: BinaryIO, name: str) -> Iterator[tuple[int, str]]:
    from asrpriv.io.lines import decode_line

    for lineno, line in enumerate(raw, 1):
        yield lineno, decode_line(line, name, lineno).rstrip("\r\n")


def iter_lines(spec: str) -> Iterator[tuple[int, str]]:
    """``(line, text)`` of an ``ark`` specifier's stream read as text (for text-only formats:
    Kaldi text lattices). A binary entry stops with the caller's advice (InputError at the
    first NUL byte). ``scp:`` is refused: such a table is read entry by entry."""
    s = parse(spec)
    if s.kind != "ark":
        raise AsrprivError(f"{spec}: read this table through ark: (an scp of text objects is not "
                           "supported here)")
    if s.rx == "-" or not s.rx.endswith("|"):
        from asrpriv.io.lines import iter_lines as file_lines

        yield from file_lines(s.rx)
        return
    raw, closer = open_rx(s.rx, spec)
    ok = False
    try:
        yield from _numbered(raw, spec)
        ok = True
    finally:
        closer(ok)


def read_tokens(spec: str, symbols: dict[str, str] | None = None) -> Iterator[Entry]:
    """Token-vector entries of ``spec``; with ``symbols`` (``{id: word}``, a words.txt) binary
    entries are word ids (``int32s``) mapped to words, and so are text entries when the first
    non-empty one is all integers (a table of ids); a table of words stays words, so one
    ``--words`` serves a text reference and an id hypothesis alike."""
    if symbols is None:
        yield from iter_table(spec, "tokens")
        return
    ids_mode: bool | None = None
    for e in iter_table(spec, "int32s_or_tokens"):
        values = e.value
        if any(isinstance(v, str) for v in values):  # a text entry: its tokens as written
            if values[:1] == ["["] and values[-1:] == ["]"] and all(_is_int(t) for t in values[1:-1]):
                values = values[1:-1]  # kaldiio's text form of a vector
            if ids_mode is None and values:
                ids_mode = all(_is_int(t) for t in values)
            if not ids_mode:
                yield Entry(e.key, list(values), e.path, e.line)
                continue
            if not all(_is_int(t) for t in values):
                raise InputError(e.path, e.line, f"expected word ids (the table's first entry "
                                                 f"holds ids), got {' '.join(values)!r}")
        try:
            words = [symbols[str(int(i))] for i in values]
        except KeyError as err:
            raise InputError(e.path, e.line, f"word id {err.args[0]} of {e.key!r} is not in the "
                                             "symbol table") from None
        yield Entry(e.key, words, e.path, e.line)


def _is_int(token: str) -> bool:
    return token.isdigit() or (token[:1] == "-" and token[1:].isdigit())


def _write_targets(spec: str) -> tuple[str, str | None, bool]:
    """``(archive rx, scp file or None, text)`` of a wspecifier."""
    m = _SPEC.match(spec)
    if not m or not is_specifier(spec):
        raise AsrprivError(f"{spec}: not a Kaldi wspecifier (ark,t:FILE, ark:-, ark,scp:A.ark,A.scp)")
    opts = m.group("opts").split(",")
    rx = m.group("rx").strip()
    if "ark" not in opts:
        raise AsrprivError(f"{spec}: writing needs ark: (ark,scp:A.ark,A.scp for both)")
    scp_path = None
    if "scp" in opts:
        if "," not in rx:
            raise AsrprivError(f"{spec}: ark,scp: needs two files, A.ark,A.scp")
        rx, scp_path = (p.strip() for p in rx.split(",", 1))
        if rx == "-" or rx.endswith("|") or rx.startswith("|"):
            raise AsrprivError(f"{spec}: ark,scp: needs a file for the archive (offsets)")
    if rx.endswith("|"):
        raise AsrprivError(f"{spec}: 'COMMAND |' is an input; write to '| COMMAND'")
    if not rx:
        raise AsrprivError(f"{spec}: no file, '-' or '| COMMAND' after 'ark:'")
    return rx, scp_path, "t" in opts


def check_writable(spec: str, what: str = "-o") -> None:
    """Fail early when the file(s) of a wspecifier cannot be written."""
    from asrpriv.io.output import check_writable as check_file

    rx, scp_path, _text = _write_targets(spec)
    for p in (rx, scp_path):
        if p is not None and p != "-" and not p.startswith("|"):
            check_file(p, what)


def write_table(spec: str, entries, symbols_inv: dict[str, int] | None = None) -> int:
    """Write ``(key, words)`` pairs to a wspecifier: ``ark,t:FILE`` / ``ark,t:-`` /
    ``ark:| COMMAND`` / ``ark,scp:A.ark,A.scp``; with ``symbols_inv`` (``{word: id}``) as
    int32 vectors (binary unless ``t``: Kaldi's ``BasicVectorHolder<int32>``), else as token
    vectors (text, as Kaldi's ``TokenVectorHolder`` always writes them). A file is written
    atomically (:func:`asrpriv.io.output.open_output`); a command's failure is an error.
    Returns the number of entries written."""
    import contextlib

    from asrpriv.io.output import open_output

    rx, scp_path, text = _write_targets(spec)
    binary_ids = symbols_inv is not None and not text
    offsets: list[tuple[str, int]] = []
    n = 0
    with contextlib.ExitStack() as stack:
        proc = None
        if rx.startswith("|"):
            command = rx[1:].strip()
            proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE)  # noqa: S602
            out = proc.stdin
        else:
            out = stack.enter_context(open_output(rx, "wb"))
        try:
            for key, words in entries:
                if not key or any(ch.isspace() for ch in key):
                    raise AsrprivError(f"{spec}: bad key {key!r}")
                out.write(key.encode("utf-8") + b" ")
                if scp_path:
                    offsets.append((key, out.tell()))
                if symbols_inv is not None:
                    try:
                        ids = [symbols_inv[w] for w in words]
                    except KeyError as err:
                        raise AsrprivError(f"{key}: word {err.args[0]!r} is not in the symbol "
                                           "table (--words)") from None
                    if binary_ids:
                        out.write(b"\0B\4" + struct.pack("<i", len(ids))
                                  + b"".join(b"\4" + struct.pack("<i", i) for i in ids))
                        n += 1
                        continue
                    words = [str(i) for i in ids]
                out.write(" ".join(words).encode("utf-8") + b"\n")
                n += 1
        finally:
            if proc is not None:
                out.close()
                status = proc.wait()
                if status != 0:
                    raise AsrprivError(f"{spec}: command '{rx[1:].strip()}' exited with status {status}")
    if scp_path:
        with open_output(scp_path) as f:
            for key, off in offsets:
                f.write(f"{key} {rx}:{off}\n")
    return n
