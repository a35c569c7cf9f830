"""The labels of audit items: a TSV with header ``item<TAB>label...`` (one row per item)."""

from __future__ import annotations

from asrpriv.errors import InputError
from asrpriv.io.lines import iter_lines


def read_labels(path: str) -> tuple[list[str], dict[str, list[str]]]:
    """A labels TSV with header ``item<TAB>label...`` -> (column names, item -> values)."""
    columns: list[str] | None = None
    rows: dict[str, list[str]] = {}
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        parts = line.split("\t")
        if columns is None:
            if parts[0] != "item" or len(parts) < 2:
                raise InputError(path, lineno, "expected a header 'item<TAB>label...'")
            columns = parts[1:]
            if len(set(columns)) != len(columns) or any(not c for c in columns):
                raise InputError(path, lineno, "label column names must be distinct and non-empty")
            continue
        if len(parts) != len(columns) + 1:
            raise InputError(path, lineno, f"expected {len(columns) + 1} tab-separated fields, "
                                           f"got {len(parts)}")
        if parts[0] in rows:
            raise InputError(path, lineno, f"duplicate item {parts[0]!r}")
        rows[parts[0]] = parts[1:]
    if columns is None:
        raise InputError(path, None, "empty labels file")
    return columns, rows
