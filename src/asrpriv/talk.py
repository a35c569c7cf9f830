"""Talk on stderr for library code: info lines, warnings, and the seeded-noise warning.

The library does not know click. Outside the CLI (the Python API, Flower apps), talk goes to
stderr and nothing is quiet. The CLI (:mod:`asrpriv.commands.options`) installs its own
hooks at import, so that ``-q``/``-v`` and the step's name (``asrpriv STEP: warning: ...``)
are read from the running click command, as they always were.
"""

from __future__ import annotations

import sys
from typing import Callable


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


_hooks: dict[str, Callable] = {
    "quiet": lambda: False,      # -> bool: --quiet given
    "verbose": lambda: False,    # -> bool: --verbose given
    "prog": lambda: "asrpriv",   # -> str: "asrpriv STEP" while a step runs
    "echo": _stderr,             # (line) -> None: write one line on stderr
}


def install(quiet: Callable[[], bool], verbose: Callable[[], bool], prog: Callable[[], str],
            echo: Callable[[str], None]) -> None:
    """Route talk through a front end (the CLI calls this once, at import)."""
    _hooks.update(quiet=quiet, verbose=verbose, prog=prog, echo=echo)


def is_quiet() -> bool:
    return bool(_hooks["quiet"]())


def is_verbose() -> bool:
    return bool(_hooks["verbose"]())


def info(message: str) -> None:
    """Talk to the user on stderr, unless ``--quiet``."""
    if not is_quiet():
        _hooks["echo"](message)


def warn(message: str) -> None:
    """A warning on stderr, unless ``--quiet``; prefixed with the step name."""
    if not is_quiet():
        _hooks["echo"](f"{_hooks['prog']()}: warning: {message}")


def seeded_warning(what: str) -> None:
    """The warning that seeded privacy noise is not private: printed even with ``-q``.

    ``-q`` silences talk, not this: a seeded release must never be silent (the output's
    metadata marks it too, ``#seeded=1``).
    """
    _hooks["echo"](f"{_hooks['prog']()}: warning: seeded noise ({what}) is repeatable and "
                   "therefore NOT private; for tests only (the output is marked #seeded=1)")
