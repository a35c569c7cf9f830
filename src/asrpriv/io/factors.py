"""Factors files: ``word<TAB>log_factor`` (natural log), with ``#key=value`` metadata.

Format ``asrpriv-factors/2``: words starting with ``#`` or ``\\`` are backslash-escaped
(:mod:`asrpriv.io.words`); metadata lines are validated (:mod:`asrpriv.io.metadata`), including
the privacy history of the counts the factors were made from.
"""

from __future__ import annotations

import math
from typing import IO

from asrpriv.errors import AsrprivError, InputError
from asrpriv.io.lines import iter_lines
from asrpriv.io.metadata import FACTORS_KEYS, MetaHeader, check_history_consistency, plain_float
from asrpriv.io.words import escape, is_word, unescape

FORMAT = "asrpriv-factors/2"


def read_factors(path: str, numbered_lines=None) -> tuple[dict[str, str], dict[str, float]]:
    """Read ``(metadata, {word: log_factor})``; a bad line is an InputError with its line.
    ``numbered_lines``: the file's ``(line number, line)`` pairs, when already being read."""
    header = MetaHeader(path, FACTORS_KEYS, "asrpriv-factors/1", "factor rows", "remake the factors")
    meta = header.meta
    factors: dict[str, float] = {}
    for lineno, line in header.rows(iter_lines(path) if numbered_lines is None else numbered_lines):
        escaped = header.escaped
        parts = line.split("\t")
        if len(parts) != 2:
            raise InputError(path, lineno, f"expected 'word<TAB>log_factor', got {len(parts)} fields")
        word = unescape(parts[0]) if escaped else parts[0]
        if word is None or not is_word(word):
            raise InputError(path, lineno, f"bad word {parts[0]!r}")
        try:
            value = plain_float(parts[1])
        except ValueError:
            raise InputError(path, lineno, f"log_factor: expected a number, got {parts[1]!r}") from None
        if not math.isfinite(value):
            raise InputError(path, lineno, f"log_factor: expected a finite number, got {parts[1]!r}")
        if word in factors:
            raise InputError(path, lineno, f"duplicate word {word!r}")
        factors[word] = value
    if not factors:
        raise InputError(path, None, "empty input: expected 'word<TAB>log_factor' rows")
    check_history_consistency(path, meta, header.lines)
    return meta, factors


def write_factors(stream: IO[str], meta: dict[str, str], factors: dict[str, float]) -> None:
    meta = {"format": FORMAT, **{k: v for k, v in meta.items() if k != "format"}}
    for key, value in meta.items():
        stream.write(f"#{key}={value}\n")
    for w in factors:
        if not is_word(w):
            raise AsrprivError(f"cannot write the word {w!r}: words have no white space")
    stream.writelines(f"{escape(w)}\t{factors[w]:.8g}\n" for w in sorted(factors))
