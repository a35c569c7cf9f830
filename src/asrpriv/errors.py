"""Error kinds and how they end a step.

A user error (bad input, bad usage) ends a step with one stderr line and exit code 2;
an internal failure with exit code 1. Only ``--verbose`` shows a traceback.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from typing import Callable, Iterator

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


# ------------------------------------------------------------------ naming arguments
#: how the running face spells a library argument in messages (None: by its own name)
_SPELLING: contextvars.ContextVar[Callable[[str], str] | None] = \
    contextvars.ContextVar("asrpriv_argument_spelling", default=None)


def arg(name: str) -> str:
    """How an error message names the library argument ``name`` (``max_l1``).

    Library messages name what their caller gave: a Python caller reads ``max_l1``, the CLI's
    user the flag ``--max-l1``. The face decides, once (:func:`spelled`): ``asrpriv.cli`` maps
    each argument to its step's flag; without a face the argument's own name is used. No
    message is rewritten after the fact.
    """
    spell = _SPELLING.get()
    return spell(name) if spell is not None else name


def cli_flag(name: str) -> str:
    """The CLI's default spelling of an argument: ``max_l1`` -> ``--max-l1``."""
    return "--" + name.replace("_", "-")


@contextlib.contextmanager
def spelled(spell: Callable[[str], str]) -> Iterator[None]:
    """Within the block, :func:`arg` spells arguments with ``spell`` (the CLI: flags)."""
    token = _SPELLING.set(spell)
    try:
        yield
    finally:
        _SPELLING.reset(token)
