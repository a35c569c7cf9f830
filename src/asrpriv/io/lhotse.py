"""lhotse manifests: supervisions and cuts (``.jsonl``/``.jsonl.gz``) as references and maps.

lhotse (k2-fsa/lhotse; format of 1.x, checked with lhotse 1.33.0) keeps a corpus as JSON lines,
one object per line, written by ``SupervisionSet.to_file`` / ``CutSet.to_file`` (gzip when the
name ends in ``.gz``); icefall and k2 recipes hold their references, speakers and recordings
there. Read here without importing lhotse (its import takes seconds; the extra
``asrpriv[lhotse]`` installs it for preparing manifests and for the round-trip test):

* a **supervision** manifest: objects with ``id``, ``recording_id``, ``start``, ``duration``
  and optionally ``text``, ``speaker``, ``channel``, ``language``, ``gender``, ``custom``
  (a dict); one utterance per supervision, keyed by its ``id``;
* a **cut** manifest: objects with ``type`` ``MonoCut`` (or ``MultiCut``), ``id`` and a list
  of ``supervisions``; a cut with one supervision is one utterance keyed by the *cut* id (as
  icefall's ``recogs-*.txt`` key their hypotheses); a cut without supervision is skipped and
  counted; a cut with several, and a ``MixedCut``, are refused (score from the supervision
  manifest, or ``trim_to_supervisions`` first). The recording id of a cut's supervision is its
  own ``recording_id``.

A manifest is recognized by its name (``.jsonl``, ``.jsonl.gz``) and its first object (a
supervision's ``recording_id``/``start``/``duration``, or a cut's ``type``/``supervisions``);
any other JSON lines file (NeMo) is left to the other readers.

Maps (``--utt2spk``, ``--utt2client``): ``MANIFEST`` or ``MANIFEST#FIELD``; FIELD is
``speaker`` (the default for speakers), ``recording_id`` (alias ``recording``, the default
for clients), ``channel``, ``language``, ``gender``, or ``custom.NAME`` for a key of the
supervision's ``custom`` dict. A supervision without the field is an error (``FILE:LINE``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Iterator

from asrpriv.errors import AsrprivError, InputError

SUFFIXES = (".jsonl", ".jsonl.gz")
FIELDS = ("speaker", "recording_id", "channel", "language", "gender")
#: default map field per map kind (``read_map``'s ``what``)
DEFAULT_FIELD = {"speaker": "speaker", "client": "recording_id"}


@dataclass
class Supervision:
    """One utterance of a manifest: its key, text, fields and where it is."""

    key: str
    text: str | None
    fields: dict = field(default_factory=dict)
    line: int = 0


def split_field(path: str) -> tuple[str, str | None]:
    """``MANIFEST#FIELD`` -> ``(MANIFEST, FIELD)``; a path that exists as given is kept whole."""
    if "#" in path and not os.path.exists(path):
        base, _sep, name = path.rpartition("#")
        return base, name
    return path, None


def _kind(entry: dict) -> str | None:
    if not isinstance(entry, dict):
        return None
    if "supervisions" in entry and "id" in entry:
        return "cut"
    if str(entry.get("type", "")).endswith("Cut"):
        return "cut"
    if {"id", "recording_id", "start", "duration"} <= entry.keys():
        return "supervision"
    return None


def is_manifest(path: str | None) -> bool:
    """True for a lhotse supervision or cut manifest (module docstring)."""
    if not path or path == "-":
        return False
    base, _field = split_field(path)
    if not base.endswith(SUFFIXES) or not os.path.isfile(base):
        return False
    from asrpriv.io.lines import iter_lines

    try:
        for _lineno, line in iter_lines(base):
            if line.strip():
                try:
                    return _kind(json.loads(line)) is not None
                except ValueError:
                    return False
    except AsrprivError:
        return False
    return False


def iter_supervisions(path: str) -> Iterator[Supervision]:
    """The utterances of a supervision or cut manifest (module docstring), in file order."""
    from asrpriv.io.lines import iter_lines

    base, _field = split_field(path)
    kind = None
    for lineno, line in iter_lines(base):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError as err:
            raise InputError(base, lineno, f"not a JSON object: {err.msg}") from None
        this = _kind(entry)
        if this is None:
            raise InputError(base, lineno, "not a lhotse supervision or cut (no id, recording_id, "
                                           "start, duration; nor supervisions)")
        if kind is None:
            kind = this
        elif this != kind:
            raise InputError(base, lineno, f"a {this} in a manifest of {kind}s")
        if kind == "supervision":
            yield _supervision(entry, entry["id"], base, lineno)
            continue
        ctype = str(entry.get("type", "MonoCut"))
        if ctype == "MixedCut" or "tracks" in entry:
            raise InputError(base, lineno, f"cut {entry.get('id')!r} is a MixedCut: score from the "
                                           "supervision manifest of its tracks")
        sups = entry.get("supervisions") or []
        if not isinstance(sups, list):
            raise InputError(base, lineno, "supervisions: expected a list")
        if not sups:
            continue
        if len(sups) > 1:
            raise InputError(base, lineno, f"cut {entry['id']!r} has {len(sups)} supervisions: "
                                           "score from the supervision manifest, or "
                                           "trim_to_supervisions first")
        yield _supervision(sups[0], entry["id"], base, lineno)


def _supervision(entry: dict, key, path: str, lineno: int) -> Supervision:
    if not isinstance(key, str) or not key or any(ch.isspace() for ch in key):
        raise InputError(path, lineno, f"bad utterance id {key!r} (one token expected)")
    text = entry.get("text")
    if text is not None and not isinstance(text, str):
        raise InputError(path, lineno, f"text of {key!r}: expected a string")
    return Supervision(key, text, entry, lineno)


def field_value(sup: Supervision, name: str, path: str) -> str:
    """The value of map field ``name`` (module docstring) of one supervision."""
    if name == "recording":
        name = "recording_id"
    if name.startswith("custom."):
        custom = sup.fields.get("custom") or {}
        value = custom.get(name[len("custom."):]) if isinstance(custom, dict) else None
    elif name in FIELDS:
        value = sup.fields.get(name)
    else:
        raise AsrprivError(f"{path}: unknown field {name!r} (speaker, recording_id, channel, "
                           "language, gender, or custom.NAME)")
    if value is None or (isinstance(value, str) and not value.strip()):
        raise InputError(path, sup.line, f"supervision {sup.key!r} has no {name}")
    text = str(value)
    if any(ch.isspace() for ch in text):
        raise InputError(path, sup.line, f"{name} {text!r} of {sup.key!r} holds white space")
    return text


def read_map(path: str, what: str = "value") -> dict[str, str]:
    """``{utterance key: FIELD}`` of ``MANIFEST[#FIELD]`` (the default field per ``what``)."""
    base, name = split_field(path)
    if name is None:
        name = DEFAULT_FIELD.get(what)
        if name is None:
            raise AsrprivError(f"{path}: name the field to map to: {path}#FIELD")
    table: dict[str, str] = {}
    for sup in iter_supervisions(base):
        if sup.key in table:
            raise InputError(base, sup.line, f"duplicate key {sup.key!r}")
        table[sup.key] = field_value(sup, name, base)
    return table


def text_lines(path: str) -> Iterator[tuple[int, str]]:
    """Kaldi text lines (``key word word ...``) of a manifest's supervisions, with their lines."""
    for sup in iter_supervisions(path):
        if sup.text is None:
            raise InputError(path, sup.line, f"supervision {sup.key!r} has no text")
        words = sup.text.split()
        yield sup.line, " ".join([sup.key, *words])
