"""Tagging entities by longest match against a lexicon of entity strings per class.

Lexicon (and ``--pool``) file: one entity per line, ``CLASS<TAB>word word ...``; blank
lines and lines starting with ``#`` are skipped. A string listed under two classes keeps
the first. Tagging scans the words left to right and, at each position, takes the longest
lexicon string that starts there (then continues after it); no match = one word skipped.
"""

from __future__ import annotations

from asrpriv.errors import InputError
from asrpriv.io.lines import iter_lines


def read_class_strings(path: str) -> list[tuple[str, str]]:
    """``(class, string)`` pairs in file order, duplicates (same class and string) dropped."""
    out: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for lineno, line in iter_lines(path):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 2 or not cols[0].strip() or not cols[1].split():
            raise InputError(path, lineno, "expected CLASS<TAB>entity words")
        pair = (cols[0].strip(), " ".join(cols[1].split()))
        if pair not in seen:
            seen.add(pair)
            out.append(pair)
    if not out:
        raise InputError(path, None, "empty: expected CLASS<TAB>entity lines")
    return out


class LongestMatchTagger:
    """Finds lexicon entities in a word list (longest match, left to right)."""

    def __init__(self, entries: list[tuple[str, str]]) -> None:
        self.table: dict[tuple[str, ...], str] = {}
        self.max_len: dict[str, int] = {}  # first word -> longest entry starting with it
        for cls, text in entries:
            key = tuple(text.split(" "))
            self.table.setdefault(key, cls)
            self.max_len[key[0]] = max(self.max_len.get(key[0], 0), len(key))

    def tag(self, words: list[str]) -> list[tuple[int, int, str]]:
        """``(start, end, class)`` of the entities found, in order, not overlapping."""
        found = []
        i, n = 0, len(words)
        max_len, table = self.max_len, self.table
        while i < n:
            longest = max_len.get(words[i])
            if longest:
                for length in range(min(longest, n - i), 0, -1):
                    cls = table.get(tuple(words[i:i + length]))
                    if cls is not None:
                        found.append((i, i + length, cls))
                        i += length
                        break
                else:
                    i += 1
            else:
                i += 1
        return found
