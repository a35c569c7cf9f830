"""Error kinds and how they end a step.

A user error (bad input, bad usage) ends a step with one stderr line and exit code 2;
an internal failure with exit code 1. Only ``--verbose`` shows a traceback.
"""

from __future__ import annotations

import click

EXIT_USAGE = 2
EXIT_INTERNAL = 1


class AsrprivError(click.ClickException):
    """A user-facing error: printed as ``asrpriv STEP: message`` with exit code 2."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.prog = "asrpriv"

    def show(self, file=None) -> None:  # noqa: D102 - click API
        click.echo(f"{self.prog}: {one_line(self.format_message())}", err=True)


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
