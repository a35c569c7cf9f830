"""Guessing what a text input really is, where a wrong guess would silently change results.

Two mistakes that exit 0 with wrong numbers unless caught (docs/FORMATS.md, "Plain text"):

* an N-best TSV whose header is misspelt (``utt-id``, ``txt``) would be read as plain text,
  tabs, ids, scores and all: :func:`tsv_header_problem` names it so the step can refuse;
* Kaldi text given without ``--ids`` turns every utterance id into a word:
  :func:`ids_warning` says so. Only a warning: plain text may legitimately start every line
  with a unique token that looks like an id, and refusing would be wrong there.
"""

from __future__ import annotations

import difflib
from typing import Iterable

#: column names of the N-best TSV format (docs/FORMATS.md) and common near-synonyms
TSV_COLUMNS = ("utt_id", "text", "rank", "am_score", "lm_score", "score", "confidence", "client",
               "nnlm_score", "ngram_score", "first_pass_rank", "first_pass_score")
_SYNONYMS = ("uttid", "utt", "id", "utterance", "utterance_id", "hyp", "hypothesis", "transcript",
             "sentence", "words")
#: lines looked at by :func:`ids_warning`
SAMPLE_LINES = 200


def tsv_header_problem(line: str) -> str | None:
    """A message if ``line`` looks like an N-best TSV header without ``utt_id`` and ``text``.

    "Looks like": at least two tab-separated fields, one of which is (close to) a column name
    of the N-best format. A correct header (both required columns) returns None.
    """
    columns = line.split("\t")
    if len(columns) < 2 or ("utt_id" in columns and "text" in columns):
        return None
    names = TSV_COLUMNS + _SYNONYMS
    for column in columns:
        key = column.strip().lower().replace("-", "_").replace(" ", "_")
        if key in names or difflib.get_close_matches(key, TSV_COLUMNS, n=1, cutoff=0.75):
            missing = [c for c in ("utt_id", "text") if c not in columns]
            shown = " ".join(repr(c) for c in columns[:8])
            return (f"looks like an N-best TSV header (tab-separated: {shown}) but lacks the "
                    f"required column(s) {', '.join(missing)}; fix the header, or remove the "
                    "tabs if this is plain text")
    return None


def _id_like(token: str) -> bool:
    return any(c.isdigit() for c in token) and ("_" in token or "-" in token or len(token) >= 8)


def ids_warning(lines: Iterable[str]) -> str | None:
    """A warning if the first token of every (sampled) line looks like a Kaldi utterance id.

    Heuristic, on the first :data:`SAMPLE_LINES` non-blank lines (at least 3 needed): every
    first token is unique, contains a digit and a ``_``/``-`` (or is 8+ characters long), and
    never occurs elsewhere as a word.
    """
    firsts: list[str] = []
    others: set[str] = set()
    for line in lines:
        parts = line.split()
        if not parts:
            continue
        firsts.append(parts[0])
        others.update(parts[1:])
        if len(firsts) >= SAMPLE_LINES:
            break
    if len(firsts) < 3 or len(set(firsts)) != len(firsts):
        return None
    if not all(_id_like(t) for t in firsts) or any(t in others for t in firsts):
        return None
    return (f"the first word of every line looks like an utterance id ({firsts[0]!r}, "
            f"{firsts[1]!r}, ...): if this is Kaldi text, give --ids, or the ids are counted as words")


def is_torch_file(path: str) -> bool:
    """True if ``path`` looks like a torch file (a zip archive, or a bare pickle: first byte
    0x80, the pickle protocol marker) rather than text, ARPA or a kenlm binary.

    A bare pickle counts, so that it goes to the model reader and is refused there (weights
    only) instead of being read as text. Unreadable paths are not torch files.
    """
    import zipfile

    try:
        if zipfile.is_zipfile(path):
            return True
        with open(path, "rb") as f:
            return f.read(1) == b"\x80"
    except OSError:
        return False
