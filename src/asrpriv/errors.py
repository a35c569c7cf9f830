"""Error kinds and how they end a step.

A user error (bad input, bad usage) ends a step with one stderr line and exit code 2;
an internal failure with exit code 1. Only ``--verbose`` shows a traceback.
"""

from __future__ import annotations

import sys

EXIT_USAGE = 2
EXIT_INTERNAL = 1


class AsrprivError(Exception):
    """A user-facing error: printed as ``asrpriv STEP: message`` with exit code 2.

    A plain exception (the library raises it and knows nothing of click); the CLI
    (:mod:`asrpriv.cli`) turns it into click's exit with :attr:`exit_code`.
    """

    exit_code = EXIT_USAGE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.prog = "asrpriv"

    def format_message(self) -> str:
        return self.message

    def __str__(self) -> str:
        return self.message

    def show(self, file=None) -> None:
        """Print the one-line error (``PROG: message``) on ``file`` (default stderr)."""
        print(self.as_line(), file=file if file is not None else sys.stderr, flush=True)

    def as_line(self) -> str:
        """The error as one line: ``PROG: message`` with control characters escaped."""
        return f"{self.prog}: {one_line(self.format_message())}"


class InputError(AsrprivError):
    """Bad content in an input file, located by file name and 1-based line number."""

    def __init__(self, path: str | None, line: int | None, message: str) -> None:
        self.path = display_name(path)
        self.line = line
        self.detail = message
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")


class InternalError(AsrprivError):
    """An unexpected failure (a bug or the environment), exit code 1."""

    exit_code = EXIT_INTERNAL


def one_line(message: str) -> str:
    """The message with line breaks and other control characters escaped, so it stays one line.

    Messages quote input text, which may hold any character (``\x1e`` and ``\u2028`` break
    lines too); a log reader must see exactly one line per error.
    """
    import unicodedata

    if message.isprintable():
        return message
    return "".join(c if c.isprintable() or (c == " ") else
                   (repr(c)[1:-1] if unicodedata.category(c)[0] in "CZ" else c) for c in message)


def display_name(path: str | None) -> str:
    """How a path is named in messages: ``<stdin>`` for standard input."""
    if path is None or str(path) == "-":
        return "<stdin>"
    return str(path)
