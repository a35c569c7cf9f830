"""What every importer shares: the row it yields, number parsing, and the TSV writer."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import IO, Iterator

from asrpriv.errors import InputError

#: score columns in the order they are written
SCORE_COLUMNS = ("am_score", "lm_score", "score")

#: ln(10): SRILM and ARPA scores are log10
LN10 = math.log(10.0)


@dataclass
class Row:
    """One hypothesis: utterance id, 1-based rank, natural-log scores, words, carried values.

    ``where`` is ``(path, line)`` of the record the row came from, for error messages.
    """

    utt_id: str
    rank: int
    text: str
    scores: dict[str, float] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)
    where: tuple[str | None, int | None] = (None, None)


@dataclass
class NbestTable:
    """An importer's result: score columns it fills, carried columns, and its rows."""

    score_columns: list[str]
    rows: Iterator[Row]
    extra_columns: list[str] = field(default_factory=list)
    #: tokens dropped by :func:`write_table` (``--drop-tokens``)
    dropped: int = 0
    #: a note for stderr about what the layout did (e.g. scores it lacks)
    note: str | None = None
    #: utterances written (set by :func:`asrpriv.io.importers.import_nbest`)
    utterances: int = 0


def parse_float(text: str, path: str | None, line: int | None, what: str) -> float:
    """A finite-or-infinite float; NaN and non-numbers are :class:`InputError` at ``path:line``."""
    try:
        value = float(text)
    except ValueError:
        raise InputError(path, line, f"{what}: expected a number, got {text!r}") from None
    if math.isnan(value):
        raise InputError(path, line, f"{what}: NaN is not a score")
    return value


def format_number(value: float) -> str:
    """Shortest decimal of ``value`` rounded to 9 decimals (exact for 4-decimal inputs)."""
    out = repr(round(value, 9))
    return "0.0" if out == "-0.0" else out


def check_id(utt_id: str, path: str | None, line: int | None) -> str:
    if not utt_id or any(ch.isspace() for ch in utt_id):
        raise InputError(path, line, f"bad utterance id {utt_id!r}")
    return utt_id


def write_table(table: NbestTable, out: IO[str], drop: frozenset[str] = frozenset(),
                keep: list | None = None) -> int:
    """Write ``table`` as our N-best TSV; return the number of utterances.

    Checks while streaming: an utterance's rows are contiguous, its ranks unique, every row
    has every score column the table announced, every score is finite (FILE:LINE of the
    record otherwise). Rows are written in the order given (the TSV reader sorts each
    utterance by rank). The first row is read (and so checked by the importer) before the
    header goes out: input that is not what the importer reads fails with nothing written.
    A failure later is marked by the caller (:func:`asrpriv.io.nbest.abort_marker`).
    ``drop``: tokens removed from every text (:mod:`asrpriv.io.tokens`); their number is
    :attr:`NbestTable.dropped` afterwards. ``keep``: a list that receives each checked row
    (a :class:`Row` with the text after ``drop``), for callers that want the rows themselves.
    """
    scores = [c for c in SCORE_COLUMNS if c in table.score_columns]
    columns = ["utt_id", "rank", *scores, "text", *table.extra_columns]
    rows = iter(table.rows)
    first = next(rows, None)
    if first is None:
        raise InputError(None, None, "no hypotheses found")
    out.write("\t".join(columns) + "\n")
    seen: set[str] = set()
    current: str | None = None
    ranks: set[int] = set()
    for row in itertools.chain([first], rows):
        path, line = row.where
        if row.utt_id != current:
            if row.utt_id in seen:
                raise InputError(path, line, f"utterance {row.utt_id!r} appears again after "
                                             "other utterances (its hypotheses must be together)")
            seen.add(row.utt_id)
            current, ranks = row.utt_id, set()
        if row.rank in ranks:
            raise InputError(path, line, f"duplicate rank {row.rank} in utterance {row.utt_id!r}")
        ranks.add(row.rank)
        values = [row.utt_id, str(row.rank)]
        for c in scores:
            if c not in row.scores:
                raise InputError(path, line, f"no {c} for utterance {row.utt_id!r} rank {row.rank}")
            if not math.isfinite(row.scores[c]):  # every later step refuses nan/inf scores
                raise InputError(path, line, f"{c} {row.scores[c]} for utterance {row.utt_id!r} "
                                             f"rank {row.rank}: expected a finite score")
            values.append(format_number(row.scores[c]))
        words = row.text.split()
        if drop:
            kept = [w for w in words if w not in drop]
            table.dropped += len(words) - len(kept)
            words = kept
        values.append(" ".join(words))
        values.extend(_clean(row.extra.get(c, ""), path, line, c) for c in table.extra_columns)
        out.write("\t".join(values) + "\n")
        if keep is not None:
            keep.append(Row(row.utt_id, row.rank, " ".join(words),
                            {c: row.scores[c] for c in scores},
                            {c: row.extra.get(c, "") for c in table.extra_columns}, row.where))
    if not seen:
        raise InputError(None, None, "no hypotheses found")
    return len(seen)


def _clean(value: str, path, line, column: str) -> str:
    if "\t" in value or "\n" in value:
        raise InputError(path, line, f"{column}: a value with a tab or newline cannot be written")
    return value
