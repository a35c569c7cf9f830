"""Parsing JSON text from an input file: every failure is an :class:`InputError` at FILE:LINE.

``json.loads`` raises ``RecursionError`` on deeply nested arrays or objects (a few thousand
levels), which would otherwise end a step as an internal error; no format of ours nests
deeper than a few levels.
"""

from __future__ import annotations

import json

from asrpriv.errors import InputError


def parse_json(text: str, path: str | None, line: int | None, what: str) -> object:
    """``json.loads(text)``; a syntax error or too deep nesting names ``path:line``.

    ``line`` is the line ``text`` starts on (None for a whole file: the decoder's line is
    used then).
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        where = err.lineno if line is None else line + err.lineno - 1
        raise InputError(path, where, f"not {what} ({err.msg})") from None
    except RecursionError:
        raise InputError(path, line, f"not {what}: nested too deeply") from None
