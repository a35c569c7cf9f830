"""Reading text inputs line by line: UTF-8 strictly, gzip transparently, located errors.

Every reader of the project goes through :func:`iter_lines`, so every format gets the same
checks: invalid UTF-8 and binary data (NUL bytes) stop the step with ``FILE:LINE``.
"""

from __future__ import annotations

import gzip
import io
import sys
from typing import BinaryIO, Iterator

from asrpriv.errors import InputError, display_name

#: bytes read per block by :func:`iter_blocks`
BLOCK_SIZE = 1 << 22


def open_binary(path: str | None) -> BinaryIO:
    """Open a path (``-``/None = stdin) for binary reading; ``.gz`` is decompressed."""
    if path is None or str(path) == "-":
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
    stream = open_binary(path)
    try:
        for lineno, raw in enumerate(stream, 1):
            yield lineno, decode_line(raw, path, lineno).rstrip("\r\n")
    except (OSError, EOFError) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise InputError(path, None, f"cannot read: {err}") from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def iter_blocks(path: str | None, block_size: int = BLOCK_SIZE) -> Iterator[tuple[int, str]]:
    """Yield ``(first_line_number, text)`` blocks of whole lines, decoded strictly.

    For fast whole-text scans (counting words): one decode and one ``split`` per block
    instead of per line. A bad byte is located to its line before the error is raised.
    """
    stream = open_binary(path)
    lineno = 1
    tail = b""
    try:
        while True:
            chunk = stream.read(block_size)
            if not chunk:
                break
            data = tail + chunk
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                tail = data
                continue
            block, tail = data[:cut], data[cut:]
            yield lineno, _decode_block(block, path, lineno)
            lineno += block.count(b"\n")
        if tail:
            yield lineno, _decode_block(tail, path, lineno)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


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
           "require_nonempty"]
