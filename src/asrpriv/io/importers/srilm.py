"""SRILM native N-best lists: one file per utterance (``nbest-lattice``/``lattice-tool``).

PATH is a directory of N-best files (every regular file, in name order), a list file
naming them one per line (SRILM's ``-nbest-files``; a relative name is looked up from the
current directory, then from the list file's directory), or one N-best file (``-nbest``).
A file is one N-best list when its first non-blank line is a hypothesis (``NBestList1.0``/
``NBestList2.0``, ``(bytelog) w ...``, or ``ac lm nwords w ...`` with three numbers), and
a list file otherwise.

Non-events: ``<s>``, ``</s>`` and ``-pau-`` are dropped from the words, as SRILM's LMs skip
them (``--drop-tokens srilm`` is this format's default; :mod:`asrpriv.io.tokens` cites the
SRILM code). Scores are kept as written (SRILM does not change them either). The utterance id is the file name
without ``.gz`` and then without one extension (``sw_4390-A_0001.score.gz`` ->
``sw_4390-A_0001``), as SRILM's own scripts derive sentence ids. Rank = hypothesis order.
Three hypothesis formats are read, as ``NBestHyp::parse`` (lm/src/NBest.cc) reads them:

* SRILM's own: ``ac lm nwords w1 w2 ...`` with log10 scores (``LogP``):
  ``am_score = ac x ln 10``, ``lm_score = lm x ln 10``; ``nwords`` is not used.
* Decipher ``NBestList1.0`` (header line, then ``(score) w1 w2 ...``): one total score in
  bytelog: ``score = bytelog x 1024 / 10000.5`` (natural log; SRILM's ``BytelogToLogP`` is
  ``bytelog x 1024 / 10000.5 / ln 10`` in log10). A file without header whose lines start
  with ``(`` is read as this format, as SRILM does.
* Decipher ``NBestList2.0`` (header, then ``(score) w1 ( st: S et: E g: G a: A ) ...``, 11
  fields per token): ``score`` from the total, ``lm_score``/``am_score`` from the sums of the
  words' ``g:``/``a:`` bytelogs. Phone and state tokens (times inside the previous word, or a
  name ending in ``-digit``) are skipped as SRILM skips them.

Bytelogs are integers (SRILM writes ``(int)`` of the rounded value), so scores from the
Decipher formats carry up to half a bytelog (0.0512 nats) of rounding.
"""

from __future__ import annotations

import os
import re
from typing import Iterator

from asrpriv.errors import AsrprivError, InputError
from asrpriv.io.importers.common import LN10, NbestTable, Row, check_id, parse_float
from asrpriv.io.lines import iter_lines

#: natural log per bytelog
BYTELOG_NATS = 1024.0 / 10000.5
MAGIC1, MAGIC2 = "NBestList1.0", "NBestList2.0"
_STATE = re.compile(r"-[0-9]$")


def bytelog_to_ln(value: float) -> float:
    """SRILM bytelog -> natural log (``BytelogToLogP`` x ln 10)."""
    return value * BYTELOG_NATS


def utt_id_of(path: str) -> str:
    name = os.path.basename(path)
    if name.endswith(".gz"):
        name = name[:-3]
    stem = os.path.splitext(name)[0]
    return stem or name


def looks_like_nbest(path: str) -> bool:
    """True when the first non-blank line of ``path`` is an N-best hypothesis (or header)."""
    for _lineno, line in iter_lines(path):
        toks = line.split()
        if not toks:
            continue
        if toks[0] in (MAGIC1, MAGIC2) or toks[0].startswith("("):
            return True
        if len(toks) >= 3 and toks[2].isdigit():
            try:
                float(toks[0])
                float(toks[1])
            except ValueError:
                return False
            return True
        return False
    return False


def list_files(path: str) -> list[str]:
    """The N-best files of a directory, a list file, or ``[path]`` for one N-best file.

    ``-``: standard input holds a list of N-best files (``find nbest -name '*.gz' |``, or
    ``zcat list.gz |``); an N-best list itself on standard input is refused, as its
    utterance id comes from its file name."""
    if path == "-":
        return _stdin_list()
    if not os.path.exists(path):
        raise AsrprivError(f"{path}: no such file or directory (an SRILM N-best file, a "
                           "directory of them, or a list file naming them)")
    if os.path.isdir(path):
        files = sorted(os.path.join(path, n) for n in os.listdir(path)
                       if os.path.isfile(os.path.join(path, n)) and not n.startswith("."))
        if not files:
            raise AsrprivError(f"{path}: no N-best files in this directory")
        return files
    if looks_like_nbest(path):
        return [path]
    files = []
    base = os.path.dirname(os.path.abspath(path))
    for lineno, line in iter_lines(path):
        name = line.strip()
        if not name:
            continue
        if not os.path.exists(name) and not os.path.isabs(name) and os.path.exists(os.path.join(base, name)):
            name = os.path.join(base, name)
        if not os.path.isfile(name):
            raise InputError(path, lineno, f"no such N-best file: {line.strip()} (PATH is read as a "
                                           "list of N-best files: its first line is not an N-best "
                                           "hypothesis 'ac lm nwords words...')")
        files.append(name)
    if not files:
        raise InputError(path, None, "empty list of N-best files")
    return files


def _stdin_list() -> list[str]:
    files = []
    for lineno, line in iter_lines("-"):
        name = line.strip()
        if not name:
            continue
        toks = name.split()
        if not files and (toks[0] in (MAGIC1, MAGIC2) or toks[0].startswith("(")
                          or (len(toks) >= 3 and toks[2].isdigit())):
            raise InputError("-", lineno, "an N-best list on standard input: SRILM takes the "
                                          "utterance id from the file name, so give the file (or a "
                                          "list of N-best files on standard input)")
        if not os.path.isfile(name):
            raise InputError("-", lineno, f"no such N-best file: {name} (standard input is read as "
                                          "a list of N-best files)")
        files.append(name)
    if not files:
        raise InputError("-", None, "empty list of N-best files")
    return files


def _paren_score(tok: str, path: str, lineno: int) -> float:
    if not (tok.startswith("(") and tok.endswith(")")):
        raise InputError(path, lineno, f"expected a bytelog score in parentheses, got {tok!r}")
    return parse_float(tok[1:-1], path, lineno, "bytelog score")


def parse_file(path: str) -> Iterator[tuple[int, str, dict[str, float]]]:
    """``(line, text, scores)`` of each hypothesis of one SRILM N-best file."""
    fmt = None
    for lineno, line in iter_lines(path):
        toks = line.split()
        if not toks:
            continue
        if fmt is None:
            if toks[0] in (MAGIC1, MAGIC2):
                fmt = 1 if toks[0] == MAGIC1 else 2
                continue
            fmt = 1 if toks[0].startswith("(") else 0
        if toks[0] in (MAGIC1, MAGIC2):
            raise InputError(path, lineno, f"{toks[0]} header in the middle of the file")
        if fmt == 0:
            if len(toks) < 3:
                raise InputError(path, lineno, "expected 'ac_score lm_score num_words word ...' (log10)")
            ac = parse_float(toks[0], path, lineno, "acoustic score")
            lm = parse_float(toks[1], path, lineno, "LM score")
            if not toks[2].isdigit():
                raise InputError(path, lineno, f"number of words: expected an integer, got {toks[2]!r}")
            yield lineno, " ".join(toks[3:]), {"am_score": ac * LN10, "lm_score": lm * LN10}
        elif fmt == 1:
            total = _paren_score(toks[0], path, lineno)
            yield lineno, " ".join(toks[1:]), {"score": bytelog_to_ln(total)}
        else:
            yield lineno, *_parse_v2(toks, path, lineno)


def _parse_v2(toks: list[str], path: str, lineno: int) -> tuple[str, dict[str, float]]:
    total = _paren_score(toks[0], path, lineno)
    if (len(toks) - 1) % 11:
        raise InputError(path, lineno, "NBestList2.0: expected 11 fields per token "
                                       "(word ( st: S et: E g: G a: A ))")
    words, ac, lm, prev_end = [], 0, 0, -1.0
    for i in range(1, len(toks), 11):
        f = toks[i:i + 11]
        if f[1] != "(" or f[2] != "st:" or f[4] != "et:" or f[6] != "g:" or f[8] != "a:" or f[10] != ")":
            raise InputError(path, lineno, f"NBestList2.0: bad token fields after {f[0]!r}")
        start = parse_float(f[3], path, lineno, "st")
        end = parse_float(f[5], path, lineno, "et")
        if start > prev_end and not _STATE.search(f[0]):
            try:
                lm += int(f[7])
                ac += int(f[9])
            except ValueError:
                raise InputError(path, lineno, f"NBestList2.0: g:/a: must be integer bytelogs "
                                               f"(after {f[0]!r})") from None
            words.append(f[0])
            prev_end = end
    return " ".join(words), {"am_score": bytelog_to_ln(ac), "lm_score": bytelog_to_ln(lm),
                             "score": bytelog_to_ln(total)}


def read(path: str, **_ignored) -> NbestTable:
    files = list_files(path)
    first = next(parse_file(files[0]), None)
    if first is None:
        raise InputError(files[0], None, "no hypotheses in this N-best file")
    columns = sorted(first[2], key=["am_score", "lm_score", "score"].index)
    return NbestTable(columns, _rows(files, set(columns)))


def _rows(files: list[str], columns: set[str]) -> Iterator[Row]:
    for f in files:
        utt = check_id(utt_id_of(f), f, None)
        for rank, (lineno, text, scores) in enumerate(parse_file(f), 1):
            if set(scores) != columns:
                raise InputError(f, lineno, "this file's N-best format differs from the first file's "
                                            f"({' '.join(sorted(columns))})")
            yield Row(utt, rank, text, scores, where=(f, lineno))
