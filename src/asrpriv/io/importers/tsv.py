"""Any delimited table with a header (TSV, CSV, ...) and a column-name mapping.

``mapping`` renames source columns to ours: ``{"hyp": "text", "key": "utt_id"}`` (from
``--map hyp=text,key=utt_id``). Ours are ``utt_id`` and ``text`` (required), ``rank``,
``am_score``, ``lm_score``, ``score``, ``confidence``, ``client``; a source column already
named like one of ours needs no mapping. Other source columns are carried through under
their own names. Without ``rank``, rank = order within the utterance; rows of an utterance
must be contiguous. Scores are taken as natural log unless ``log_base=10`` (then multiplied
by ln 10). The delimiter is sniffed from the header (tab, comma, semicolon or bar; the one
occurring most) unless given; fields may be quoted as in CSV.
"""

from __future__ import annotations

import csv
from typing import Iterator

from asrpriv.errors import AsrprivError, InputError, arg
from asrpriv.io.importers.common import LN10, NbestTable, Row, check_id, parse_float
from asrpriv.io.lines import iter_lines

OURS = ("utt_id", "text", "rank", "am_score", "lm_score", "score", "confidence", "client")
SCORES = ("am_score", "lm_score", "score")
DELIMITERS = "\t,;|"


def parse_map(spec: str | None) -> dict[str, str]:
    """``"hyp=text,key=utt_id"`` -> ``{"hyp": "text", "key": "utt_id"}``; errors name the pair."""
    out: dict[str, str] = {}
    if not spec:
        return out
    for pair in spec.split(","):
        src, eq, dst = pair.partition("=")
        src, dst = src.strip(), dst.strip()
        if not eq or not src or not dst:
            raise AsrprivError(f"{arg('map')}: expected SOURCE=OURS pairs separated by commas, got {pair!r}")
        if dst not in OURS:
            raise AsrprivError(f"{arg('map')}: {dst!r} is not one of our columns ({', '.join(OURS)})")
        if src in out:
            raise AsrprivError(f"{arg('map')}: source column {src!r} mapped twice")
        if dst in out.values():
            raise AsrprivError(f"{arg('map')}: two source columns mapped to {dst!r}")
        out[src] = dst
    return out


def sniff(header: str) -> str:
    counts = {d: header.count(d) for d in DELIMITERS}
    best = max(DELIMITERS, key=lambda d: counts[d])
    return best if counts[best] else "\t"


def read(path: str | None, mapping: dict[str, str] | None = None, delimiter: str | None = None,
         log_base: str = "e", **_ignored) -> NbestTable:
    mapping = dict(mapping or {})
    lines = iter_lines(path)
    first = next(lines, None)
    if first is None:
        raise InputError(path, None, "empty input: expected a header row")
    lineno, header_line = first
    delim = delimiter or sniff(header_line)
    header = next(csv.reader([header_line], delimiter=delim))
    for src in mapping:
        if src not in header:
            raise InputError(path, lineno, f"{arg('map')} names column {src!r}, which the header lacks "
                                           f"(got: {' '.join(header)})")
    names = [mapping.get(h, h) for h in header]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise InputError(path, lineno, f"column(s) {', '.join(sorted(dup))} appear twice after mapping")
    missing = [c for c in ("utt_id", "text") if c not in names]
    if missing:
        raise InputError(path, lineno, f"no column for {', '.join(missing)}: map one with "
                                       f"{arg('map')} SOURCE={missing[0]} (got: {' '.join(header)})")
    scores = [c for c in SCORES if c in names]
    extra = [n for n in names if n not in ("utt_id", "text", "rank", *SCORES)]
    scale = LN10 if log_base == "10" else 1.0
    return NbestTable(scores, _rows(path, lines, delim, names, scores, extra, scale), extra)


def _rows(path, lines, delim, names, scores, extra, scale) -> Iterator[Row]:
    index = {n: i for i, n in enumerate(names)}
    i_utt, i_text, i_rank = index["utt_id"], index["text"], index.get("rank")
    current, count = None, 0

    def numbered():
        for lineno, line in lines:
            if line.strip():
                yield lineno, line

    numbered_lines = numbered()
    pending: list[int] = []

    def only_lines():
        for lineno, line in numbered_lines:
            pending.append(lineno)
            yield line

    for values in csv.reader(only_lines(), delimiter=delim):
        lineno = pending[-1] if pending else None
        pending.clear()
        if len(values) != len(names):
            raise InputError(path, lineno, f"expected {len(names)} fields, got {len(values)}")
        utt = check_id(values[i_utt].strip(), path, lineno)
        if utt != current:
            current, count = utt, 0
        count += 1
        if i_rank is not None:
            try:
                rank = int(values[i_rank])
            except ValueError:
                raise InputError(path, lineno, f"rank: expected an integer, got {values[i_rank]!r}") from None
            if rank < 1:
                raise InputError(path, lineno, f"rank: expected >= 1, got {rank}")
        else:
            rank = count
        row_scores = {c: scale * parse_float(values[index[c]], path, lineno, c) for c in scores}
        yield Row(utt, rank, values[i_text], row_scores, {c: values[index[c]] for c in extra},
                  where=(path, lineno))
