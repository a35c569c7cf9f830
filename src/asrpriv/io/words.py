"""Escaping words in the first column of counts and factors files (formats ``.../2``).

A line starting with ``#`` is metadata, so a word that itself starts with ``#`` (or with the
escape character ``\\``) is written with one leading backslash: ``#unit=x`` -> ``\\#unit=x``,
``\\w`` -> ``\\\\w``. Nothing else is escaped. A word is any non-empty string without white
space (what ``str.split`` yields), so with this rule every word round-trips:
``unescape(escape(w)) == w``, and every accepted escaped form is what ``escape`` writes.
"""

from __future__ import annotations


def is_word(word: str) -> bool:
    """A word: non-empty, no white space of any kind (``str.split`` semantics)."""
    return bool(word) and word.split() == [word]


def escape(word: str) -> str:
    return "\\" + word if word[:1] in ("#", "\\") else word


def unescape(field: str) -> str | None:
    """The word written as ``field``, or None if ``field`` is not a valid escaped word."""
    if field[:1] == "\\":
        word = field[1:]
        return word if word[:1] in ("#", "\\") else None
    return field if field[:1] != "#" else None
