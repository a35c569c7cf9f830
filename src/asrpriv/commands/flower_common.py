"""What the Flower steps (``fl-simulate``, ``fl-fmp``) share: the flwr check and stderr talk.

Nothing here imports flwr at module level: ``asrpriv --help`` must not load it.
"""

from __future__ import annotations


def require_flower(step: str) -> None:
    """Raise a one-line AsrprivError unless flwr and Ray can be imported."""
    from asrpriv.errors import AsrprivError

    try:
        import flwr  # noqa: F401
        import ray  # noqa: F401
    except ImportError:
        raise AsrprivError(f"{step} needs Flower (flwr with Ray): pip install 'asrpriv[flower]'") from None


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
