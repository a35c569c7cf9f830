"""The ``asrpriv confidence`` pipeline: N-best TSV in, the same TSV with a ``confidence`` column out.

Per utterance (rows of one utterance are contiguous; its rank-1 row is the 1-best):

1. first-pass totals T_h (natural log), from ``--total``:
   ``score`` (the column as is; for a ``rescore-nbest`` output that is the second-pass total),
   ``am-lm`` (``am_score + lm_weight * lm_score + word_penalty * n_words``, the total of
   :class:`asrpriv.rescore.combine.Weights` with no NNLM; without ``lm_score``, the LM term is
   dropped), ``rank`` (the rank prior ``-(rank - 1)`` of ``rescore-nbest`` for lists without
   scores: P(h) is then a geometric kernel of the rank, ``exp(-S (rank-1))`` normalized), or
   ``auto`` (``score`` if the column exists, else ``am-lm`` if ``am_score`` exists, else an
   error: a rank-only list gets confidences only when asked for explicitly);
2. posteriors and word confidences (:mod:`asrpriv.confidence.posteriors`) for every row,
   rounded to the written precision;
3. optionally a calibration map (:mod:`asrpriv.confidence.calibration`), applied to every row,
   or fitted on this input's 1-best words against references first;
4. with references, metrics of the 1-best words (:mod:`asrpriv.confidence.metrics`), raw and,
   when calibrated, calibrated.

Without ``fit`` the input streams (memory: one utterance plus the 1-best confidences and labels
for the metrics); fitting holds the rows until the map is fitted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import IO, Callable

import numpy as np

from asrpriv.confidence import metrics
from asrpriv.confidence.calibration import Calibration, fit_isotonic
from asrpriv.confidence.posteriors import (DECIMALS, agreement_matrices, format_confidences,
                                           softmax_posteriors, word_confidences)
from asrpriv.errors import AsrprivError, InputError, arg
from asrpriv.io.nbest import NbestReader, write_header
from asrpriv.rescore.combine import DEFAULT_LM_WEIGHT, DEFAULT_WORD_PENALTY, Weights

TOTALS = ("auto", "score", "am-lm", "rank")


@dataclass
class Settings:
    """How the hypothesis posteriors are made."""

    scale: float = 0.15
    total: str = "auto"
    lm_weight: float = DEFAULT_LM_WEIGHT
    word_penalty: float = DEFAULT_WORD_PENALTY

    def as_dict(self, resolved_total: str) -> dict:
        out = {"scale": self.scale, "total": resolved_total}
        if resolved_total == "am-lm":
            out.update(lm_weight=self.lm_weight, word_penalty=self.word_penalty)
        return out


@dataclass
class Outcome:
    """What a run did: counts, settings, metrics (when references were given), the fitted map."""

    utterances: int = 0
    hypotheses: int = 0
    settings: dict = field(default_factory=dict)
    raw: dict | None = None
    calibrated: dict | None = None
    calibration: Calibration | None = None
    calibration_in_sample: bool = False
    extra_references: int = 0

    def notes(self) -> list[str]:
        """What ``confidence`` says on stderr: the counts and settings, then the metrics of
        the rank-1 words (raw, and calibrated when a calibration was applied)."""
        lines = [f"confidence: {self.utterances} utterances, {self.hypotheses} hypotheses "
                 f"({', '.join(f'{k} {v}' for k, v in self.settings.items())})"]
        for name, m in (("raw", self.raw), ("calibrated", self.calibrated)):
            if m is not None:
                lines.append(f"{name}: {m['words']} rank-1 words, {m['correct']} correct; "
                             f"NCE {_fmt(m['nce'])}, ECE {_fmt(m['ece'])}, AUC {_fmt(m['auc'])}")
        return lines

    def report(self) -> dict:
        out = {"utterances": self.utterances, "hypotheses": self.hypotheses,
               "settings": self.settings}
        if self.raw is not None:
            out["raw"] = self.raw
        if self.calibrated is not None:
            out["calibrated"] = self.calibrated
            out["calibration_in_sample"] = self.calibration_in_sample
        out["metrics"] = ("NCE: sclite's (log2, confidences clipped to [1e-7, 1-1e-7]); "
                          "ECE: 10 equal-width bins weighted by count; AUC: ROC AUC, correct "
                          "words positive; over the rank-1 words, labels from sclite's alignment "
                          "to the reference")
        return out


def resolve_total(reader: NbestReader, total: str) -> str:
    """The total actually used for ``--total`` on this header (errors name the missing column)."""
    cols = reader.index
    if total == "auto":
        if "score" in cols:
            return "score"
        if "am_score" in cols:
            return "am-lm"
        raise InputError(reader.path, 1, "no score column (score, or am_score and lm_score): "
                                         "posteriors need first-pass scores; for a rank-only list "
                                         f"use {arg('total')} rank (the rank prior -(rank-1))")
    if total == "score" and "score" not in cols:
        raise InputError(reader.path, 1, f"{arg('total')} score needs a 'score' column")
    if total == "am-lm" and "am_score" not in cols:
        raise InputError(reader.path, 1, f"{arg('total')} am-lm needs an 'am_score' column "
                                         "(and lm_score for the LM term)")
    return total


def _totals(reader: NbestReader, utt, total: str, weights: Weights) -> list[float]:
    if total == "rank":
        return [-(h.rank - 1.0) for h in utt.hyps]
    if total == "score":
        i = reader.index["score"]
        values = [float(h.values[i]) for h in utt.hyps]
    else:
        i_am = reader.index["am_score"]
        i_lm = reader.index.get("lm_score")
        values = [weights.total(float(h.values[i_am]),
                                float(h.values[i_lm]) if i_lm is not None else None, None, len(h.words))
                  for h in utt.hyps]
    for h, v in zip(utt.hyps, values):
        if not math.isfinite(v):
            raise InputError(reader.path, h.lineno, f"first-pass total is {v} (scores must be finite)")
    return values


def _round(values: np.ndarray) -> np.ndarray:
    return np.round(values, DECIMALS)


def run(path: str | None, out: IO[str], settings: Settings, refs: dict[str, list[str]] | None = None,
        ref_path: str | None = None, calibration: Calibration | None = None, fit: bool = False,
        fit_meta: dict | None = None, warn: Callable[[str], None] | None = None,
        progress=None) -> Outcome:
    """Read the N-best TSV at ``path``, write it with confidences to ``out``; return the outcome.

    Args:
        refs: ``{utt_id: words}``; every utterance of the input needs one (metrics, fitting).
        calibration: a map applied to every confidence (mutually exclusive with ``fit``).
        fit: fit an isotonic map on this input's 1-best words (needs ``refs``), apply it.
    """
    if fit and refs is None:
        raise AsrprivError(f"fitting a calibration needs {arg('reference')}")
    if fit and calibration is not None:
        raise AsrprivError(f"{arg('calibration')} and {arg('fit_calibration')} exclude each other")
    if not (settings.scale > 0 and math.isfinite(settings.scale)):
        raise AsrprivError(f"{arg('scale')} must be a positive number, got {settings.scale}")
    reader = NbestReader(path)
    total = resolve_total(reader, settings.total)
    weights = Weights(lm_weight=settings.lm_weight, nnlm_weight=0.0, word_penalty=settings.word_penalty)
    outcome = Outcome(settings=settings.as_dict(total))
    columns = list(reader.columns)
    i_conf = reader.index.get("confidence")
    if i_conf is None:
        columns.append("confidence")
    write_header(out, columns)

    best_conf: list[np.ndarray] = []
    best_labels: list[list[bool]] = []
    held: list[tuple[list, list[np.ndarray]]] = []  # (hyps, confidences) while fitting
    seen: set[str] = set()

    def emit(hyps, confs):
        # rows in input order (the reader sorts an utterance's hypotheses by rank)
        for h, c in sorted(zip(hyps, confs), key=lambda pair: pair[0].lineno):
            row = list(h.values)
            field_ = format_confidences(c)
            if i_conf is None:
                row.append(field_)
            else:
                row[i_conf] = field_
            out.write("\t".join(row) + "\n")

    for utt in reader:
        outcome.utterances += 1
        outcome.hypotheses += len(utt.hyps)
        post = softmax_posteriors(_totals(reader, utt, total, weights), settings.scale)
        confs = [_round(c) for c in word_confidences(agreement_matrices([h.words for h in utt.hyps]), post)]
        if refs is not None:
            ref = refs.get(utt.utt_id)
            if ref is None:
                raise InputError(ref_path, None, f"no reference for utterance {utt.utt_id!r} "
                                                 f"({_name(path)} line {utt.hyps[0].lineno})")
            seen.add(utt.utt_id)
            best_conf.append(confs[0])
            best_labels.append(metrics.word_labels(ref, utt.hyps[0].words))
        if fit:
            held.append((utt.hyps, confs))
            continue
        if calibration is not None:
            confs = [_round(calibration.apply(c)) for c in confs]
        emit(utt.hyps, confs)
        if progress is not None:
            progress.update(1)
    if outcome.utterances == 0:
        raise InputError(path, None, "empty input: expected N-best rows after the header")

    if refs is not None:
        outcome.extra_references = len(set(refs) - seen)
        if outcome.extra_references and warn is not None:
            warn(f"{outcome.extra_references} reference utterance(s) are not in the N-best list "
                 "(left out of the metrics)")
        raw = np.concatenate(best_conf) if best_conf else np.zeros(0)
        labels = np.fromiter((x for lab in best_labels for x in lab), dtype=bool, count=raw.size)
        outcome.raw = metrics.summary(raw, labels)
        if fit:
            meta = dict(outcome.settings)
            meta.update(fit_meta or {})
            calibration = fit_isotonic(raw, labels, meta)
            outcome.calibration = calibration
            outcome.calibration_in_sample = True
        if calibration is not None:
            outcome.calibrated = metrics.summary(_round(calibration.apply(raw)), labels)
    if fit:
        for hyps, confs in held:
            emit(hyps, [_round(calibration.apply(c)) for c in confs])
            if progress is not None:
                progress.update(1)
    return outcome


def _name(path: str | None) -> str:
    return "<stdin>" if path in (None, "-") else str(path)


@dataclass
class ConfidenceSettings:
    """The settings of ``confidence``: posteriors from ``scale`` x the total score chosen by
    ``total`` (:class:`Settings`); ``reference`` (Kaldi text) for metrics and fitting;
    ``calibration`` a map to apply, ``fit_calibration`` a file to write the map fitted here;
    ``report`` a JSON report; ``output`` the N-best TSV with a confidence column."""

    input: str = "-"
    scale: float = 0.15
    total: str = "auto"
    lm_weight: float = DEFAULT_LM_WEIGHT
    word_penalty: float = DEFAULT_WORD_PENALTY
    reference: str | None = None
    report: str | None = None
    calibration: str | None = None
    fit_calibration: str | None = None
    output: str = "-"


def confidence(s: ConfidenceSettings, warn: Callable[[str], None] | None = None,
               progress=None) -> Outcome:
    """The step ``confidence``: word confidences from N-best posteriors, metrics against the
    references (NCE, ECE, AUC), calibration applied or fitted; files written, outcome returned."""
    import json

    from asrpriv.confidence.calibration import read_calibration, write_calibration
    from asrpriv.errors import display_name
    from asrpriv.io.kaldi import read_text
    from asrpriv.io.output import open_output

    if warn is None:
        from asrpriv.talk import warn
    if s.report is not None and s.reference is None:
        raise AsrprivError(f"{arg('report')} needs {arg('reference')}")
    if s.fit_calibration is not None and s.reference is None:
        raise AsrprivError(f"{arg('fit_calibration')} needs {arg('reference')}")
    if s.fit_calibration is not None and s.calibration is not None:
        raise AsrprivError(f"{arg('calibration')} and {arg('fit_calibration')} exclude each other")
    if "-" in (s.report, s.fit_calibration):
        raise AsrprivError(f"{arg('report')} and {arg('fit_calibration')} need a file name (stdout carries the TSV)")
    if sum(p == "-" for p in (s.input, s.reference, s.calibration)) > 1:
        raise AsrprivError("only one input can be standard input ('-')")
    if s.total not in ("auto", "score", "am-lm", "rank"):
        raise AsrprivError(f"{arg('total')} must be auto, score, am-lm or rank, got {s.total!r}")
    settings = Settings(scale=s.scale, total=s.total, lm_weight=s.lm_weight,
                        word_penalty=s.word_penalty)
    refs = read_text(s.reference) if s.reference is not None else None
    calibration = read_calibration(s.calibration) if s.calibration is not None else None
    with open_output(s.output) as out:
        outcome = run(s.input, out, settings, refs=refs, ref_path=s.reference,
                      calibration=calibration, fit=s.fit_calibration is not None,
                      fit_meta={"fit_on": display_name(s.input)}, warn=warn, progress=progress)
    if calibration is not None:
        differ = [f"{k} {calibration.meta[k]} (now {v})" for k, v in outcome.settings.items()
                  if k in calibration.meta and calibration.meta[k] != v]
        if differ:
            warn(f"{s.calibration} was fitted on confidences made with other settings: "
                 f"{', '.join(differ)}")
    if s.fit_calibration is not None:
        with open_output(s.fit_calibration) as f:
            write_calibration(f, outcome.calibration)
    if s.report is not None:
        with open_output(s.report) as f:
            json.dump(outcome.report(), f, indent=1)
            f.write("\n")
    return outcome


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"
