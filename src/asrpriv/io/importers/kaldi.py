"""Kaldi N-best lists as ``lattice-to-nbest | nbest-to-linear`` leaves them.

PATH is a directory holding three Kaldi text tables keyed ``UTT-N`` (``N`` = 1 for the best
path; ``lattice-to-nbest`` writes keys ``utt_id-1``, ``utt_id-2``, ... in order of the scaled
total cost):

* ``text``: ``UTT-N word word ...`` (``nbest-to-linear``'s transcription archive after
  ``utils/int2sym.pl -f 2-``), or ``words.int`` (the integer archive itself) with
  ``words=words.txt`` (``word id`` per line, the graph's symbol table);
* ``ac_cost``: ``UTT-N cost``, the acoustic cost;
* ``lm_cost``: ``UTT-N cost``, the graph cost.

Kaldi costs are negated natural-log likelihoods, so ``am_score = -acoustic_scale * ac_cost``
and ``lm_score = -lm_cost``. ``lm_cost`` is a *graph* cost: the LM log-probability plus the
pronunciation, silence and HMM-transition log-probabilities of HCLG (and whatever
``lattice-lmrescore`` left there), not an LM score alone.

Acoustic scale: ``lattice-to-nbest --acoustic-scale=S`` scales the lattice by ``S`` only to
choose and order the N best paths (``fst::ShortestPath``), then undoes the scale
(``ScaleLattice(1/lm_scale, 1/acoustic_scale)``) on every path before writing it, so
``nbest-to-linear`` writes *unscaled* costs (src/latbin/lattice-to-nbest.cc). The default
``acoustic_scale=1`` keeps them unscaled, which is what ``rescore-nbest`` expects (its
``--lm-weight`` plays the role of ``1/S``); give ``S`` to write scaled acoustic scores.

The three tables may be text or binary archives (``nbest-to-linear``'s default output is
binary: ``ark:ac_cost``): each is read as Kaldi reads it (:mod:`asrpriv.io.kaldi_tables`).

PATH may also be a Kaldi N-best *archive* (a file, ``-`` or an ``ark,t:`` specifier such as
``ark,t:-`` or ``ark:gunzip -c nbest.txt.gz |``): the text form of what
``lattice-to-nbest`` writes (``lattice-to-nbest ... ark,t:nbest.txt``, or
``lattice-copy ark:nbest.ark ark,t:-``), one linear lattice per ``UTT-N`` key::

    UTT-1
    0 1 23 4.5,10.2,1_2_3        compact arc: src dst word graph_cost,acoustic_cost,tids
    1 2 45 1.2,3.4,4_5
    2 0.5,0,                     final state with its final weight (or just '2')
    <blank line>

Non-compact lattice arcs (``src dst ilabel olabel graph,acoustic``, the word = olabel) are
read too. Costs are summed over the path (arcs and final weight): ``lm_cost`` = the graph
costs, ``ac_cost`` = the acoustic costs, then mapped as above. Word 0 is epsilon. Words are
integer ids looked up in ``--words`` (or words, if the archive went through ``int2sym.pl``).
A lattice that branches is refused: run ``lattice-to-nbest`` first.

Layouts of Kaldi's own N-best rescoring scripts (``scripts/rnnlm/lmrescore_nbest.sh`` and
``egs/wsj/s5/steps/rnnlmrescore.sh``, kaldi-asr/kaldi at commit f4007661, 2025-07-22;
``lmrescore_nbest.sh`` last changed in 48d2115e, 2020-01-29): stage 3 runs
``nbest-to-linear`` into ``archives.J/{ali,words,lmwt.nolm,acwt}`` per job J, stage 4 writes
``lmwt.withlm`` (graph costs with the first-pass LM), stage 5 ``words_text``
(``int2sym.pl -f 2-``) and ``lmwt.lmonly`` (``withlm - nolm``). PATH may be such an
``archives.J`` folder, or the decode folder holding ``archives.1``, ``archives.2``, ...
(jobs merged in job order; an utterance in two jobs is an error). There ``words_text``
(or ``words`` with ``--words``) is the text, ``acwt`` the acoustic cost and the graph cost
is ``lmwt.withlm`` (else ``lmwt.nolm + lmwt.lmonly``), mapped as above.

A folder with ``text`` and ``ac_cost`` but no ``lm_cost`` (``nbest-to-linear`` with
``ark:/dev/null`` for the LM costs) gives ``am_score`` only: rescore it with an LM
(``rescore-nbest --ngram/--nnlm``).

A Kaldi *lattice* archive (a key without ``-N``, or a state with two arcs) is refused before
anything is written: read it with ``--from kaldi-lattice`` (:mod:`.kaldi_lattice`).

The three tables are read in lockstep (``nbest-to-linear`` writes them in the same order),
so memory does not grow with the input; a key that differs between them is an error.
"""

from __future__ import annotations

import os
import re
from typing import Iterator

from asrpriv.errors import AsrprivError, InputError, arg
from asrpriv.io.importers.common import NbestTable, Row, check_id, parse_float
from asrpriv.io.lines import iter_lines


def split_key(key: str, path: str | None, line: int) -> tuple[str, int]:
    """``utt_id-N`` -> ``(utt_id, N)``; N must be an integer >= 1."""
    utt, sep, n = key.rpartition("-")
    if not sep or not utt or not n.isdigit() or int(n) < 1:
        raise InputError(path, line, f"key {key!r} is not UTT-N (N >= 1), as lattice-to-nbest writes")
    return utt, int(n)


def read_symbols(path: str) -> dict[str, str]:
    """A Kaldi symbol table (``word id`` per line) as ``{id: word}``."""
    table: dict[str, str] = {}
    for lineno, line in iter_lines(path):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2 or not parts[1].isdigit():
            raise InputError(path, lineno, "expected 'word id' (a Kaldi symbol table)")
        if parts[1] in table:
            raise InputError(path, lineno, f"duplicate id {parts[1]}")
        table[parts[1]] = parts[0]
    return table


def _records(path: str, kind: str = "tokens") -> Iterator[tuple[int, str, list[str]]]:
    """``(line, key, values)`` of a Kaldi table file, text or binary (``nbest-to-linear``
    writes binary archives unless given ``ark,t:``); ``kind``: the holder of a binary
    entry (:mod:`asrpriv.io.kaldi_tables`), its line is its entry number."""
    from asrpriv.io import kaldi_tables

    if is_binary(path):
        for n, e in enumerate(kaldi_tables.iter_table(f"ark:{path}", kind), 1):
            values = e.value if isinstance(e.value, list) else [repr(e.value)]
            yield (e.line if e.line is not None else n), e.key, [str(v) for v in values]
        return
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        if line[0].isspace():
            raise InputError(path, lineno, "line without a key (it starts with white space)")
        parts = line.split()
        yield lineno, parts[0], parts[1:]


def is_binary(path: str) -> bool:
    """True when a table file starts like a binary Kaldi archive (``key \0B``)."""
    if path == "-" or not os.path.isfile(path):
        return False
    from asrpriv.io.lines import open_binary

    stream = open_binary(path)
    try:
        head = stream.read(4096)
    finally:
        stream.close()
    first = head.split(b"\n", 1)[0]
    return b" \0B" in first


def _cost(rec, path: str, what: str) -> tuple[str, float]:
    lineno, key, rest = rec
    if len(rest) != 1:
        raise InputError(path, lineno, f"expected 'KEY {what}', got {len(rest)} values")
    return key, parse_float(rest[0], path, lineno, what)


#: the job folders of lmrescore_nbest.sh / rnnlmrescore.sh
_NBEST_KEY = re.compile(r"^\S+-[1-9][0-9]*$")
_JOB_DIR = re.compile(r"^archives\.([1-9][0-9]*)$")


def _check_not_binary(path: str) -> None:
    with open(path, "rb") as handle:
        head = handle.read(4096)
    if head[:2] == b"\x1f\x8b":
        import gzip

        with gzip.open(path, "rb") as handle:
            head = handle.read(4096)
    if b"\x00B" in head:
        raise InputError(path, 1, "a binary Kaldi archive: write it in text form first "
                                  "(lattice-to-nbest ... ark:- | lattice-copy ark:- ark,t:FILE)")


def job_dirs(path: str) -> list[str]:
    """``archives.J`` folders under ``path``, by job number (empty if none)."""
    found = sorted((int(m.group(1)), os.path.join(path, n)) for n in os.listdir(path)
                   if (m := _JOB_DIR.match(n)) and os.path.isdir(os.path.join(path, n)))
    return [d for _j, d in found]


def read(path: str, words: str | None = None, acoustic_scale: float = 1.0, **_ignored) -> NbestTable:
    from asrpriv.io import kaldi_tables

    if path == "-" or kaldi_tables.is_specifier(path):
        symbols = read_symbols(words) if words is not None else None
        lines = iter_lines(path) if path == "-" else kaldi_tables.iter_lines(path)
        return NbestTable(["am_score", "lm_score"], _archive_rows(path, symbols, acoustic_scale, lines))
    if os.path.isfile(path):
        _check_not_binary(path)
        symbols = read_symbols(words) if words is not None else None
        return NbestTable(["am_score", "lm_score"], _archive_rows(path, symbols, acoustic_scale))
    if not os.path.isdir(path):
        raise AsrprivError(f"{path}: expected a directory holding text (or words.int), ac_cost, lm_cost")
    jobs = job_dirs(path)
    if jobs or _is_archives_dir(path):
        return _read_archives(jobs or [path], words, acoustic_scale)
    ac_path = os.path.join(path, "ac_cost")
    lm_path = os.path.join(path, "lm_cost")
    symbols = None
    if words is not None:
        text_path = os.path.join(path, "words.int")
        symbols = read_symbols(words)
    else:
        text_path = os.path.join(path, "text")
        if not os.path.exists(text_path) and os.path.exists(os.path.join(path, "words.int")):
            raise AsrprivError(f"{path}: has words.int but no text: give {arg('words')} words.txt")
    for p in (text_path, ac_path):
        if not os.path.exists(p):
            raise AsrprivError(f"{p}: no such file (a Kaldi N-best directory holds text, ac_cost, "
                               "lm_cost; or archives.J/ folders of lmrescore_nbest.sh)")
    if not os.path.exists(lm_path):
        return NbestTable(["am_score"], _rows(text_path, ac_path, None, symbols, acoustic_scale),
                          note=f"{path} has no lm_cost: am_score only (rescore with --ngram/--nnlm)")
    return NbestTable(["am_score", "lm_score"],
                      _rows(text_path, ac_path, lm_path, symbols, acoustic_scale))


def _is_archives_dir(path: str) -> bool:
    return os.path.exists(os.path.join(path, "acwt")) and (
        os.path.exists(os.path.join(path, "words_text")) or os.path.exists(os.path.join(path, "words")))


def _read_archives(dirs: list[str], words: str | None, acoustic_scale: float) -> NbestTable:
    """The ``archives.J`` folders of lmrescore_nbest.sh, merged in job order."""
    symbols = read_symbols(words) if words is not None else None
    plans = []
    for d in dirs:
        text_path = os.path.join(d, "words" if symbols is not None else "words_text")
        if not os.path.exists(text_path):
            if symbols is None and os.path.exists(os.path.join(d, "words")):
                raise AsrprivError(f"{d}: has words (integer ids) but no words_text: give {arg('words')} words.txt")
            raise AsrprivError(f"{text_path}: no such file (lmrescore_nbest.sh writes words and "
                               "words_text in each archives.J folder)")
        ac_path = os.path.join(d, "acwt")
        if not os.path.exists(ac_path):
            raise AsrprivError(f"{ac_path}: no such file (the acoustic costs of nbest-to-linear)")
        withlm = os.path.join(d, "lmwt.withlm")
        nolm, lmonly = os.path.join(d, "lmwt.nolm"), os.path.join(d, "lmwt.lmonly")
        if os.path.exists(withlm):
            lm_paths = [withlm]
        elif os.path.exists(nolm) and os.path.exists(lmonly):
            lm_paths = [nolm, lmonly]
        else:
            raise AsrprivError(f"{d}: no lmwt.withlm (nor lmwt.nolm and lmwt.lmonly): the graph "
                               "costs with the first-pass LM are needed")
        plans.append((text_path, ac_path, lm_paths))
    return NbestTable(["am_score", "lm_score"], _job_rows(plans, symbols, acoustic_scale))


def _job_rows(plans, symbols, acoustic_scale) -> Iterator[Row]:
    earlier: set[str] = set()
    for text_path, ac_path, lm_paths in plans:
        this_job: set[str] = set()
        for row in _rows(text_path, ac_path, lm_paths, symbols, acoustic_scale):
            if row.utt_id not in this_job:
                if row.utt_id in earlier:
                    raise InputError(text_path, row.where[1], f"utterance {row.utt_id!r} is also in "
                                                              "an earlier job's archives")
                this_job.add(row.utt_id)
            yield row
        earlier |= this_job


def _rows(text_path, ac_path, lm_path, symbols, acoustic_scale) -> Iterator[Row]:
    """Rows of tables read in lockstep; ``lm_path`` None (no graph costs), one path, or a list
    of paths whose costs are summed (``lmwt.nolm`` + ``lmwt.lmonly``)."""
    lm_paths = [] if lm_path is None else ([lm_path] if isinstance(lm_path, str) else list(lm_path))
    streams = [(_records(ac_path, "float"), ac_path, "ac_cost" if ac_path.endswith("ac_cost") else "acwt")]
    streams += [(_records(p, "float"), p, os.path.basename(p)) for p in lm_paths]
    texts = _records(text_path, "int32s" if symbols is not None else "tokens")
    for rec in texts:
        lineno, key, toks = rec
        if symbols is not None:
            try:
                toks = [symbols[t] for t in toks]
            except KeyError as err:
                raise InputError(text_path, lineno, f"word id {err.args[0]} is not in the symbol table") from None
        utt, n = split_key(key, text_path, lineno)
        check_id(utt, text_path, lineno)
        costs = []
        for stream, p, what in streams:
            other = next(stream, None)
            if other is None:
                raise InputError(p, None, f"ends before key {key!r} (line {lineno} of {text_path})")
            okey, cost = _cost(other, p, what)
            if okey != key:
                raise InputError(p, other[0], f"key {okey!r} where {text_path}:{lineno} has {key!r} "
                                              "(the tables must list the same keys in the same order)")
            costs.append(cost)
        scores = {"am_score": -acoustic_scale * costs[0]}
        if lm_paths:
            scores["lm_score"] = -sum(costs[1:])
        yield Row(utt, n, " ".join(toks), scores, where=(text_path, lineno))
    for stream, p, _what in streams:
        extra = next(stream, None)
        if extra is not None:
            raise InputError(p, extra[0], f"key {extra[1]!r} is not in {text_path}")


def _weight(field: str, path: str, lineno: int) -> tuple[float, float]:
    """``graph,acoustic[,tids]`` -> (graph cost, acoustic cost)."""
    parts = field.split(",")
    if len(parts) < 2:
        raise InputError(path, lineno, f"weight {field!r} is not 'graph_cost,acoustic_cost[,tids]'")
    return (parse_float(parts[0], path, lineno, "graph cost"),
            parse_float(parts[1], path, lineno, "acoustic cost"))


def _archive_rows(path: str, symbols, acoustic_scale: float, lines=None) -> Iterator[Row]:
    key = None
    start = 0
    arcs: dict[int, tuple[int, str, float, float, int]] = {}
    finals: dict[int, tuple[float, float]] = {}

    def finish() -> Row:
        utt, n = split_key(key, path, start)
        check_id(utt, path, start)
        state, seen, toks, graph, acoustic = 0, set(), [], 0.0, 0.0
        while state not in finals or state in arcs:
            if state in seen or state not in arcs:
                raise InputError(path, start, f"lattice {key!r} has no path from state 0 to a "
                                              "final state (or a loop)")
            seen.add(state)
            dst, word, g, a, lineno = arcs[state]
            if word != "0":
                if symbols is not None:
                    if word not in symbols:
                        raise InputError(path, lineno, f"word id {word} is not in the symbol table")
                    word = symbols[word]
                elif word.isdigit():
                    raise InputError(path, lineno, f"integer word ids: give {arg('words')} words.txt")
                toks.append(word)
            graph += g
            acoustic += a
            state = dst
        g, a = finals[state]
        graph += g
        acoustic += a
        return Row(utt, n, " ".join(toks), {"am_score": -acoustic_scale * acoustic,
                                            "lm_score": -graph}, where=(path, start))

    for lineno, line in (lines if lines is not None else iter_lines(path)):
        fields = line.split()
        if not fields:
            if key is not None:
                yield finish()
                key, arcs, finals = None, {}, {}
            continue
        if key is None:
            if len(fields) != 1:
                if not fields[0].isdigit() and not any("," in f for f in fields):
                    raise InputError(path, lineno, f"key {line.strip()!r} holds white space: a "
                                                   "Kaldi key is one token (UTT-N here)")
                raise InputError(path, lineno, "expected a key line (UTT-N) starting an N-best path: "
                                               "not a text-form lattice-to-nbest archive")
            key, start = fields[0], lineno
            if not _NBEST_KEY.match(key):
                raise InputError(path, lineno, f"key {key!r} is not UTT-N: a Kaldi lattice, not an "
                                               "N-best archive: read it with --from kaldi-lattice")
            continue
        if not fields[0].isdigit():
            raise InputError(path, lineno, f"expected a state number, got {fields[0]!r}")
        src = int(fields[0])
        if len(fields) in (1, 2):  # final state [weight]
            finals[src] = _weight(fields[1], path, lineno) if len(fields) == 2 else (0.0, 0.0)
            continue
        if len(fields) == 4:  # compact: src dst word weight
            dst_field, word, weight = fields[1], fields[2], fields[3]
        elif len(fields) == 5:  # lattice: src dst ilabel olabel weight
            dst_field, word, weight = fields[1], fields[3], fields[4]
        else:
            raise InputError(path, lineno, f"expected an arc 'src dst word weight', got "
                                           f"{len(fields)} fields")
        if not dst_field.isdigit():
            raise InputError(path, lineno, f"expected a state number, got {dst_field!r}")
        if src in arcs:
            raise InputError(path, lineno, f"lattice {key!r} branches at state {src}: not an "
                                           "N-best path: read the lattice with --from kaldi-lattice")
        arcs[src] = (int(dst_field), word, *_weight(weight, path, lineno), lineno)
    if key is not None:
        yield finish()
