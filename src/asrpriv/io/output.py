"""Outputs: a regular file appears complete or not at all; links and special files are respected.

Rules for ``-o PATH`` (docs/FORMATS.md, "Outputs"):

* ``-`` is standard output (a closed standard output is a one-line error, not a traceback);
* an open descriptor named as a path (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``,
  ``/proc/self/fd/N``: what a shell's process substitution ``>(cmd)`` passes) is written through
  a duplicate of that descriptor, as the stream it is (its offset and append mode respected; a
  regular file behind it is not replaced);
* a symlink is written through: the link is resolved and its target replaced atomically (the
  temporary file lives in the target's directory), the link itself stays a link;
* a FIFO, character device (``/dev/null``) or socket is written directly, as the stream it is
  (not atomically; it is never unlinked or replaced by a regular file);
* anything else is written to a hidden temporary file beside it and renamed on success; the
  temporary file is removed if the step fails or is stopped by SIGINT/SIGTERM/SIGHUP
  (:func:`asrpriv.cli.main` turns those signals into an exception).

Error messages name the user's path, never the temporary file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from typing import IO, Iterator

from asrpriv.errors import AsrprivError


def stdout_stream(binary: bool = False) -> IO:
    """Standard output, or a one-line error when it is closed (``asrpriv STEP >&-``)."""
    if sys.stdout is None:
        raise AsrprivError("standard output is closed; give -o FILE")
    return sys.stdout.buffer if binary else sys.stdout


def descriptor_of(path: str) -> int | None:
    """The descriptor number that ``path`` names (``/dev/stdout``, ``/dev/fd/3``,
    ``/proc/self/fd/3``), or None for any other path.

    Such a path is a link into ``/proc`` whose target (``pipe:[N]``) cannot be opened by name
    where it is a pipe; it is written through ``os.dup`` of the descriptor instead.
    """
    import re

    path = str(path)
    named = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
    if path in named:
        return named[path]
    m = re.fullmatch(r"/(?:dev/fd|proc/self/fd|proc/%d/fd)/(\d+)" % os.getpid(), path)
    return int(m.group(1)) if m else None


@contextlib.contextmanager
def _descriptor_output(path: str, fd: int, binary: bool) -> Iterator[IO]:
    try:
        dup = os.dup(fd)
    except OSError:
        raise AsrprivError(f"{path}: descriptor {fd} is not open") from None
    handle = os.fdopen(dup, "wb") if binary else \
        os.fdopen(dup, "w", encoding="utf-8", newline="\n")
    with handle:
        yield handle


def _special(path: str) -> bool:
    """True for an existing FIFO, character/block device or socket (followed through links)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode)


def resolve_target(path: str) -> str:
    """The file that writing ``path`` replaces: a symlink's final target, else ``path``."""
    return os.path.realpath(path) if os.path.islink(path) else path


def check_writable(path: str | None, what: str = "-o") -> None:
    """Fail now, before long work, if ``path`` cannot be written (missing or read-only directory).

    A special file (FIFO, device) must itself be writable; a regular file needs a writable
    directory (the atomic rename replaces it).
    """
    if path is None or str(path) == "-":
        return
    path = str(path)
    from asrpriv.io import kaldi_tables

    if kaldi_tables.is_specifier(path) and not os.path.exists(path):
        kaldi_tables.check_writable(path, what)  # a Kaldi wspecifier: its file(s)
        return
    fd = descriptor_of(path)
    if fd is not None:
        import fcntl

        try:
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        except OSError:
            raise AsrprivError(f"{path}: descriptor {fd} is not open") from None
        if flags & os.O_ACCMODE == os.O_RDONLY:
            raise AsrprivError(f"{path}: descriptor {fd} is not open for writing")
        return
    if os.path.isdir(path):
        raise AsrprivError(f"{path}: is a directory ({what} expects a file)")
    target = resolve_target(path)
    if _special(target):
        if not os.access(target, os.W_OK):
            raise AsrprivError(f"{path}: not writable")
        return
    directory = os.path.dirname(os.path.abspath(target)) or "."
    if not os.path.isdir(directory):
        raise AsrprivError(f"{path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise AsrprivError(f"{path}: directory {directory} is not writable")


@contextlib.contextmanager
def open_output(path: str | None, mode: str = "w") -> Iterator[IO]:
    """Open an output for writing: stdout for ``-``/None, else see the module docstring.

    Text mode writes UTF-8 with ``\\n`` line endings.
    """
    binary = "b" in mode
    if path is None or str(path) == "-":
        stream = stdout_stream(binary)
        yield stream
        stream.flush()
        return
    fd = descriptor_of(str(path))
    if fd is not None:
        with _descriptor_output(str(path), fd, binary) as handle:
            yield handle
        return
    target = resolve_target(str(path))
    if _special(target):
        with _user_path_errors(str(path)):
            handle = open(target, "wb") if binary else \
                open(target, "w", encoding="utf-8", newline="\n")  # noqa: SIM115
        with handle:
            yield handle
        return
    with atomic_path(path) as tmp:
        with _user_path_errors(str(path)):
            if binary:
                handle = open(tmp, "wb")  # noqa: SIM115
            else:
                handle = open(tmp, "w", encoding="utf-8", newline="\n")  # noqa: SIM115
        with handle:
            yield handle
            with _user_path_errors(str(path)):
                handle.flush()
                os.fsync(handle.fileno())


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
    """A temporary path for writers that need a file name (torch.save, plots), put in place on success.

    For a regular file (or a symlink's target) the temporary file lies in the target's
    directory and is renamed over it; for a FIFO or device it lies in the system's temporary
    directory and its bytes are copied into the special file. It is removed on failure.
    """
    path = str(path)
    stream_fd = descriptor_of(path)
    target = path if stream_fd is not None else resolve_target(path)
    special = stream_fd is not None or _special(target)
    directory = None if special else (os.path.dirname(os.path.abspath(target)) or ".")
    tmp = None
    try:
        with _user_path_errors(path), _signals_held():  # the signal comes once tmp is known
            fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp",
                                       dir=directory)
            os.close(fd)
        yield tmp
        with _user_path_errors(path):
            if special:
                with open(tmp, "rb") as src, \
                        (os.fdopen(os.dup(stream_fd), "wb") if stream_fd is not None
                         else open(target, "wb")) as dst:
                    while True:
                        block = src.read(1 << 20)
                        if not block:
                            break
                        dst.write(block)
                os.unlink(tmp)
            else:
                os.chmod(tmp, 0o666 & ~_umask())
                os.replace(tmp, target)
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_directory(path: str) -> Iterator[str]:
    """A temporary directory to write a step's files into, put in place as ``path`` on success.

    A new ``path`` appears whole or not at all: the files are written into a hidden
    ``.NAME.*.tmp`` directory beside it, renamed to ``path`` at the end. Into an existing
    directory each file is moved (``os.replace``, one at a time) only after all were written.
    On failure, or SIGINT/SIGTERM/SIGHUP (:func:`asrpriv.cli.main`), the temporary directory is removed
    and ``path`` is left as it was (an empty directory is never left behind).
    """
    import shutil

    path = str(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise AsrprivError(f"{path}: exists and is not a directory")
    parent = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        with _user_path_errors(path):
            os.makedirs(parent, exist_ok=True)
            with _signals_held():  # the signal comes once tmp is known, and it is removed
                tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(os.path.abspath(path))}.",
                                       suffix=".tmp", dir=parent)
        yield tmp
        with _user_path_errors(path):
            os.chmod(tmp, 0o777 & ~_umask())
            if os.path.isdir(path):
                for name in sorted(os.listdir(tmp)):
                    os.replace(os.path.join(tmp, name), os.path.join(path, name))
                os.rmdir(tmp)
            else:
                os.rename(tmp, path)
    except BaseException:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP (delivered on exit from the block) while a temporary file or
    directory is made, so that the handler of :func:`asrpriv.cli.main` never runs after its
    creation and before its name is known to the cleanup."""
    import signal
    import threading

    held = {getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)}
    if not hasattr(signal, "pthread_sigmask") \
            or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextlib.contextmanager
def _user_path_errors(path: str) -> Iterator[None]:
    """Re-raise an OSError about a temporary (or resolved) file as one about the user's path."""
    try:
        yield
    except OSError as err:
        if err.filename is None or err.filename == path:
            raise
        raise OSError(err.errno, err.strerror, path) from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
