"""N-best TSV: a header row naming the columns, then one hypothesis per row.

Rows of one utterance are contiguous. Required columns: ``utt_id``, ``text``. Known optional
columns are validated: ``rank`` (int >= 1, 1 = best; else file order), ``am_score``,
``lm_score``, ``score`` (natural-log floats), ``confidence`` (one float per word of ``text``),
``client``. Unknown columns are carried through unchanged. Reading streams one utterance at
a time, so memory does not grow with the file.
"""

from __future__ import annotations

import contextlib
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

    def __init__(self, path: str | None, lines: Iterator[tuple[int, str]] | None = None,
                 drop: frozenset[str] | set[str] = frozenset()) -> None:
        # ``lines``: an already-open ``iter_lines(path)`` (e.g. after peeking at stdin's first line)
        # ``drop``: tokens removed from every hypothesis (asrpriv.io.tokens; --drop-tokens), from
        # its words, its text column and its confidence column alike
        self.path = path
        self.drop = frozenset(drop)
        self.dropped = 0
        self._lines = lines if lines is not None else iter_lines(path)
        try:
            lineno, header = next(self._lines)
        except StopIteration:
            raise InputError(path, None, "empty input: expected an N-best TSV header "
                                         "with columns utt_id and text") from None
        check_not_aborted(path, lineno, header)
        self.columns = header.split("\t")
        if len(set(self.columns)) != len(self.columns):
            raise InputError(path, lineno, "duplicate column names in the header")
        missing = [c for c in REQUIRED if c not in self.columns]
        if missing:
            raise InputError(path, lineno, f"header lacks required column(s) {', '.join(missing)} "
                                           f"(got: {' '.join(self.columns) or 'nothing'})"
                                           + header_hint(header))
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
            if line.startswith(ABORT_MARKER):
                check_not_aborted(path, lineno, line)
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
            if self.drop and any(w in self.drop for w in words):
                keep = [k for k, w in enumerate(words) if w not in self.drop]
                self.dropped += len(words) - len(keep)
                words = [words[k] for k in keep]
                values[i_text] = " ".join(words)
                if confidence is not None:
                    confidence = [confidence[k] for k in keep]
                    values[i_conf] = " ".join(values[i_conf].split()[k] for k in keep)
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


#: first characters of the line a streaming step writes to standard output when it fails after
#: its header went out (asrpriv.io.nbest.abort_marker): a reader downstream refuses the stream
ABORT_MARKER = "#asrpriv-aborted"


def check_not_aborted(path: str | None, lineno: int, line: str) -> None:
    """Refuse a stream whose writer failed part-way (its last line is :data:`ABORT_MARKER`)."""
    if line.startswith(ABORT_MARKER):
        reason = line[len(ABORT_MARKER):].strip(" :\t\n")
        raise InputError(path, lineno, "the step that wrote this stream failed part-way, so it is "
                                       "incomplete" + (f" ({reason})" if reason else "")
                                       + "; nothing of it was used as a result")


def header_hint(header: str) -> str:
    """A pointer to the right tool when a header is not an N-best TSV header."""
    if "," in header and "\t" not in header:
        return ("; a CSV? convert it with 'asrpriv import-nbest --from tsv' (it sniffs the "
                "delimiter; --map renames columns)")
    if "\t" not in header:
        return ("; plain text? give --text (count-unigrams, finetune-lm), or convert a "
                "recognizer's N-best output with 'asrpriv import-nbest'")
    return "; rename columns with 'asrpriv import-nbest --from tsv --map SRC=OURS,...'"


class _Tracked:
    """An output stream that remembers whether anything was written to it."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.started = False

    def write(self, text: str) -> int:
        if text:
            self.started = True
        return self.out.write(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.out.flush()


@contextlib.contextmanager
def abort_marker(out: IO[str], to_stdout: bool) -> Iterator[IO[str]]:
    """Yield ``out``; on failure after output began on a stream, end it with :data:`ABORT_MARKER`.

    A pipe (``import-nbest ... | rescore-nbest``) cannot be un-written: the consumer has already
    read the first lines. Ending the stream with a line that no table has, and that
    :class:`NbestReader` refuses, makes the consumer fail too instead of producing a
    plausible result from part of the input. Nothing is added when the step failed before
    writing anything (its stdout stays empty), nor for a file given with ``-o`` (atomic: it
    is not created; ``to_stdout`` False).
    """
    tracked = _Tracked(out)
    try:
        yield tracked
    except BaseException as err:
        if to_stdout and tracked.started and not isinstance(err, BrokenPipeError):
            from asrpriv.errors import one_line

            reason = err.format_message() if hasattr(err, "format_message") else type(err).__name__
            try:
                out.write(f"\n{ABORT_MARKER}: {one_line(str(reason))}\n")
                out.flush()
            except (OSError, ValueError):
                pass
        raise


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
