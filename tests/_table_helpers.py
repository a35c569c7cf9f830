"""Checks that the recipes' results tables state their uncertainty (issue 29's slow tests).

Every table row must carry an interval (a WER written ``24.52 [22.18, 26.79]``), and every DP
row must report at least ``min_draws`` noise draws (``mean of 3 draws``, ``3 (27.12-27.26)`` in a
draws column, ``3 draws``). The helpers return what is missing, so a test can print it.
"""

from __future__ import annotations

import re

INTERVAL = re.compile(r"\d+(?:\.\d+)? \[[-+]?\d+(?:\.\d+)?, [-+]?\d+(?:\.\d+)?\]")
DRAWS = re.compile(r"(?:mean of (\d+)(?: noise)? draws?|\b(\d+)(?: noise)? draws\b|\| (\d+) \(\d)")


def table_rows(markdown: str) -> list[str]:
    """The body rows of every Markdown table: not the header (followed by |---|) nor the rule."""
    lines = markdown.splitlines()
    rows = []
    for i, line in enumerate(lines):
        if not line.startswith("|") or set(line.replace("|", "").strip()) <= set("-: "):
            continue
        if i + 1 < len(lines) and lines[i + 1].startswith("|") and "---" in lines[i + 1]:
            continue                                   # a header row
        rows.append(line)
    return rows


def section_rows(markdown: str, heading: str) -> list[list[str]]:
    """The body rows of the first Markdown table after HEADING, as lists of cells."""
    lines = markdown.split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    body = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        body.append([c.strip() for c in line.strip("|").split("|")])
    return body


def rows_without_interval(markdown: str) -> list[str]:
    return [row for row in table_rows(markdown) if not INTERVAL.search(row)]


def is_dp_row(row: str, dp_words: tuple[str, ...] = ("-DP", "DP (", "DP-", "DP,")) -> bool:
    """A row of a private system: its first two cells (the label, or the label and the data it was
    adapted on) name DP, and the row is not the 'no DP' / 'non-private' reference (said in its
    first three cells: a DP row's comparison cell names the non-private row it is compared with)."""
    cells = row.strip("|").split("|")
    label = " ".join(cells[:2])
    return any(w in label for w in dp_words) and "no DP" not in label and "non-private" not in " ".join(cells[:3])


def draws(row: str) -> int | None:
    """The number of noise draws a row reports, or None when it says none."""
    found = [int(g) for m in DRAWS.finditer(row) for g in m.groups() if g]
    return max(found) if found else None


def dp_rows_with_few_draws(markdown: str, min_draws: int = 3, **kw) -> list[str]:
    return [row for row in table_rows(markdown) if is_dp_row(row, **kw) and (draws(row) or 0) < min_draws]
