"""ESPnet (espnet2) decoding directories: ``1best_recog/``, ``2best_recog/``, ...

``asr_inference.py --nbest N`` writes, for rank ``n``, a folder ``{n}best_recog`` holding
Kaldi-style tables keyed by utterance id: ``text`` (``utt_id words...``), ``token``,
``token_int`` and ``score`` (``utt_id value``, written as ``str(hyp.score)``, so a float or
a tensor repr such as ``tensor(-12.34)`` / ``tensor(-12.34, device='cuda:0')``).
``hyp.score`` is the beam search's total: the weighted sum of the decoder, CTC, LM (natural-log
probabilities from ``log_softmax``) and length-bonus scores, natural log, higher is better.
It becomes our ``score`` column; ranks come from the folder names.

``asr.sh`` (egs2/TEMPLATE/asr1/asr.sh, espnet/espnet commit 004c30cf, "Stage 12: Decoding")
splits the keys over ``inference_nj`` jobs (``utils/split_scp.pl``), runs
``asr_inference --output_dir ${_dir}/logdir/output.JOB`` and then merges only
``1best_recog`` into ``${_dir}``: the N-best lists stay per job under
``${_dir}/logdir/output.J/{n}best_recog/``. PATH may be ``${_dir}`` (it has ``logdir/``),
``logdir`` (it has ``output.1/``, ...), or one ``output.J``/decoding folder holding
``1best_recog/``; job folders are merged in job order (an utterance in two jobs is an
error). When ``${_dir}`` has ``logdir/output.*``, those are read (its own ``1best_recog``
copy is only the 1-best).

Utterances are written in the order of ``1best_recog/text``; an utterance may have fewer
ranks than others (a rank folder without it). A rank folder holding an id that
``1best_recog`` lacks is an error. The folders are read whole (a few MB per thousand
utterances), not streamed.
"""

from __future__ import annotations

import os
import re
from typing import Iterator

from asrpriv.errors import AsrprivError, InputError
from asrpriv.io.importers.common import NbestTable, Row, check_id, parse_float
from asrpriv.io.lines import iter_lines

_RANK_DIR = re.compile(r"^([1-9][0-9]*)best_recog$")
_TENSOR = re.compile(r"^tensor\(\s*([^,)]+?)\s*(,.*)?\)$")


def parse_score(text: str, path: str, line: int) -> float:
    """``-12.3``, ``tensor(-12.3)`` or ``tensor(-12.3, device='cuda:0')`` -> float."""
    m = _TENSOR.match(text)
    return parse_float(m.group(1) if m else text, path, line, "score")


def _table(path: str, single: bool) -> dict[str, tuple[int, str]]:
    out: dict[str, tuple[int, str]] = {}
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        if line[0].isspace():
            raise InputError(path, lineno, "line without an utterance id (it starts with white space)")
        parts = line.split(None, 1)
        key, rest = parts[0], (parts[1].strip() if len(parts) > 1 else "")
        if key in out:
            raise InputError(path, lineno, f"duplicate utterance id {key!r}")
        if single and not rest:
            raise InputError(path, lineno, "expected 'utt_id score'")
        out[key] = (lineno, rest)
    return out


def rank_dirs(path: str) -> list[tuple[int, str]]:
    if not os.path.isdir(path):
        raise AsrprivError(f"{path}: expected an ESPnet decoding directory holding 1best_recog/, 2best_recog/, ...")
    found = sorted((int(m.group(1)), os.path.join(path, name))
                   for name in os.listdir(path) if (m := _RANK_DIR.match(name))
                   and os.path.isdir(os.path.join(path, name)))
    if not found or found[0][0] != 1:
        raise AsrprivError(f"{path}: no 1best_recog/ folder (ESPnet writes one per rank: 1best_recog, 2best_recog, ...)")
    return found


_JOB_DIR = re.compile(r"^output\.([1-9][0-9]*)$")


def job_dirs(path: str) -> list[str]:
    """``output.J`` folders of asr.sh under ``path`` or ``path/logdir``, by job (empty if none)."""
    for base in (os.path.join(path, "logdir"), path):
        if not os.path.isdir(base):
            continue
        found = sorted((int(m.group(1)), os.path.join(base, n)) for n in os.listdir(base)
                       if (m := _JOB_DIR.match(n)) and os.path.isdir(os.path.join(base, n)))
        if found:
            return [d for _j, d in found]
    return []


def read(path: str, **_ignored) -> NbestTable:
    if not os.path.isdir(path):
        raise AsrprivError(f"{path}: expected an ESPnet decoding directory holding 1best_recog/, "
                           "2best_recog/, ... (or asr.sh's logdir/output.J/ job folders)")
    jobs = job_dirs(path)
    if not jobs:
        return NbestTable(["score"], _rows(*_read_job(path)))
    plans = [_read_job(d) for d in jobs]  # every job's tables checked before the first line
    return NbestTable(["score"], _merged(plans))


def _merged(plans) -> Iterator[Row]:
    earlier: set[str] = set()
    for order, ranks in plans:
        for utt in order:
            if utt in earlier:
                raise InputError(ranks[0][1], ranks[0][2][utt][0],
                                 f"utterance {utt!r} is also in an earlier job's output")
        yield from _rows(order, ranks)
        earlier.update(order)


def _read_job(path: str):
    ranks = []
    for n, d in rank_dirs(path):
        text_path, score_path = os.path.join(d, "text"), os.path.join(d, "score")
        for p in (text_path, score_path):
            if not os.path.exists(p):
                raise AsrprivError(f"{p}: no such file (each NbestN_recog folder needs text and score)")
        ranks.append((n, text_path, _table(text_path, False), score_path, _table(score_path, True)))
    order = list(ranks[0][2])
    known = set(order)
    for n, text_path, texts, score_path, scores in ranks:
        for key in texts.keys() - scores.keys():
            raise InputError(text_path, texts[key][0], f"utterance {key!r} has no score in {score_path}")
        for key in scores.keys() - texts.keys():
            raise InputError(score_path, scores[key][0], f"utterance {key!r} has no text in {text_path}")
        for key in texts.keys() - known:
            raise InputError(text_path, texts[key][0], f"utterance {key!r} is not in 1best_recog/text")
    return order, ranks


def _rows(order, ranks) -> Iterator[Row]:
    for utt in order:
        for n, text_path, texts, score_path, scores in ranks:
            if utt not in texts:
                continue
            lineno, text = texts[utt]
            check_id(utt, text_path, lineno)
            sline, svalue = scores[utt]
            yield Row(utt, n, text, {"score": parse_score(svalue, score_path, sline)},
                      where=(text_path, lineno))
