"""Membership files of class LMs: SRILM's ``-classes`` format (classes-format(5)), one line per
member, ``CLASS p word`` (p = P(word | CLASS), a probability, not a log; no p = uniform over the
class's words); single-word expansions only. The class LM itself: :mod:`asrpriv.ngram.classes`.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import IO, Sequence

from asrpriv.errors import InputError


def class_token(cls: str) -> str:
    """The token of class ``cls`` in the class n-gram: ``<PER>`` (as ``sanitize --tag`` writes)."""
    return cls if cls.startswith("<") and cls.endswith(">") else f"<{cls}>"


@dataclass
class ClassMap:
    """Word -> (class token, P(word | class)); other words map to themselves."""

    member: dict[str, tuple[str, float]]

    def classes(self) -> dict[str, list[tuple[str, float]]]:
        out: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for w, (c, p) in self.member.items():
            out[c].append((w, p))
        return dict(out)

    def map_words(self, words: Sequence[str]) -> list[str]:
        member = self.member
        return [member[w][0] if w in member else w for w in words]

    def log10_membership(self, words: Sequence[str]) -> list[float]:
        """log10 P(w | c(w)) per word (0 for non-members)."""
        member = self.member
        return [math.log10(member[w][1]) if w in member else 0.0 for w in words]

    def write(self, out: IO[str]) -> None:
        """SRILM classes format: ``CLASS p word`` lines, classes and words sorted."""
        for c, rows in sorted(self.classes().items()):
            for w, p in sorted(rows):
                out.write(f"{c} {p:.10g} {w}\n")


def read_class_map(path: str) -> ClassMap:
    """Read a membership file (``CLASS [p] word``; no p = uniform over the class's words)."""
    from asrpriv.io.lines import iter_lines

    rows: list[tuple[int, str, float | None, str]] = []
    for lineno, line in iter_lines(path):
        fields = line.split()
        if not fields:
            continue
        p: float | None = None
        if len(fields) == 3:
            try:
                p = float(fields[1])
            except ValueError:
                raise InputError(path, lineno, f"expected CLASS p word; {fields[1]!r} is not a "
                                               "probability (multi-word expansions are not supported)") from None
            if not 0.0 < p <= 1.0:
                raise InputError(path, lineno, f"P(word | class) = {p} is not in (0, 1]")
            word = fields[2]
        elif len(fields) == 2:
            word = fields[1]
        else:
            raise InputError(path, lineno, "expected CLASS p word (single-word expansions only)")
        rows.append((lineno, fields[0], p, word))
    if not rows:
        raise InputError(path, None, "empty: expected CLASS p word lines")
    member: dict[str, tuple[str, float]] = {}
    sizes = Counter(c for _l, c, _p, _w in rows)
    totals: Counter = Counter()
    for lineno, c, p, w in rows:
        if w in member:
            raise InputError(path, lineno, f"word {w!r} is in two classes ({member[w][0]}, {c}); "
                                           "classes here are deterministic")
        member[w] = (c, p if p is not None else 1.0 / sizes[c])
        totals[c] += member[w][1]
    for c, total in totals.items():
        if abs(total - 1.0) > 1e-6:
            raise InputError(path, None, f"class {c}: P(word | class) sums to {total:.8f}, not 1")
    return ClassMap(member)
