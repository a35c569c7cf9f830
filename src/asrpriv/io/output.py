"""Atomic outputs: a file appears complete or not at all."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import IO, Iterator


@contextlib.contextmanager
def open_output(path: str | None, mode: str = "w") -> Iterator[IO]:
    """Open an output for writing: stdout for ``-``/None, else a temp file renamed on success.

    The temporary file lives in the target's directory (so the rename is atomic), and is
    removed if the block raises. Text mode writes UTF-8 with ``\\n`` line endings.
    """
    binary = "b" in mode
    if path is None or str(path) == "-":
        stream = sys.stdout.buffer if binary else sys.stdout
        yield stream
        stream.flush()
        return
    with atomic_path(path) as tmp:
        if binary:
            handle = open(tmp, "wb")  # noqa: SIM115
        else:
            handle = open(tmp, "w", encoding="utf-8", newline="\n")  # noqa: SIM115
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
    """A temporary path beside ``path`` for writers that need a file name (torch.save, plots)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
