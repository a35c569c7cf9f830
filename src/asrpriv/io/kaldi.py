"""Kaldi-style tables: ``text`` (``utt_id word word ...``) and two-column maps (``utt2spk``)."""

from __future__ import annotations

from typing import Iterator

from asrpriv.errors import InputError
from asrpriv.io.lines import iter_lines


def iter_text(path: str | None, lines=None) -> Iterator[tuple[int, str, list[str]]]:
    """Yield ``(line_number, utt_id, words)`` of a Kaldi text file; words may be empty.

    A duplicate utterance id is an InputError (it would be counted as two utterances, e.g.
    twice the contribution bound of one unit). ``lines``: an already-open ``iter_lines(path)``.
    """
    seen: set[str] = set()
    for lineno, line in (lines if lines is not None else iter_lines(path)):
        if not line.strip():
            continue  # blank lines carry nothing
        if line[0].isspace():
            raise InputError(path, lineno, "line without an utterance id (it starts with white space)")
        parts = line.split()
        if parts[0] in seen:
            raise InputError(path, lineno, f"duplicate utterance id {parts[0]!r}")
        seen.add(parts[0])
        yield lineno, parts[0], parts[1:]


def text_lines(path: str | None, words: str | None = None) -> Iterator[tuple[int, str]]:
    """``(line, text)`` of Kaldi text from a file or ``-`` (:func:`iter_lines`), a Kaldi table
    specifier (``ark,t:-``, ``ark:gunzip -c text.gz |``, ``scp:``; each entry one line ``key
    w1 w2 ...``; a binary entry's number stands for its line) or a lhotse supervision/cut
    manifest (:func:`asrpriv.io.lhotse.text_lines`). ``words`` (a words.txt): a table's word
    ids are mapped to words (:func:`asrpriv.io.kaldi_tables.read_tokens`)."""
    from asrpriv.io import kaldi_tables, lhotse

    if kaldi_tables.is_specifier(path):
        symbols = None
        if words is not None:
            from asrpriv.io.importers.kaldi import read_symbols

            symbols = read_symbols(words)
        for n, e in enumerate(kaldi_tables.read_tokens(path, symbols), 1):
            yield (e.line if e.line is not None else n), " ".join([e.key, *e.value])
        return
    if path is not None and lhotse.is_manifest(path):
        yield from lhotse.text_lines(path)
        return
    yield from iter_lines(path)


def write_lines(spec: str, lines, words: str | None = None) -> int:
    """Write Kaldi text lines (``key w1 w2 ...``) to a Kaldi wspecifier (``ark,t:FILE``,
    ``ark,t:-``, ``ark:| gzip -c > text.gz``, ``ark,scp:A.ark,A.scp``); with ``words`` (a
    words.txt) as word-id vectors, binary unless ``t``. Returns the entries written."""
    from asrpriv.io import kaldi_tables

    inv = None
    if words is not None:
        from asrpriv.io.importers.kaldi import read_symbols

        inv = {w: int(i) for i, w in read_symbols(words).items()}

    def entries():
        for line in lines:
            fields = line.split()
            if fields:
                yield fields[0], fields[1:]

    return kaldi_tables.write_table(spec, entries(), inv)


def read_text(path: str | None) -> dict[str, list[str]]:
    """Read a Kaldi text file into ``{utt_id: words}``, in file order; duplicate ids are errors."""
    table: dict[str, list[str]] = {}
    for lineno, utt_id, words in iter_text(path):
        if utt_id in table:
            raise InputError(path, lineno, f"duplicate utterance id {utt_id!r}")
        table[utt_id] = words
    return table


def read_map(path: str | None, what: str = "value") -> dict[str, str]:
    """Read a two-column map (``utt2spk``, ``utt2client``): ``key value`` per line.

    A lhotse supervision or cut manifest (``MANIFEST[#FIELD]``, :mod:`asrpriv.io.lhotse`)
    gives the map of its supervisions (speaker for ``what="speaker"``, recording for
    ``what="client"``, or FIELD); a Kaldi ``ark:``/``scp:`` specifier a table of one token
    per key."""
    from asrpriv.io import kaldi_tables, lhotse

    if path is not None and lhotse.is_manifest(path):
        return lhotse.read_map(path, what)
    if kaldi_tables.is_specifier(path):
        table = {}
        for e in kaldi_tables.iter_table(path, "tokens"):
            if len(e.value) != 1:
                raise InputError(e.path, e.line, f"expected 2 columns (utt_id {what}), got "
                                                 f"{len(e.value) + 1}")
            if e.key in table:
                raise InputError(e.path, e.line, f"duplicate key {e.key!r}")
            table[e.key] = e.value[0]
        return table
    table: dict[str, str] = {}
    for lineno, line in iter_lines(path):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2:
            raise InputError(path, lineno, f"expected 2 columns (utt_id {what}), got {len(parts)}")
        if parts[0] in table:
            raise InputError(path, lineno, f"duplicate key {parts[0]!r}")
        table[parts[0]] = parts[1]
    return table
