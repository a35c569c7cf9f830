"""Selections from the house text files: N-best TSVs and Kaldi text (``select-nbest``,
``select-text``).

What a batch job needs between two steps -- the clients of an N-best list, the rows of some
clients, each utterance's best hypothesis, the references of the utterances of a list, a
line sample of a corpus of about N words, its vocabulary -- done once here, so that recipes
do not parse these files themselves (columns are found by name, never by position).

Line numbers are 1-based and count every line (blank ones too), as ``awk``'s ``NR``; a
"word" of Kaldi text is every white-space field after the utterance id.
"""

from __future__ import annotations

import math
import re
from typing import IO, Iterable, Iterator

from asrpriv.errors import AsrprivError, InputError
from asrpriv.io.lines import iter_lines
from asrpriv.io.nbest import NbestReader, write_header, write_rows

# ---------------------------------------------------------------------------- N-best TSV


def clients_of(path: str) -> list[str]:
    """The distinct values of the ``client`` column, sorted (code-point order)."""
    reader = NbestReader(path)
    if "client" not in reader.index:
        raise InputError(path, 1, "no 'client' column")
    return sorted({utt.client for utt in reader})


def every_kth(items: list[str], k: int, others: bool = False) -> list[str]:
    """Items 1, k+1, 2k+1, ... (1-based), or with ``others`` every item but those."""
    if k < 1:
        raise AsrprivError(f"--every must be >= 1, got {k}")
    return [x for i, x in enumerate(items) if (i % k == 0) != others]


def select_utterances(path: str, clients: set[str] | None = None,
                      exclude: set[str] = frozenset(), max_per_client: int | None = None,
                      ) -> tuple[NbestReader, Iterator]:
    """The N-best utterances of ``path`` of the kept clients (all when ``clients`` is None,
    minus ``exclude``), the first ``max_per_client`` of each client (file order)."""
    reader = NbestReader(path)
    if (clients is not None or exclude or max_per_client) and "client" not in reader.index:
        raise InputError(path, 1, "no 'client' column: cannot select by client")

    def utterances():
        seen: dict[str, int] = {}
        for utt in reader:
            if clients is not None or exclude or max_per_client:
                if (clients is not None and utt.client not in clients) or utt.client in exclude:
                    continue
                n = seen[utt.client] = seen.get(utt.client, 0) + 1
                if max_per_client and n > max_per_client:
                    continue
            yield utt

    return reader, utterances()


def write_nbest(reader: NbestReader, utterances: Iterable, out: IO[str],
                top: int | None = None) -> int:
    """Write the header and the rows of ``utterances`` (best ``top`` of each by rank); returns
    the number of utterances."""
    write_header(out, reader.columns)
    n = 0
    for utt in utterances:
        write_rows(out, (h.values for h in (utt.hyps[:top] if top else utt.hyps)))
        n += 1
    return n


def best_lines(reader: NbestReader, utterances: Iterable) -> Iterator[str]:
    """Kaldi text lines (``utt_id text``) of each utterance's best hypothesis (rank 1, else
    the first row)."""
    for utt in utterances:
        yield f"{utt.utt_id} {reader.column(utt.hyps[0], 'text')}\n"


def reference_lines(utterances: Iterable, ref_path: str) -> Iterator[str]:
    """The lines of the Kaldi text ``ref_path`` whose utterance is among ``utterances``, as
    they are, in the reference's order."""
    wanted = {utt.utt_id for utt in utterances}
    for _lineno, line in iter_lines(ref_path):
        fields = line.split(None, 1)
        if fields and fields[0] in wanted:
            yield line + "\n"


def reference_rows(reader: NbestReader, utterances: Iterable, ref_path: str) -> Iterator[str]:
    """An N-best TSV (``utt_id client rank text``) with each utterance's reference as its only
    hypothesis (rank 1), in the reference's order: text trained on instead of the 1-best."""
    client = {utt.utt_id: (utt.client or "") for utt in utterances}
    yield "utt_id\tclient\trank\ttext\n"
    for _lineno, line in iter_lines(ref_path):
        fields = line.split()
        if fields and fields[0] in client:
            yield f"{fields[0]}\t{client[fields[0]]}\t1\t{' '.join(fields[1:])}\n"


# ---------------------------------------------------------------------------- Kaldi text


def words_of(line: str, ids: bool) -> int:
    """Words of one line (fields after the id with ``ids``)."""
    n = len(line.split())
    return max(n - 1, 0) if ids else n


def count_words(path: str, ids: bool = True) -> int:
    """Words of a text file (fields after the id of each line with ``ids``)."""
    return total_words((line for _n, line in iter_lines(path)), ids)


def sample_step(words: int, max_words: int) -> int:
    """k of the every-k-th-line sample of about ``max_words`` of ``words`` words:
    ceil(words / max_words), at least 1."""
    if max_words < 1:
        raise AsrprivError(f"--max-words must be >= 1, got {max_words}")
    return max(1, -(-words // max_words))


def select_lines(path: str, ids: bool = True, id_regex: str | None = None,
                 exclude_regex: str | None = None, every: int | None = None,
                 drop_every: int | None = None, max_words_per_line: int | None = None) -> list[str]:
    """The lines of a (Kaldi) text file that pass every filter given, in file order.

    Args:
        id_regex / exclude_regex: keep lines whose first field matches / does not match
            (``re.search``: anchor with ``^``).
        max_words_per_line: keep lines of at most this many words (:func:`words_of`), with
            the id filters (before the numbering of ``every`` / ``drop_every``).
        every: keep lines every, 2*every, ... (numbered over the lines the id filters kept).
        drop_every: drop those lines instead.
    """
    keep = _compile(id_regex, "--id-regex")
    drop = _compile(exclude_regex, "--exclude-id-regex")
    for name, k in (("--every", every), ("--drop-every", drop_every)):
        if k is not None and k < 1:
            raise AsrprivError(f"{name} must be >= 1, got {k}")
    if max_words_per_line is not None and max_words_per_line < 0:
        raise AsrprivError(f"--max-words-per-line must be >= 0, got {max_words_per_line}")
    out = []
    n = 0  # lines that passed the id filters
    for _lineno, line in iter_lines(path):
        if keep or drop:
            first = line.split(None, 1)[0] if line.split() else ""
            if (keep and not keep.search(first)) or (drop and drop.search(first)):
                continue
        if max_words_per_line is not None and words_of(line, ids) > max_words_per_line:
            continue
        n += 1
        if every and n % every:
            continue
        if drop_every and n % drop_every == 0:
            continue
        out.append(line)
    return out


def sample_lines(lines: list[str], max_words: int, ids: bool = True, words: int | None = None,
                 spread: bool = False) -> list[str]:
    """About ``max_words`` words of ``lines``, taken evenly over them.

    Default: every k-th line (the k-th, 2k-th, ...), k = :func:`sample_step` of ``words``
    (default: the words of ``lines``; give another file's so that two files are cut alike).
    ``spread``: line i (1-based) is kept when floor(i r) > floor((i - 1) r), r = max_words /
    words (every line when r >= 1).
    """
    total = total_words(lines, ids) if words is None else words
    if spread:
        if total <= 0:
            return list(lines)
        r = max_words / total
        if r >= 1:
            return list(lines)
        return [line for i, line in enumerate(lines, 1) if math.floor(i * r) > math.floor((i - 1) * r)]
    k = sample_step(total, max_words)
    return [line for i, line in enumerate(lines, 1) if i % k == 0]


def vocabulary(lines: Iterable[str], ids: bool = True) -> list[str]:
    """The distinct words of ``lines``, sorted (code-point order)."""
    words: set[str] = set()
    for line in lines:
        fields = line.split()
        words.update(fields[1:] if ids else fields)
    return sorted(words)


def total_words(lines: Iterable[str], ids: bool = True) -> int:
    """The words of ``lines``."""
    return sum(words_of(line, ids) for line in lines)


def map_lines(lines: Iterable[str], class_map, ids: bool = True) -> Iterator[str]:
    """``lines`` with every member word of ``class_map``
    (:class:`asrpriv.ngram.classes.ClassMap`) replaced by its class token; fields joined by
    one space."""
    for line in lines:
        fields = line.split()
        head, words = (fields[:1], fields[1:]) if ids else ([], fields)
        yield " ".join(head + list(class_map.map_words(words))) + "\n"


def _compile(pattern: str | None, option: str):
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as err:
        raise AsrprivError(f"{option}: bad regular expression {pattern!r}: {err}") from None


# ---------------------------------------------------------------------------- JSON reports


def pick_lowest(candidates: list[tuple[str, str]], key: str) -> tuple[str, list[float], bool]:
    """The label whose JSON report (``score-wer --format json``, ``perplexity --json``...) has
    the lowest number under ``key``; ties go to the first.

    Args:
        candidates: (label, report path) in grid order.

    Returns:
        (best label, every candidate's value, whether the best is the first or last of two or
        more candidates: on the edge of the grid).
    """
    import json

    if not candidates:
        raise AsrprivError("no candidate given (LABEL=REPORT ...)")
    values = []
    for label, path in candidates:
        text = "\n".join(line for _n, line in iter_lines(path))
        try:
            report = json.loads(text)
        except ValueError as err:
            raise InputError(path, None, f"not a JSON report: {err}") from None
        value = report.get(key) if isinstance(report, dict) else None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise InputError(path, None, f"no finite number under {key!r}")
        values.append(float(value))
    best = min(range(len(values)), key=lambda i: (values[i], i))
    edge = len(values) > 1 and best in (0, len(values) - 1)
    return candidates[best][0], values, edge
