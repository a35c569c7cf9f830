"""Entity spans in the TSV format of ``examples/data/ami/ne/``.

Header ``utt_id start end class type text``; ``start``/``end`` are 0-based word positions in
the utterance's words (the Kaldi text line without its id), ``end`` exclusive; ``text`` is
those words joined by single spaces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Iterable

from asrpriv.errors import InputError
from asrpriv.io.lines import iter_lines

HEADER = ("utt_id", "start", "end", "class", "type", "text")


@dataclass(frozen=True)
class Span:
    """One entity occurrence: words ``[start, end)`` of utterance ``utt``."""

    utt: str
    start: int
    end: int
    cls: str
    type: str
    text: str
    lineno: int = 0  # where it was read (0 = made here)

    def words(self) -> list[str]:
        return self.text.split(" ")


def read_spans(path: str) -> dict[str, list[Span]]:
    """Spans per utterance, sorted by position; overlapping spans are an InputError.

    Checks every row: 6 tab-separated columns, integer positions ``0 <= start < end``, a
    ``text`` of exactly ``end - start`` words. Whether ``text`` matches the utterance's
    words is checked where the text is read (:mod:`.transform`).

    An empty file (not even the header line) is an InputError: a failed entity tagger leaves
    one, and the text would pass through in clear. Only the header means "no entities".
    """
    by_utt: dict[str, list[Span]] = {}
    seen_header = False
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        cols = line.split("\t")
        if not seen_header:
            seen_header = True
            if tuple(c.strip() for c in cols) == HEADER:
                continue
        if len(cols) != 6:
            raise InputError(path, lineno, f"expected 6 tab-separated columns "
                                           f"({' '.join(HEADER)}), got {len(cols)}")
        utt, start_s, end_s, cls, typ, text = cols
        try:
            start, end = int(start_s), int(end_s)
        except ValueError:
            raise InputError(path, lineno, f"start/end must be integers, got {start_s!r} {end_s!r}") from None
        if not utt or not cls:
            raise InputError(path, lineno, "empty utt_id or class")
        if start < 0 or end <= start:
            raise InputError(path, lineno, f"need 0 <= start < end, got {start} {end}")
        words = text.split()
        if len(words) != end - start:
            raise InputError(path, lineno, f"text has {len(words)} words for positions "
                                           f"{start}..{end} ({end - start} words)")
        by_utt.setdefault(utt, []).append(Span(utt, start, end, cls, typ, " ".join(words), lineno))
    if not seen_header:
        raise InputError(path, None, "empty input: expected entity spans (a file with only the "
                                     f"header line, {' '.join(HEADER)}, means no entities)")
    for spans in by_utt.values():
        spans.sort(key=lambda s: (s.start, s.end))
        for a, b in zip(spans, spans[1:]):
            if b.start < a.end:
                late = max(a, b, key=lambda s: s.lineno)
                other = a if late is b else b
                raise InputError(path, late.lineno, f"span {late.start}..{late.end} of {late.utt} "
                                                    f"overlaps span {other.start}..{other.end} "
                                                    f"(line {other.lineno})")
    return by_utt


def read_span_files(paths: str | Iterable[str]) -> dict[str, list[Span]]:
    """:func:`read_spans` of one file or of several (the spans of a text that is their texts
    one after the other, e.g. ``train-ngram --spans A --spans B``): the same dict as
    :func:`read_spans` of the files concatenated (one header). An utterance with spans in
    two files is an InputError (the texts are distinct utterances)."""
    paths = [paths] if isinstance(paths, str) else list(paths)
    merged: dict[str, list[Span]] = {}
    first: dict[str, str] = {}
    for path in paths:
        for utt, spans in read_spans(path).items():
            if utt in merged:
                raise InputError(path, spans[0].lineno, f"utterance {utt} has spans in "
                                                        f"{first[utt]} too")
            merged[utt], first[utt] = spans, path
    return merged


def write_spans(out: IO[str], spans: Iterable[Span], header: bool = True) -> None:
    """Write spans as TSV rows (with the header line first unless ``header`` is False)."""
    if header:
        out.write("\t".join(HEADER) + "\n")
    for s in spans:
        out.write(f"{s.utt}\t{s.start}\t{s.end}\t{s.cls}\t{s.type}\t{s.text}\n")
