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
        click.echo(f"{self.prog}: {self.format_message()}", err=True)


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


def display_name(path: str | None) -> str:
    """How a path is named in messages: ``<stdin>`` for standard input."""
    if path is None or str(path) == "-":
        return "<stdin>"
    return str(path)
