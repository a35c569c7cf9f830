"""Where every step reads the privacy state of its inputs: one place, so no step can forget.

A step's library entry names its inputs here (:class:`Inputs`): artifact files (counts,
factors, models, deltas, server states, ARPA LMs, audit reports) by path, and private or
public text by what it is. :meth:`Inputs.state` then gives the output's
:class:`~asrpriv.privacy.state.PrivacyState` (composition rules in
:mod:`asrpriv.privacy.state`), after refusing seeded test noise unless the step was told it
is a test. Writers take that state (:func:`asrpriv.privacy.state.to_meta`,
:func:`~asrpriv.privacy.state.to_payload`).

:func:`read_state` sniffs any file asrpriv writes and returns its state (privacy-report).
"""

from __future__ import annotations

import json
import os

from asrpriv.errors import AsrprivError, InputError
from asrpriv.privacy.state import (PUBLIC, PrivacyState, RawPart, StateError, combine,
                                   from_counts_meta, from_meta, from_payload, raw_state,
                                   refuse_seeded)

#: first-line markers of the text files asrpriv writes
_COUNTS = "#format=asrpriv-counts"
_FACTORS = "#format=asrpriv-factors"


def text_state(public: bool, what: str = "text", unit: str = "none", partition: str = "") -> PrivacyState:
    """The state of text a step reads: public when declared so (``--public``), else raw."""
    return PUBLIC if public else raw_state(what, unit, partition)


def arpa_header(path: str, numbered_lines=None) -> tuple[dict[str, str], int]:
    """The validated ``#key=value`` lines before an ARPA's ``\\data\\``: ``(meta, lines read)``.

    Only asrpriv's own header (first line ``#format=asrpriv-arpa-meta/1``) is parsed; other
    comment lines (SRILM, kenlm) are skipped. Reads until ``\\data\\`` only (from
    ``numbered_lines``, ``(line number, line)`` pairs, when given).
    """
    from asrpriv.io.lines import iter_lines
    from asrpriv.io.metadata import ARPA_KEYS, check_history_consistency, parse_meta_line

    meta: dict[str, str] = {}
    lines: dict[str, int] = {}
    ours = False
    lineno = 0
    for lineno, line in (iter_lines(path) if numbered_lines is None else numbered_lines):
        text = line.strip()
        if lineno == 1 and text.startswith("#format=asrpriv-arpa-meta/"):
            ours = True
        if not text.startswith("#"):
            if text:
                break
            continue
        if ours:
            parse_meta_line(path, lineno, text, meta, ARPA_KEYS)
            lines.update((k, lineno) for k in meta if k not in lines)
    if ours:
        check_history_consistency(path, meta, lines)
    return meta, lineno


def arpa_state(path: str, numbered_lines=None) -> PrivacyState:
    """The state an ARPA file records; no asrpriv header = made by another tool: public by
    the assertion of whoever gives it (docs/THREAT_MODEL.md). An asrpriv header always
    records ``private_raw`` (this version); one without it is read as un-noised data with no
    record (fail closed: deleting that line never upgrades a claim)."""
    meta, _ = arpa_header(path, numbered_lines)
    return arpa_meta_state(meta, path)


def arpa_meta_state(meta: dict[str, str], path: str) -> PrivacyState:
    """The state of an ARPA header already read (:func:`arpa_header`)."""
    unrecorded = frozenset({RawPart("unrecorded")}) if meta else frozenset()
    try:
        return from_meta(meta, unrecorded)
    except StateError as err:
        raise InputError(path, None, str(err)) from None


def payload_state(payload: dict, path: str) -> PrivacyState:
    """The state of a loaded model, delta or server-state payload."""
    try:
        return from_payload(payload)
    except StateError as err:
        raise InputError(path, None, str(err)) from None


def counts_state(meta: dict[str, str], path: str) -> PrivacyState:
    try:
        return from_counts_meta(meta)
    except (StateError, ValueError) as err:
        raise InputError(path, None, f"bad privacy record: {err}") from None


def factors_state(meta: dict[str, str], path: str) -> PrivacyState:
    """Factors record ``private_raw`` always (this version); a file without it (an older
    version's, or one whose line was deleted) is read as un-noised data with no record:
    NOT private, whatever else its header says (fail closed)."""
    try:
        return from_meta(meta, frozenset({RawPart("unrecorded")}))
    except StateError as err:
        raise InputError(path, None, str(err)) from None


def sniff(path: str) -> str:
    """The kind of an asrpriv file: counts, factors, arpa, model (torch), report (JSON), text."""
    if path != "-" and os.path.isdir(path):
        raise InputError(path, None, "is a directory, expected a file")
    from asrpriv.io.sniff import is_torch_file

    if path != "-" and is_torch_file(path):
        return "model"
    if path != "-":
        try:
            with open(path, "rb") as f:
                if f.read(8) == b"mmap lm ":
                    return "kenlm"  # a KenLM binary: another tool's LM, like a headerless ARPA
        except OSError:
            pass
    from asrpriv.io.lines import iter_lines

    return _text_kind(iter_lines(path))[0]


def _text_kind(numbered) -> tuple[str, list[tuple[int, str]]]:
    """The kind of a text file from its first lines, and the ``(line number, line)`` pairs it
    read to say so (so that stdin, read once, can be parsed from the start)."""
    seen: list[tuple[int, str]] = []
    try:
        for lineno, line in numbered:
            seen.append((lineno, line))
            text = line.strip()
            if lineno == 1 and text.startswith(_COUNTS):
                return "counts", seen
            if lineno == 1 and text.startswith(_FACTORS):
                return "factors", seen
            if lineno == 1 and text.startswith("{"):
                return "report", seen
            if text == "\\data\\":
                return "arpa", seen
            if text and not text.startswith("#"):
                return "text", seen
    except InputError:  # not UTF-8 text, or a line too long: some other tool's binary file
        return "binary", seen
    return "text", seen


def read_state(path: str, check_body: bool = True) -> tuple[str, PrivacyState]:
    """``(kind, state)`` of any file asrpriv writes (privacy-report).

    Text of unknown kind (transcripts, N-best lists) is private data: its state is raw. The
    file is read once (stdin, FIFOs: the kind from the first lines, then the same lines
    parsed), and read whole: an ARPA whose body is damaged (NaN, no ``\\end\\``) is refused
    (InputError) rather than reported by its header alone. ``check_body=False``: an ARPA's
    header only (steps that then read the LM with their own reader, which refuses a damaged
    body: a large LM is not parsed twice).
    """
    import itertools

    from asrpriv.io.lines import iter_lines

    numbered = None
    if path == "-" or not _regular(path):  # read once: kind from the first lines, then parse them
        lines = iter_lines(path)
        kind, seen = _text_kind(lines)
        numbered = itertools.chain(seen, lines)
    else:
        kind = sniff(path)
    if kind == "model":
        from asrpriv.nnlm.modelfile import read_any_payload

        payload = read_any_payload(path, mmap=True)
        return str(payload.get("kind", "model")), payload_state(payload, path)
    if kind == "counts":
        from asrpriv.io.counts import parse_counts

        meta, _ = parse_counts(path, iter_lines(path) if numbered is None else numbered,
                               allow_empty=True)
        return kind, counts_state(meta, path)
    if kind == "factors":
        from asrpriv.io.factors import read_factors

        meta, _ = read_factors(path, numbered)
        return kind, factors_state(meta, path)
    if kind == "arpa":
        return kind, (_checked_arpa_state(path, numbered) if check_body
                      else arpa_state(path, numbered))
    if kind == "kenlm":
        return kind, PUBLIC
    if kind == "report":
        return kind, report_state(path, numbered)
    if kind == "binary":
        return kind, raw_state("unrecorded")
    return kind, raw_state("text")


def _regular(path: str) -> bool:
    import stat

    try:
        return stat.S_ISREG(os.stat(path).st_mode) or stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return True  # the reader reports a missing or unreadable file


def _checked_arpa_state(path: str, numbered=None) -> PrivacyState:
    """The state of an ARPA file, after its whole body has been checked (one pass)."""
    import itertools

    from asrpriv.ngram.arpa import iter_entries

    if numbered is None:
        from asrpriv.io.lines import iter_lines

        numbered = iter_lines(path)
    head: list[tuple[int, str]] = []
    for item in numbered:
        head.append(item)
        if item[1].strip() == "\\data\\":
            break
    meta, _ = arpa_header(path, iter(head))
    for _ in iter_entries(path, numbered_lines=itertools.chain(head, numbered)):
        pass
    return arpa_meta_state(meta, path)


def read_vocabulary(path: str, plain, public_only: bool = False, what: str = "vocabulary"):
    """The words of a file given as a vocabulary or word list, and its privacy state:
    ``(words, state)``. Every slot that takes a word list reads it here (docs/THREAT_MODEL.md).

    - A plain word list (text of no asrpriv kind) is parsed by ``plain(path, numbered_lines)``
      and is public by the assertion of whoever gives it.
    - A file asrpriv writes is read by its own reader, never as a word list, and brings its
      own state: counts and factors give their keys, an ARPA LM its 1-grams (``<s>``,
      ``</s>``, ``<unk>`` aside). Models and JSON reports are refused.
    - ``public_only``: a file whose state is not public is refused (add-noise's vocabulary
      becomes the release's keys).

    Read once (a pipe works). Raises InputError naming the file.
    """
    import itertools

    from asrpriv.io.lines import iter_lines
    from asrpriv.io.sniff import is_torch_file

    if path != "-" and os.path.isfile(path) and is_torch_file(path):
        raise InputError(path, None, f"a model file cannot be a {what}: give a plain word list")
    lines = iter_lines(path)
    kind, seen = _text_kind(lines)
    numbered = itertools.chain(seen, lines)
    if kind in ("text", "binary"):
        return plain(path, numbered), PUBLIC
    if kind == "counts":
        from asrpriv.io.counts import parse_counts

        meta, table = parse_counts(path, numbered)
        state, words = counts_state(meta, path), list(table)
    elif kind == "factors":
        from asrpriv.io.factors import read_factors

        meta, table = read_factors(path, numbered)
        state, words = factors_state(meta, path), list(table)
    elif kind == "arpa":
        from asrpriv.ngram.arpa import iter_entries

        head: list[tuple[int, str]] = []
        for item in numbered:
            head.append(item)
            if item[1].strip() == "\\data\\":
                break
        meta, _ = arpa_header(path, iter(head))
        state = arpa_meta_state(meta, path)
        words = []
        for n, _, _, fields, _ in iter_entries(path, numbered_lines=itertools.chain(head, numbered)):
            if n > 1:
                break
            if fields[0] not in ("<s>", "</s>", "<unk>"):
                words.append(fields[0])
    else:
        raise InputError(path, None, f"a JSON report cannot be a {what}: give a plain word list")
    if public_only and state.kind != "public":
        raise InputError(path, None, f"this {kind} file is not marked public (its privacy state "
                         f"is {state.kind}), so its words may come from private data and cannot "
                         f"be a public {what}: give a plain word list of public words, or counts "
                         "made with 'count-unigrams --public' of public text")
    if not words:
        raise InputError(path, None, f"empty {what}")
    return words, state


def report_state(path: str, numbered_lines=None) -> PrivacyState:
    """The state recorded in a JSON report (``privacy_state`` key, :func:`state_to_json`)."""
    from asrpriv.io.lines import iter_lines

    numbered = iter_lines(path) if numbered_lines is None else numbered_lines
    try:
        obj = json.loads("\n".join(line for _, line in numbered))
    except (ValueError, RecursionError) as err:
        raise InputError(path, None, f"not a JSON report: {err}") from None
    record = obj.get("privacy_state") if isinstance(obj, dict) else None
    if not isinstance(record, dict):
        return raw_state("unrecorded")
    try:
        return state_from_json(record)
    except (StateError, ValueError) as err:
        raise InputError(path, None, f"bad privacy_state: {err}") from None


def state_to_json(state: PrivacyState) -> dict:
    """A JSON-able record of ``state`` (reports: cluster-weights' report.json)."""
    from asrpriv.privacy.state import raw_to_json

    return {"kind": state.kind, "words": state.words(),
            "privacy_history": state.history.to_json() if state.history.releases else None,
            "private_raw": raw_to_json(state.raw)}


def state_from_json(record: dict) -> PrivacyState:
    from asrpriv.privacy.history import History
    from asrpriv.privacy.state import raw_from_json

    history = History.from_json(record["privacy_history"]) if record.get("privacy_history") else History()
    return PrivacyState(history, raw_from_json(record.get("private_raw", "[]")))


class Inputs:
    """The inputs of one step run, by name, with their privacy states.

    ``add_*`` record an input; :meth:`state` checks seeded noise and composes. A step that
    reads an artifact without adding it here would write an output that claims too much:
    every writer of counts, factors, models and ARPA headers takes the state this returns.
    """

    def __init__(self, allow_seeded: bool = False) -> None:
        self.allow_seeded = allow_seeded
        self.named: list[tuple[str, PrivacyState]] = []

    def add(self, name: str, state: PrivacyState) -> PrivacyState:
        try:
            refuse_seeded([(name, state)], self.allow_seeded)
        except StateError as err:
            raise AsrprivError(str(err)) from None
        self.named.append((name, state))
        return state

    def add_file(self, path: str) -> PrivacyState:
        """An artifact file of any kind (sniffed; an ARPA's header only: the step's reader
        checks its body)."""
        _, state = read_state(path, check_body=False)
        return self.add(_name(path), state)

    def add_arpa(self, path: str) -> PrivacyState:
        """An ARPA LM the step reads again afterwards: a regular file (a pipe would hang)."""
        from asrpriv.io.lines import require_regular_file

        if path in (None, "-"):
            raise AsrprivError("an ARPA LM cannot be read from standard input here (the step "
                               "reads it twice); give a file")
        require_regular_file(path, "an ARPA LM")
        return self.add(_name(path), arpa_state(path))

    def add_payload(self, path: str, payload: dict) -> PrivacyState:
        return self.add(_name(path), payload_state(payload, path))

    def add_counts(self, path: str, meta: dict[str, str]) -> PrivacyState:
        return self.add(_name(path), counts_state(meta, path))

    def add_factors(self, path: str, meta: dict[str, str]) -> PrivacyState:
        """A factors file whose header the caller has read (read once)."""
        return self.add(_name(path), factors_state(meta, path))

    def add_text(self, path: str, public: bool, what: str = "text", unit: str = "none",
                 partition: str = "") -> PrivacyState:
        return self.add(_name(path), text_state(public, what, unit, partition))

    def state(self, disjoint: bool = False) -> PrivacyState:
        try:
            return combine([s for _, s in self.named], disjoint)
        except StateError as err:
            raise AsrprivError(str(err)) from None


def _name(path: str | None) -> str:
    return "<stdin>" if path in (None, "-") else str(path)


def write_arpa_header(stream, step: str, state: PrivacyState, **keys: str) -> None:
    """Write asrpriv's ``#key=value`` header before an ARPA's ``\\data\\`` (kenlm and SRILM
    skip comment lines there): the step, ``keys``, and the privacy record of ``state``.

    A public ARPA gets no header (an ARPA without one reads as public), so public outputs
    are the same bytes as a plain ARPA writer's.
    """
    if state.kind == "public":
        return
    from asrpriv import __version__
    from asrpriv.privacy.state import to_meta

    meta = to_meta({"format": "asrpriv-arpa-meta/1", "step": step, **keys, "version": __version__},
                   state, always_raw=True)
    for key, value in meta.items():
        stream.write(f"#{key}={value}\n")


def check_read_files(paths, allow_seeded: bool) -> PrivacyState:
    """The combined state of artifact files a step reads only to score or evaluate with
    (LMs, factors): seeded test noise refused unless ``allow_seeded``. Directories are read
    file by file; missing paths are skipped (their readers report them); ``-`` and pipes,
    which only the step's reader may read, count as data with no record (fail closed)."""
    inputs = Inputs(allow_seeded)
    for path in paths:
        if path == "-":
            inputs.add("<stdin>", raw_state("unrecorded"))
            continue
        if not path:
            continue
        if os.path.isdir(path):
            for name in sorted(os.listdir(path)):
                full = os.path.join(path, name)
                if os.path.isfile(full):
                    inputs.add_file(full)
        elif os.path.isfile(path):
            inputs.add_file(path)
        elif os.path.exists(path):  # a pipe is read once, by the step: its record is not
            inputs.add(_name(path), raw_state("unrecorded"))  # read here, so it claims nothing
    return inputs.state()
