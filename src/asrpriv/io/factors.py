"""Factors files: ``word<TAB>log_factor`` (natural log), with optional ``#key=value`` metadata."""

from __future__ import annotations

import math
from typing import IO

from asrpriv.errors import InputError
from asrpriv.io.lines import iter_lines


def read_factors(path: str) -> tuple[dict[str, str], dict[str, float]]:
    """Read ``(metadata, {word: log_factor})``; a bad line is an InputError with its line."""
    meta: dict[str, str] = {}
    factors: dict[str, float] = {}
    for lineno, line in iter_lines(path):
        if line.startswith("#"):
            key, sep, value = line[1:].partition("=")
            if sep:
                meta[key.strip()] = value.strip()
            continue
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2:
            raise InputError(path, lineno, f"expected 'word<TAB>log_factor', got {len(parts)} fields")
        try:
            value = float(parts[1])
        except ValueError:
            raise InputError(path, lineno, f"log_factor: expected a number, got {parts[1]!r}") from None
        if not math.isfinite(value):
            raise InputError(path, lineno, f"log_factor: expected a finite number, got {parts[1]!r}")
        if parts[0] in factors:
            raise InputError(path, lineno, f"duplicate word {parts[0]!r}")
        factors[parts[0]] = value
    if not factors:
        raise InputError(path, None, "empty input: expected 'word<TAB>log_factor' rows")
    return meta, factors


def write_factors(stream: IO[str], meta: dict[str, str], factors: dict[str, float]) -> None:
    for key, value in meta.items():
        stream.write(f"#{key}={value}\n")
    stream.writelines(f"{w}\t{factors[w]:.8g}\n" for w in sorted(factors))
