"""Reading text inputs line by line: UTF-8 strictly, gzip transparently, located errors.

Every reader of the project goes through :func:`iter_lines`, so every format gets the same
checks: invalid UTF-8 and binary data (NUL bytes) stop the step with ``FILE:LINE``.

Two more rules hold for every input (docs/FORMATS.md):

* a UTF-8 byte order mark (``EF BB BF``) at the very start of a file is removed once, so it
  never becomes part of the first word or column name (a BOM anywhere else is kept: it is
  text);
* a line longer than :func:`max_line_bytes` (default 1 MiB, environment variable
  ``ASRPRIV_MAX_LINE_BYTES``) stops the step with ``FILE:LINE``, so a newline-free input is
  never held whole in memory (:func:`iter_blocks` checks every line of a block too);
* a damaged ``.gz`` (bad header, bad deflate data, truncated) stops the step with
  ``FILE: cannot read: ...`` (exit 2), whichever reader meets it.

Pipes and FIFOs: a text input is read once, front to back, so it may be a pipe, a FIFO or a
process substitution (``<(zcat a.gz)``). A file whose kind is detected from its first bytes
and that is then opened again (LM and model files, server states) must be a regular file:
:func:`require_regular_file` refuses a FIFO, socket or device there (reading one would
consume the bytes the detection looked at, or wait forever for a writer that has gone) and
a directory everywhere.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import stat
import sys
import zlib
from typing import BinaryIO, Iterable, Iterator

from asrpriv.errors import InputError, display_name

#: bytes read per block by :func:`iter_blocks`
BLOCK_SIZE = 1 << 22
#: the UTF-8 byte order mark, dropped from the start of every input
BOM = b"\xef\xbb\xbf"
#: default longest line, in bytes (its line ending not counted); ASRPRIV_MAX_LINE_BYTES overrides it
DEFAULT_MAX_LINE_BYTES = 1 << 20
MAX_LINE_ENV = "ASRPRIV_MAX_LINE_BYTES"


def max_line_bytes() -> int:
    """The longest accepted line in bytes: ``$ASRPRIV_MAX_LINE_BYTES`` or 1 MiB."""
    from asrpriv.errors import AsrprivError

    raw = os.environ.get(MAX_LINE_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_LINE_BYTES
    try:
        value = int(raw)
    except ValueError:
        raise AsrprivError(f"{MAX_LINE_ENV}={raw!r}: expected a positive integer (bytes)") from None
    if value < 1:
        raise AsrprivError(f"{MAX_LINE_ENV}={raw!r}: expected a positive integer (bytes)")
    return value


def _too_long(path: str | None, lineno: int, limit: int) -> InputError:
    return InputError(path, lineno, f"line longer than {limit} bytes (the limit is set by "
                                    f"{MAX_LINE_ENV}; is this a text file?)")


#: what a damaged or truncated gzip stream raises (BadGzipFile is an OSError)
GZIP_ERRORS = (OSError, EOFError, zlib.error)


def require_regular_file(path: str, what: str) -> None:
    """Refuse a directory, FIFO, socket or device where a regular file is needed.

    For inputs that are sniffed and then opened again, or memory-mapped (LM, model and
    state files): see the module docstring. A missing file raises ``FileNotFoundError``
    (the step reports it as ``FILE: No such file or directory``).
    """
    mode = os.stat(path).st_mode
    if stat.S_ISDIR(mode):
        raise InputError(path, None, f"is a directory, not {what}")
    if not stat.S_ISREG(mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "not a regular file")
        raise InputError(path, None, f"is {kind}: {what} must be a regular file (it is read "
                                     "more than once); write it to a file first")


@contextlib.contextmanager
def stdin_spooled(*paths: str | None, streamed: Iterable[str | None] = ()) -> Iterator[list[str | None]]:
    """``-`` (standard input) as a regular file, for readers that need one (they read it
    twice, or seek: LM and model files, importers): standard input is copied once into a
    temporary file that is removed afterwards, and the paths are yielded with ``-`` replaced
    by it. Errors that name the temporary file name ``<stdin>`` instead. At most one of
    ``paths`` and the step's ``streamed`` inputs (read once, front to back, so they stay on
    stdin unspooled) may be ``-``.
    """
    import shutil
    import tempfile

    from asrpriv.errors import AsrprivError

    if sum(str(p) == "-" for p in (*paths, *streamed) if p is not None) > 1:
        raise AsrprivError("only one input can come from standard input ('-')")
    if not any(p is not None and str(p) == "-" for p in paths):
        yield list(paths)
        return
    if sys.stdin is None:
        raise AsrprivError("standard input is closed; give an input file")
    with tempfile.TemporaryDirectory(prefix="asrpriv-stdin-") as tmpdir:
        spooled = os.path.join(tmpdir, "stdin")
        with open(spooled, "wb") as out:
            shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
        try:
            yield [spooled if p is not None and str(p) == "-" else p for p in paths]
        except AsrprivError as err:
            if spooled in err.message:
                # a command quoted for the user reads standard input as Kaldi does: ark:-
                err.message = err.message.replace(f"'ark:{spooled}'", "ark:-")
                err.message = err.message.replace(spooled, "<stdin>")
                err.args = (err.message,)
                if isinstance(err, InputError):
                    err.path = "<stdin>"
            raise
        except OSError as err:
            if err.filename == spooled:
                raise OSError(err.errno, err.strerror, "<stdin>") from None
            raise


def open_binary(path: str | None) -> BinaryIO:
    """Open a path (``-``/None = stdin) for binary reading; ``.gz`` is decompressed."""
    if path is None or str(path) == "-":
        if sys.stdin is None:
            from asrpriv.errors import AsrprivError

            raise AsrprivError("standard input is closed; give an input file")
        return sys.stdin.buffer
    stream = open(path, "rb")  # noqa: SIM115 - caller closes
    if str(path).endswith(".gz"):
        return gzip.GzipFile(fileobj=stream, mode="rb")  # type: ignore[return-value]
    return stream


def decode_line(raw: bytes, path: str | None, lineno: int) -> str:
    """Decode one line strictly; NUL bytes mean binary data."""
    if b"\x00" in raw:
        raise InputError(path, lineno, "binary data (NUL byte) where text was expected")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(path, lineno,
                         f"not valid UTF-8 (byte 0x{raw[err.start]:02x} at column {err.start + 1})") from None


def iter_lines(path: str | None) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` with line endings removed; line numbers start at 1."""
    limit = max_line_bytes()
    stream = open_binary(path)
    try:
        lineno = 0
        while True:
            raw = stream.readline(limit + 1)
            if not raw:
                break
            lineno += 1
            if len(raw) > limit and not (len(raw) == limit + 1 and raw.endswith(b"\n")):
                raise _too_long(path, lineno, limit)
            if lineno == 1 and raw.startswith(BOM):
                raw = raw[len(BOM):]
            yield lineno, decode_line(raw, path, lineno).rstrip("\r\n")
    except GZIP_ERRORS as err:
        raise _read_error(path, err) from None
    finally:
        if not _is_stdin(stream):
            stream.close()


def iter_blocks(path: str | None, block_size: int = BLOCK_SIZE) -> Iterator[tuple[int, str]]:
    """Yield ``(first_line_number, text)`` blocks of whole lines, decoded strictly.

    For fast whole-text scans (counting words): one decode and one ``split`` per block
    instead of per line. A bad byte is located to its line before the error is raised.
    """
    limit = max_line_bytes()
    stream = open_binary(path)
    try:
        yield from _blocks(stream, path, block_size, limit)
    except GZIP_ERRORS as err:
        raise _read_error(path, err) from None
    finally:
        if not _is_stdin(stream):
            stream.close()


def _read_error(path: str | None, err: BaseException) -> BaseException:
    """A read failure as the step reports it: a missing file or directory stays itself."""
    if isinstance(err, (FileNotFoundError, IsADirectoryError, PermissionError)):
        return err
    return InputError(path, None, f"cannot read: {err or type(err).__name__}")


def _blocks(stream: BinaryIO, path: str | None, block_size: int, limit: int
            ) -> Iterator[tuple[int, str]]:
    lineno = 1
    tail = b""
    first = True
    while True:
        chunk = stream.read(block_size)
        if not chunk:
            break
        if first:
            first = False
            if chunk.startswith(BOM):
                chunk = chunk[len(BOM):]
            elif len(chunk) < len(BOM) and BOM.startswith(chunk):
                chunk += stream.read(len(BOM))  # a short read cut the BOM
                chunk = chunk[len(BOM):] if chunk.startswith(BOM) else chunk
        data = tail + chunk
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            tail = data
            if len(tail) > limit:
                raise _too_long(path, lineno, limit)
            continue
        block, tail = data[:cut], data[cut:]
        if len(tail) > limit:
            raise _too_long(path, lineno + block.count(b"\n"), limit)
        _check_line_lengths(block, path, lineno, limit)
        yield lineno, _decode_block(block, path, lineno)
        lineno += block.count(b"\n")
    if tail:
        yield lineno, _decode_block(tail, path, lineno)


def _check_line_lengths(block: bytes, path: str | None, first_line: int, limit: int) -> None:
    """No line of ``block`` (whole lines, each ending in ``\\n``) is longer than ``limit``.

    Jumps from newline to the last newline within ``limit + 1`` bytes: a few ``rfind`` per
    block, not one per line.
    """
    if len(block) <= limit:
        return
    pos, end = 0, len(block)
    while end - pos > limit:
        nl = block.rfind(b"\n", pos, pos + limit + 1)
        if nl < 0:  # the line starting at pos has more than ``limit`` bytes before its newline
            raise _too_long(path, first_line + block.count(b"\n", 0, pos), limit)
        pos = nl + 1


def _is_stdin(stream) -> bool:
    return sys.stdin is not None and stream is sys.stdin.buffer


def _decode_block(block: bytes, path: str | None, first_line: int) -> str:
    if b"\x00" not in block:
        try:
            return block.decode("utf-8")
        except UnicodeDecodeError:
            pass
    for offset, raw in enumerate(io.BytesIO(block)):
        decode_line(raw, path, first_line + offset)
    raise InputError(path, first_line, "not valid UTF-8")  # unreachable in practice


def require_nonempty(seen_any: bool, path: str | None, what: str) -> None:
    """An empty input is an error for steps that need data."""
    if not seen_any:
        raise InputError(path, None, f"empty input: expected {what}")


__all__ = ["iter_lines", "iter_blocks", "open_binary", "decode_line", "display_name",
           "require_regular_file", "require_nonempty", "max_line_bytes", "BOM"]
