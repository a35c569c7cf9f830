"""NVIDIA NeMo beam-search outputs, keyed by the input manifest.

Two files NeMo leaves:

* The beams file of ``scripts/asr_language_modeling/ngram_lm/eval_beamsearch_ngram*.py``
  (``preds_output_folder/preds_out_width{W}_alpha{a}_beta{b}.tsv``): no header, one line per
  candidate, ``text<TAB>score``, ``W`` lines per utterance (best first), utterances in the
  order of the input manifest. NeMo's own ``eval_neural_rescorer.py`` reads it the same way
  (``beam_size`` consecutive lines per manifest entry). ``score`` is the beam search's total
  (acoustic log-probability plus ``alpha`` x n-gram log-probability plus ``beta`` x words;
  NeMo's CTC beam decoders return natural log): our ``score`` column, rank = position in
  the block. The manifest (``manifest=``, JSON lines with ``audio_filepath``) names the
  utterances; ``beam_size`` is inferred (lines / manifest entries) unless given.
* A predictions manifest of ``transcribe_speech.py`` (JSON lines with ``pred_text``): the
  1-best only (rank 1, no score); no ``manifest=`` needed.

Utterance ids: the manifest field ``id_field`` when given, else the file name of
``audio_filepath`` without its extension (NeMo manifests have no id field of their own).
"""

from __future__ import annotations

import os
from typing import Iterator

from asrpriv.errors import AsrprivError, InputError, arg
from asrpriv.io.importers.common import NbestTable, Row, check_id, parse_float
from asrpriv.io.jsontext import parse_json
from asrpriv.io.lines import iter_lines


def manifest_id(entry: dict, id_field: str | None, path: str | None, line: int) -> str:
    """The utterance id of a manifest entry (see the module docstring)."""
    if id_field:
        if id_field not in entry:
            raise InputError(path, line, f"no field {id_field!r} in this manifest entry")
        return check_id(str(entry[id_field]), path, line)
    audio = entry.get("audio_filepath")
    if not isinstance(audio, str) or not audio:
        raise InputError(path, line, f"no audio_filepath to name the utterance (give {arg('id_field')})")
    return check_id(os.path.splitext(os.path.basename(audio))[0], path, line)


def iter_manifest(path: str | None, lines=None) -> Iterator[tuple[int, dict]]:
    """``(line, entry)`` of a JSON-lines manifest (``lines``: numbered lines already read);
    blank lines are skipped."""
    for lineno, line in (iter_lines(path) if lines is None else lines):
        if not line.strip():
            continue
        entry = parse_json(line, path, lineno, "a JSON object")
        if not isinstance(entry, dict):
            raise InputError(path, lineno, "not a JSON object")
        yield lineno, entry


def _first_char(path: str) -> str:
    for _lineno, line in iter_lines(path):
        if line.strip():
            return line.lstrip()[0]
    raise InputError(path, None, "empty input: expected NeMo beams or a predictions manifest")


def read(path: str, manifest: str | None = None, id_field: str | None = None,
         beam_size: int | None = None, **_ignored) -> NbestTable:
    if _first_char(path) == "{":
        return NbestTable([], _manifest_rows(path, id_field))
    if manifest is None:
        raise AsrprivError(f"{path}: NeMo beams (text<TAB>score lines) need the input manifest: {arg('manifest')} FILE")
    ids: list[tuple[str, int]] = []
    seen: dict[str, int] = {}
    for lineno, entry in iter_manifest(manifest):
        utt = manifest_id(entry, id_field, manifest, lineno)
        if utt in seen:
            raise InputError(manifest, lineno, f"duplicate utterance id {utt!r} (first on line {seen[utt]}; "
                                               f"give {arg('id_field')})")
        seen[utt] = lineno
        ids.append((utt, lineno))
    if not ids:
        raise InputError(manifest, None, "empty manifest")
    n_lines = sum(1 for _ in iter_lines(path))
    if beam_size is None:
        if n_lines % len(ids):
            raise InputError(path, None, f"{n_lines} lines are not a whole number of beams for "
                                         f"{len(ids)} manifest entries (give {arg('beam_size')})")
        beam_size = n_lines // len(ids)
    if n_lines != beam_size * len(ids):
        raise InputError(path, None, f"{n_lines} lines, expected {beam_size} x {len(ids)} manifest entries")
    return NbestTable(["score"], _beam_rows(path, ids, beam_size))


def _beam_rows(path: str, ids: list[tuple[str, int]], beam_size: int) -> Iterator[Row]:
    for lineno, line in iter_lines(path):
        if "\t" not in line:
            raise InputError(path, lineno, "expected 'text<TAB>score' (a NeMo beams file)")
        text, score = line.rsplit("\t", 1)
        utt = ids[(lineno - 1) // beam_size][0]
        yield Row(utt, (lineno - 1) % beam_size + 1, text,
                  {"score": parse_float(score.strip(), path, lineno, "score")}, where=(path, lineno))


def _manifest_rows(path: str, id_field: str | None) -> Iterator[Row]:
    for lineno, entry in iter_manifest(path):
        if "pred_text" not in entry:
            raise InputError(path, lineno, "no pred_text in this manifest entry")
        utt = manifest_id(entry, id_field, path, lineno)
        yield Row(utt, 1, str(entry["pred_text"]), where=(path, lineno))
