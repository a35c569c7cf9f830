"""N-best TSV: a header row naming the columns, then one hypothesis per row.

Rows of one utterance are contiguous. Required columns: ``utt_id``, ``text``. Known optional
columns are validated: ``rank`` (int >= 1, 1 = best; else file order), ``am_score``,
``lm_score``, ``score`` (natural-log floats), ``confidence`` (one float per word of ``text``),
``client``. Unknown columns are carried through unchanged. Reading streams one utterance at
a time, so memory does not grow with the file.
"""

from __future__ import annotations

import math
from typing import IO, Iterable, Iterator, Sequence

from asrpriv.errors import InputError
from asrpriv.io.lines import iter_lines

REQUIRED = ("utt_id", "text")
FLOAT_COLUMNS = ("am_score", "lm_score", "score")
#: the largest accepted rank (a 400-digit rank would overflow the rank kernel)
MAX_RANK = 10 ** 9


class Hypothesis:
    """One row: its raw column values, its words, rank and source line."""

    __slots__ = ("values", "words", "rank", "lineno", "confidence")

    def __init__(self, values: list[str], words: list[str], rank: int, lineno: int,
                 confidence: list[float] | None) -> None:
        self.values = values
        self.words = words
        self.rank = rank
        self.lineno = lineno
        self.confidence = confidence


class Utterance:
    """The hypotheses of one utterance, sorted by rank (best first)."""

    __slots__ = ("utt_id", "hyps", "client")

    def __init__(self, utt_id: str, hyps: list[Hypothesis], client: str | None) -> None:
        self.utt_id = utt_id
        self.hyps = hyps
        self.client = client


class NbestReader:
    """Stream an N-best TSV utterance by utterance.

    Args:
        path: file name, or ``-``/None for stdin (``.gz`` is read transparently).

    Attributes:
        columns: the header's column names, in file order.
        index: column name -> position.
    """

    def __init__(self, path: str | None, lines: Iterator[tuple[int, str]] | None = None) -> None:
        # ``lines``: an already-open ``iter_lines(path)`` (e.g. after peeking at stdin's first line)
        self.path = path
        self._lines = lines if lines is not None else iter_lines(path)
        try:
            lineno, header = next(self._lines)
        except StopIteration:
            raise InputError(path, None, "empty input: expected an N-best TSV header "
                                         "with columns utt_id and text") from None
        self.columns = header.split("\t")
        if len(set(self.columns)) != len(self.columns):
            raise InputError(path, lineno, "duplicate column names in the header")
        missing = [c for c in REQUIRED if c not in self.columns]
        if missing:
            raise InputError(path, lineno, f"header lacks required column(s) {', '.join(missing)} "
                                           f"(got: {' '.join(self.columns) or 'nothing'})")
        self.index = {name: i for i, name in enumerate(self.columns)}
        self.has_rank = "rank" in self.index

    def column(self, hyp: Hypothesis, name: str) -> str:
        return hyp.values[self.index[name]]

    def float_column(self, hyp: Hypothesis, name: str) -> float:
        return float(hyp.values[self.index[name]])

    def __iter__(self) -> Iterator[Utterance]:
        path = self.path
        ncol = len(self.columns)
        i_utt, i_text = self.index["utt_id"], self.index["text"]
        i_rank = self.index.get("rank")
        i_conf = self.index.get("confidence")
        i_client = self.index.get("client")
        floats = [(name, self.index[name]) for name in FLOAT_COLUMNS if name in self.index]
        seen: set[str] = set()
        current: str | None = None
        hyps: list[Hypothesis] = []
        client: str | None = None
        for lineno, line in self._lines:
            if not line.strip():
                continue
            values = line.split("\t")
            if len(values) != ncol:
                raise InputError(path, lineno, f"expected {ncol} tab-separated columns, got {len(values)}")
            utt_id = values[i_utt]
            if not utt_id or utt_id != utt_id.strip() or " " in utt_id:
                raise InputError(path, lineno, f"bad utt_id {utt_id!r}")
            for name, i in floats:
                try:
                    value = float(values[i])
                except ValueError:
                    raise InputError(path, lineno, f"{name}: expected a number, got {values[i]!r}") from None
                if not math.isfinite(value):
                    raise InputError(path, lineno, f"{name}: expected a finite score, got {values[i]!r}")
            words = values[i_text].split()
            confidence = None
            if i_conf is not None:
                confidence = _parse_confidence(values[i_conf], len(words), path, lineno)
            if utt_id != current:
                if current is not None:
                    yield self._finish(current, hyps, client)
                if utt_id in seen:
                    raise InputError(path, lineno, f"utterance {utt_id!r} is not contiguous "
                                                   "(its rows must be together)")
                seen.add(utt_id)
                current, hyps = utt_id, []
                client = values[i_client] if i_client is not None else None
            if i_rank is not None:
                raw_rank = values[i_rank]
                try:
                    rank = int(raw_rank)  # at most 4300 digits (Python's limit), else ValueError
                except ValueError:
                    raise InputError(path, lineno, f"rank: expected an integer, got {raw_rank[:40]!r}") from None
                if rank < 1:
                    raise InputError(path, lineno, f"rank: expected >= 1, got {rank}")
                if rank > MAX_RANK:
                    raise InputError(path, lineno, f"rank: expected <= {MAX_RANK}, got {raw_rank[:40]!r}")
            else:
                rank = len(hyps) + 1
            if i_client is not None and values[i_client] != client:
                raise InputError(path, lineno, f"client changes within utterance {utt_id!r}")
            hyps.append(Hypothesis(values, words, rank, lineno, confidence))
        if current is not None:
            yield self._finish(current, hyps, client)

    def _finish(self, utt_id: str, hyps: list[Hypothesis], client: str | None) -> Utterance:
        if self.has_rank:
            hyps.sort(key=lambda h: h.rank)
            for a, b in zip(hyps, hyps[1:]):
                if a.rank == b.rank:
                    raise InputError(self.path, b.lineno, f"duplicate rank {b.rank} in utterance {utt_id!r}")
        return Utterance(utt_id, hyps, client)


def _parse_confidence(field: str, n_words: int, path: str | None, lineno: int) -> list[float]:
    try:
        conf = [float(x) for x in field.split()]
    except ValueError:
        raise InputError(path, lineno, f"confidence: expected floats, got {field!r}") from None
    if len(conf) != n_words:
        raise InputError(path, lineno, f"confidence: {len(conf)} values for {n_words} words")
    if any(not (0.0 <= c <= 1.0) for c in conf):
        raise InputError(path, lineno, "confidence: values must lie in [0, 1]")
    return conf


def read_nbest(path: str | None) -> tuple[NbestReader, Iterator[Utterance]]:
    """Open an N-best TSV: the reader (columns) and its utterance iterator."""
    reader = NbestReader(path)
    return reader, iter(reader)


def write_header(stream: IO[str], columns: Sequence[str]) -> None:
    stream.write("\t".join(columns) + "\n")


def write_rows(stream: IO[str], rows: Iterable[Sequence[str]]) -> None:
    stream.writelines("\t".join(row) + "\n" for row in rows)


def format_score(value: float) -> str:
    """Scores in TSV outputs: 4 decimals, as in the bundled data."""
    return f"{value:.4f}"
