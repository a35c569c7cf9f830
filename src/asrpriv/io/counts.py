"""Counts files: ``#key=value`` metadata lines, then ``word<TAB>count`` rows (float counts).

The metadata records what a privacy mechanism needs to be calibrated (see
:mod:`asrpriv.unigram.meta`): the adjacency unit, its L1 contribution bound, the number of
units, and the privacy ledger of noise already added.
"""

from __future__ import annotations

import math
from typing import IO

from asrpriv.errors import InputError
from asrpriv.io.lines import iter_lines


def read_counts(path: str | None, allow_empty: bool = False) -> tuple[dict[str, str], dict[str, float]]:
    """Read a counts file: ``(metadata, {word: count})``.

    Raises:
        InputError: a malformed line, a duplicate word, a negative or non-finite count, or an
            empty file (unless ``allow_empty``).
    """
    meta: dict[str, str] = {}
    counts: dict[str, float] = {}
    seen_header = False
    for lineno, line in iter_lines(path):
        if line.startswith("#"):
            if counts:
                raise InputError(path, lineno, "metadata line after count rows")
            body = line[1:].strip()
            if not body:
                continue
            key, sep, value = body.partition("=")
            if not sep or not key.strip() or " " in key.strip():
                raise InputError(path, lineno, f"expected '#key=value' metadata, got {line!r}")
            meta[key.strip()] = value.strip()
            seen_header = True
            continue
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2:
            raise InputError(path, lineno, f"expected 'word<TAB>count', got {len(parts)} tab-separated fields")
        word, raw = parts
        if not word or word != word.strip() or " " in word:
            raise InputError(path, lineno, f"bad word {word!r}")
        try:
            value = float(raw)
        except ValueError:
            raise InputError(path, lineno, f"count: expected a number, got {raw!r}") from None
        if not math.isfinite(value) or (value < 0 and meta.get("noise", "none") == "none"):
            # negative counts exist only as unclamped noisy releases (add-noise --no-clamp)
            raise InputError(path, lineno, f"count: expected a finite number >= 0, got {raw!r}")
        if word in counts:
            raise InputError(path, lineno, f"duplicate word {word!r}")
        counts[word] = value
    if not counts and not seen_header and not allow_empty:
        raise InputError(path, None, "empty input: expected a counts file ('word<TAB>count' rows)")
    return meta, counts


def write_counts(stream: IO[str], meta: dict[str, str], counts: dict[str, float],
                 sort: bool = True) -> None:
    """Write metadata then rows, sorted by word (a deterministic, diff-able order).

    Counts are written exactly (shortest round-trip ``repr``), so reading back gives the
    same floats and grid-valued sums stay exact.
    """
    for key, value in meta.items():
        stream.write(f"#{key}={value}\n")
    words = sorted(counts) if sort else list(counts)
    stream.writelines(f"{w}\t{_fmt(counts[w])}\n" for w in words)


def _fmt(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def read_wordlist(path: str) -> list[str]:
    """A public vocabulary: a word list (one word per line) or a counts file (its words).

    Lines starting with ``#`` are metadata/comments; only the first column is used.
    """
    words: list[str] = []
    seen: set[str] = set()
    for lineno, line in iter_lines(path):
        if line.startswith("#") or not line.strip():
            continue
        first = line.split("\t")[0].split()
        if not first:
            raise InputError(path, lineno, "expected a word at the start of the line")
        word = first[0]
        if word in seen:
            raise InputError(path, lineno, f"duplicate word {word!r} in vocabulary")
        seen.add(word)
        words.append(word)
    if not words:
        raise InputError(path, None, "empty vocabulary")
    return words
