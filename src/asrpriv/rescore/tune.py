"""Grid search of the rescoring weights on a dev set (``asrpriv tune-weights``).

The total score of :mod:`asrpriv.rescore.combine`,
``acoustic + lm_weight * ((1 - w) * lm + w * nnlm) + word_penalty * n_words``, is evaluated for
every point of a grid of (lm_weight, w, word_penalty) on an already rescored N-best TSV (its
score columns, so no LM runs here); each utterance's best hypothesis is compared with its
reference and the point with the fewest word errors (lowest corpus WER = errors / reference
words) wins. Ties go to the first point in grid order (lm_weight, then w, then word_penalty,
each ascending).

Word errors per hypothesis are counted once (sclite-optimal S+D+I from ``asrpriv.wer``, the
same as ``score-wer``; RapidFuzz Levenshtein when that library is absent); the grid itself is
numpy over [points, utterances, hypotheses] arrays, so thousands of points take seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from asrpriv.errors import AsrprivError, InputError, arg
from asrpriv.io.nbest import NbestReader
from asrpriv.rescore.combine import Weights
from asrpriv.rescore.pipeline import Layout, _first_pass_rank, _float


def _error_counter():
    try:
        from asrpriv.wer.alignment import count_errors

        return lambda ref, hyp: sum(count_errors(ref, hyp))
    except ImportError:  # pragma: no cover - the project's library is there
        from rapidfuzz.distance import Levenshtein

        return lambda ref, hyp: Levenshtein.distance(ref, hyp)


def parse_grid(text: str, name: str) -> list[float]:
    """``START:STOP:STEP`` (STOP included), ``a,b,c``, or one number -> sorted distinct values."""
    text = text.strip()
    try:
        if ":" in text:
            parts = [float(x) for x in text.split(":")]
            if len(parts) != 3:
                raise ValueError
            start, stop, step = parts
            if not all(math.isfinite(x) for x in parts):
                raise AsrprivError(f"{name}: expected finite numbers, got {text!r}")
            if step <= 0 or stop < start:
                raise AsrprivError(f"{name}: expected START:STOP:STEP with STEP > 0 and STOP >= START")
            span = (stop - start) / step
            if not span < 100000:  # also catches an overflow to inf
                raise AsrprivError(f"{name}: {span:.3g} values is too many")
            count = int(math.floor(span + 1e-9)) + 1
            values = [round(start + i * step, 10) for i in range(count)]
        else:
            values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise AsrprivError(f"{name}: expected START:STOP:STEP or a comma-separated list, got {text!r}") from None
    if not values or any(not math.isfinite(v) for v in values):
        raise AsrprivError(f"{name}: expected finite numbers, got {text!r}")
    return sorted(set(values))


@dataclass
class TuneData:
    """Per-utterance arrays, padded to the longest N-best list ([U, N]).

    ``acoustic``, ``lm``, ``nnlm``: score parts (natural log; ``lm``/``nnlm`` None when the TSV
    has no such score); ``n_words``; ``errors`` (word errors against the reference); ``valid``
    marks real hypotheses. Hypotheses are in first-pass order, so ``argmax`` breaks ties as
    ``rescore-nbest`` does.
    """

    utt_ids: list[str]
    acoustic: np.ndarray
    lm: np.ndarray | None
    nnlm: np.ndarray | None
    n_words: np.ndarray
    errors: np.ndarray
    valid: np.ndarray
    ref_words: int
    layout: Layout

    def first_pass_errors(self) -> int:
        """Errors of the first-pass best (first_pass_rank 1, the first row of each utterance)."""
        return int(self.errors[:, 0].sum())


def load_tune_data(path: str | None, refs: dict[str, list[str]], warn=None) -> TuneData:
    """Read a rescored N-best TSV and count each hypothesis' errors against ``refs``."""
    reader = NbestReader(path)
    layout = Layout(reader.columns, nnlm=False, ngram=False, reuse_scores=True)
    if not (layout.has_lm or layout.has_nnlm):
        raise InputError(path, 1, "no LM score column (nnlm_score, ngram_score or lm_score): "
                                  "tune on the output of rescore-nbest")
    count = _error_counter()
    utt_ids: list[str] = []
    rows: list[list[tuple]] = []
    ref_words = 0
    for utt in reader:
        ref = refs.get(utt.utt_id)
        if ref is None:
            raise InputError(path, utt.hyps[0].lineno, f"utterance {utt.utt_id!r} has no reference")
        ref_words += len(ref)
        items = []
        for h in utt.hyps:
            fpr = _first_pass_rank(reader, layout, h)
            if layout.acoustic:
                ac = _float(path, h.lineno, layout.acoustic, h.values[layout.index[layout.acoustic]])
            else:
                ac = -(fpr - 1.0)
            lm = (_float(path, h.lineno, layout.lm_from, h.values[layout.index[layout.lm_from]])
                  if layout.lm_from else 0.0)
            nn = (_float(path, h.lineno, layout.nnlm_from, h.values[layout.index[layout.nnlm_from]])
                  if layout.nnlm_from else 0.0)
            items.append((fpr, ac, lm, nn, len(h.words), count(ref, h.words)))
        items.sort(key=lambda t: t[0])
        utt_ids.append(utt.utt_id)
        rows.append(items)
    if not rows:
        raise InputError(path, None, "empty input: expected N-best rows")
    extra = len(set(refs) - set(utt_ids))
    if extra and warn is not None:
        warn(f"{extra} reference utterance(s) not in the N-best list were left out of the WER")
    u, n = len(rows), max(len(r) for r in rows)
    arr = np.zeros((5, u, n), dtype=np.float64)
    valid = np.zeros((u, n), dtype=bool)
    for i, items in enumerate(rows):
        block = np.array([t[1:] for t in items], dtype=np.float64).T  # [5, m]
        arr[:, i, :len(items)] = block
        valid[i, :len(items)] = True
    return TuneData(utt_ids, arr[0], arr[1] if layout.has_lm else None,
                    arr[2] if layout.has_nnlm else None, arr[3], arr[4].astype(np.int64), valid,
                    ref_words, layout)


def grid_errors(data: TuneData, lm_weights: Sequence[float], nnlm_weights: Sequence[float],
                word_penalties: Sequence[float]) -> np.ndarray:
    """Word errors of the 1-best at every grid point: int array [len(lm), len(w), len(wp)]."""
    wp = np.asarray(word_penalties, dtype=np.float64)
    out = np.zeros((len(lm_weights), len(nnlm_weights), len(wp)), dtype=np.int64)
    invalid = ~data.valid
    pen = wp[:, None, None] * data.n_words[None]  # [P, U, N]
    rows = np.arange(data.errors.shape[0])[None, :]
    for a, lw in enumerate(lm_weights):
        for b, w in enumerate(nnlm_weights):
            if data.lm is not None and data.nnlm is not None:
                lm_part = (1.0 - w) * data.lm + w * data.nnlm
            elif data.nnlm is not None:
                lm_part = data.nnlm
            else:
                lm_part = data.lm
            base = data.acoustic + lw * lm_part
            base = np.where(invalid, -np.inf, base)
            total = base[None] + pen
            best = np.argmax(total, axis=2)  # first max = best first-pass rank among ties
            out[a, b] = data.errors[rows, best].sum(axis=1)
    return out


@dataclass
class TuneResult:
    """The winning weights, their errors, and the whole grid's errors."""

    weights: Weights
    errors: int
    ref_words: int
    first_pass_errors: int
    grid: np.ndarray
    lm_weights: list[float]
    nnlm_weights: list[float]
    word_penalties: list[float]

    @property
    def wer(self) -> float:
        return 100.0 * self.errors / max(self.ref_words, 1)

    @property
    def first_pass_wer(self) -> float:
        return 100.0 * self.first_pass_errors / max(self.ref_words, 1)


def tune(data: TuneData, lm_weights: Sequence[float], nnlm_weights: Sequence[float],
         word_penalties: Sequence[float]) -> TuneResult:
    """Grid search for the fewest errors (first point in grid order among ties).

    Without an NNLM score column the w axis is collapsed to 0; without an n-gram/first-pass LM
    column, to 1 (w has no effect then).
    """
    if data.nnlm is None:
        nnlm_weights = [0.0]
    elif data.lm is None:
        nnlm_weights = [1.0]
    grid = grid_errors(data, lm_weights, nnlm_weights, word_penalties)
    flat = int(np.argmin(grid))  # first minimum in C order = grid order
    a, b, c = np.unravel_index(flat, grid.shape)
    weights = Weights(float(lm_weights[a]), float(nnlm_weights[b]), float(word_penalties[c]))
    return TuneResult(weights, int(grid[a, b, c]), data.ref_words, data.first_pass_errors(), grid,
                      list(lm_weights), list(nnlm_weights), list(word_penalties))


@dataclass
class TuneOutcome:
    """What ``tune-weights`` found (:class:`TuneResult`), the utterances tuned on, and the
    grids as parsed (lm_weight, w, word_penalty)."""

    result: TuneResult
    utterances: int
    lm_grid: list[float]
    nnlm_grid: list[float]
    penalty_grid: list[float]
    #: whether the scores hold an NNLM column (w is tuned); without one w is not talked about
    has_nnlm: bool = True

    @property
    def edge(self) -> list[str]:
        """The weights whose chosen value lies on the edge of their grid (the rule of
        :func:`asrpriv.io.select.on_grid_edge`, shared with ``pick-best``)."""
        from asrpriv.io.select import on_grid_edge

        w = self.result.weights
        return [name for name, grid, value in (("lm_weight", self.lm_grid, w.lm_weight),
                                               ("word_penalty", self.penalty_grid, w.word_penalty))
                if value in grid and on_grid_edge(grid.index(value), len(grid))]

    def summary(self) -> str:
        """The line ``tune-weights`` says on stderr (no nnlm_weight without an NNLM score)."""
        r, w = self.result, self.result.weights
        share = f" nnlm_weight={w.nnlm_weight:g}" if self.has_nnlm else ""
        return (f"tune-weights: {r.grid.size} grid points on {self.utterances} utterances: "
                f"WER {r.wer:.2f}% (first pass {r.first_pass_wer:.2f}%) at "
                f"lm_weight={w.lm_weight:g}{share} word_penalty={w.word_penalty:g}")

    def edge_warning(self) -> str | None:
        """The warning when a chosen weight lies on its grid's edge (else None)."""
        edge = self.edge
        return (f"best {' and '.join(edge)} on the edge of the grid: consider widening it"
                if edge else None)


@dataclass
class TuneSettings:
    """The settings of ``tune-weights``: the scored N-best TSV ``nbest`` (``-``: stdin), the
    references ``ref`` (Kaldi text), the three grids (START:STOP:STEP, a,b,c or one value) and
    ``output`` (the weights file; ``-``: stdout, None: not written)."""

    nbest: str = "-"
    ref: str = "-"
    lm_weights: str = "0:20:0.5"
    nnlm_weights: str = "0:1:0.1"
    word_penalties: str = "-10:10:0.5"
    output: str | None = "-"


def tune_weights(s: TuneSettings, warn=None) -> TuneOutcome:
    """The step ``tune-weights``: the grid point with the fewest 1-best word errors against
    the references, written as a weights file for ``rescore-nbest --weights``."""
    return tune_files(s.nbest, s.ref, s.lm_weights, s.nnlm_weights, s.word_penalties, s.output,
                      warn=warn)


def tune_files(nbest: str, ref: str, lm_weights: str = "0:20:0.5",
               nnlm_weights: str = "0:1:0.1", word_penalties: str = "-10:10:0.5",
               output: str | None = "-", warn=None) -> TuneOutcome:
    """:func:`tune_weights` on plain arguments: the grid point (START:STOP:STEP, a,b,c or one
    value per weight) with the fewest 1-best word errors against ``ref`` (Kaldi text), written
    as a weights file to ``output`` (None: not written) for ``rescore-nbest --weights``."""
    from asrpriv.io.kaldi import read_text
    from asrpriv.io.output import open_output
    from asrpriv.rescore.combine import write_weights

    if warn is None:
        from asrpriv.talk import warn
    lw = parse_grid(lm_weights, arg("lm_weights"))
    ws = parse_grid(nnlm_weights, arg("nnlm_weights"))
    wp = parse_grid(word_penalties, arg("word_penalties"))
    if any(not 0.0 <= w <= 1.0 for w in ws):
        raise AsrprivError(f"{arg('nnlm_weights')}: values must lie in [0, 1]")
    if nbest == "-" and ref == "-":
        raise AsrprivError("the N-best list and the references cannot both come from standard input")
    refs = read_text(ref)
    data = load_tune_data(nbest, refs, warn=warn)
    result = tune(data, lw, ws, wp)
    meta = {
        "wer": f"{result.wer:.4f}",
        "errors": str(result.errors),
        "ref_words": str(result.ref_words),
        "utterances": str(len(data.utt_ids)),
        "first_pass_wer": f"{result.first_pass_wer:.4f}",
        "grid_lm_weight": lm_weights,
        "grid_nnlm_weight": ",".join(f"{w:g}" for w in result.nnlm_weights)
        if len(result.nnlm_weights) == 1 else nnlm_weights,
        "grid_word_penalty": word_penalties,
        "grid_points": str(result.grid.size),
        "scores": data.layout.describe(),
    }
    if output is not None:
        with open_output(output) as out:
            write_weights(out, result.weights, meta)
    return TuneOutcome(result, len(data.utt_ids), lw, ws, wp,
                       has_nnlm=data.layout.nnlm_from is not None)
