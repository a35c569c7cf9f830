"""Kaldi-style tables: ``text`` (``utt_id word word ...``) and two-column maps (``utt2spk``)."""

from __future__ import annotations

from typing import Iterator

from asrpriv.errors import InputError
from asrpriv.io.lines import iter_lines


def iter_text(path: str | None, lines=None) -> Iterator[tuple[int, str, list[str]]]:
    """Yield ``(line_number, utt_id, words)`` of a Kaldi text file; words may be empty.

    A duplicate utterance id is an InputError (it would be counted as two utterances, e.g.
    twice the contribution bound of one unit). ``lines``: an already-open ``iter_lines(path)``.
    """
    seen: set[str] = set()
    for lineno, line in (lines if lines is not None else iter_lines(path)):
        if not line.strip():
            continue  # blank lines carry nothing
        if line[0].isspace():
            raise InputError(path, lineno, "line without an utterance id (it starts with white space)")
        parts = line.split()
        if parts[0] in seen:
            raise InputError(path, lineno, f"duplicate utterance id {parts[0]!r}")
        seen.add(parts[0])
        yield lineno, parts[0], parts[1:]


def read_text(path: str | None) -> dict[str, list[str]]:
    """Read a Kaldi text file into ``{utt_id: words}``, in file order; duplicate ids are errors."""
    table: dict[str, list[str]] = {}
    for lineno, utt_id, words in iter_text(path):
        if utt_id in table:
            raise InputError(path, lineno, f"duplicate utterance id {utt_id!r}")
        table[utt_id] = words
    return table


def read_map(path: str | None, what: str = "value") -> dict[str, str]:
    """Read a two-column map (``utt2spk``, ``utt2client``): ``key value`` per line."""
    table: dict[str, str] = {}
    for lineno, line in iter_lines(path):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2:
            raise InputError(path, lineno, f"expected 2 columns (utt_id {what}), got {len(parts)}")
        if parts[0] in table:
            raise InputError(path, lineno, f"duplicate key {parts[0]!r}")
        table[parts[0]] = parts[1]
    return table
