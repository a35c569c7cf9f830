"""icefall (k2) decoding results: ``recogs-{test_set}-{method}.txt``.

icefall's ``decode.py`` scripts call ``icefall.utils.store_transcripts``, which writes two
lines per cut::

    {cut_id}:<TAB>ref={ref}
    {cut_id}:<TAB>hyp={hyp}

where ``ref``/``hyp`` are Python reprs of word lists (``['a', 'b']``) or, in some recipes,
plain strings. Whatever the decoding method (``nbest``, ``nbest-rescoring``,
``modified_beam_search``...), these files hold the chosen hypothesis only: icefall keeps no
scores and no N-best in them, so the import is a 1-best list (rank 1, no score column).
``ref=`` lines can be written as a Kaldi text with ``ref_out`` (score them with score-wer).
Other lines (``timestamp_ref=``...) are skipped.
"""

from __future__ import annotations

import ast
from typing import IO, Iterator

from asrpriv.errors import InputError
from asrpriv.io.importers.common import NbestTable, Row, check_id
from asrpriv.io.lines import iter_lines


def _words(value: str, path: str, lineno: int) -> str:
    value = value.strip()
    if value.startswith("["):
        try:
            words = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise InputError(path, lineno, "expected a Python list of words after '='") from None
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            raise InputError(path, lineno, "expected a list of strings after '='")
        return " ".join(words)
    return value


def parse(path: str) -> Iterator[tuple[int, str, str, str]]:
    """``(line, cut_id, 'ref' or 'hyp', text)`` of a recogs file."""
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        head, sep, rest = line.partition(":\t")
        if not sep:
            raise InputError(path, lineno, "expected 'CUT_ID:<TAB>ref=[...]' or 'CUT_ID:<TAB>hyp=[...]'")
        kind, eq, value = rest.partition("=")
        if not eq:
            raise InputError(path, lineno, "expected ref=... or hyp=... after the tab")
        if kind not in ("ref", "hyp"):
            continue
        yield lineno, check_id(head, path, lineno), kind, _words(value, path, lineno)


def read(path: str, ref_out: IO[str] | None = None, **_ignored) -> NbestTable:
    return NbestTable([], _rows(path, ref_out))


def _rows(path: str, ref_out) -> Iterator[Row]:
    seen: dict[tuple[str, str], int] = {}
    for lineno, cut, kind, text in parse(path):
        if (cut, kind) in seen:
            raise InputError(path, lineno, f"second {kind}= line for {cut!r} (first on line {seen[cut, kind]})")
        seen[cut, kind] = lineno
        if kind == "ref":
            if ref_out is not None:
                ref_out.write(f"{cut} {text}".rstrip() + "\n")
            continue
        yield Row(cut, 1, text, where=(path, lineno))
