"""What the Flower steps (``fl-simulate``, ``fl-fmp``) share on the click side: stderr talk.

Nothing here imports flwr: ``asrpriv --help`` must not load it (the entries check for it:
:func:`asrpriv_flower.require_flower`).
"""

from __future__ import annotations


def stderr_talk():
    """A ``talk(line)`` for progress lines on stderr (silent with -q). The ServerApp calls it
    from its own thread, where there is no click context, so -q is read here, once."""
    import sys

    from asrpriv.commands.options import is_quiet

    quiet = is_quiet()

    def talk(line: str) -> None:
        if not quiet:
            print(line, file=sys.stderr, flush=True)

    return talk
