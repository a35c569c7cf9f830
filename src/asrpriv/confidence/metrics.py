"""Word correctness labels and the standard confidence metrics.

Labels: the 1-best is aligned to the reference with sclite's alignment
(:func:`asrpriv.wer.alignment.sclite_align`, costs 3/3/4, sclite's tie-breaking); a hypothesis
word is correct when the alignment matches it (``C``), incorrect when it is a substitution or
an insertion. Deleted reference words have no hypothesis word and no confidence. Words are
compared case-folded (sclite is case-insensitive by default).

Metrics (over the N hypothesis words, n of them correct, confidences c_i):

- **NCE**, normalized cross entropy exactly as sclite computes it (SCTK ``src/sclite/scores.c``,
  ``compute_SCORE_nce``): confidences clipped to [1e-7, 1 - 1e-7];
  ``H_max = -[n log2 p_c + (N - n) log2(1 - p_c)]`` with ``p_c = n / N``;
  ``H_conf = -[sum_correct log2 c_i + sum_incorrect log2(1 - c_i)]``;
  ``NCE = (H_max - H_conf) / H_max``. 1 is perfect, 0 is no better than the constant p_c,
  negative is worse. Undefined (NaN) when all or no words are correct (H_max = 0).
- **ECE**, expected calibration error with 10 equal-width bins on [0, 1] (bin b holds
  b/10 <= c < (b+1)/10; c = 1 goes in the last bin), weighted by count:
  ``ECE = sum_b (N_b / N) |mean_conf_b - accuracy_b|``.
- **AUC**, ROC AUC of the confidence as a detector of correct words: the probability that a
  random correct word has a higher confidence than a random incorrect one, ties counting 1/2
  (Mann-Whitney U / (n (N - n)), from average ranks). NaN when one class is empty.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from asrpriv.wer.alignment import sclite_align

#: sclite's floor and ceiling of a confidence before its logarithm
NCE_FLOOR = 1e-7
NCE_CEIL = 0.9999999

ECE_BINS = 10


def word_labels(ref: Sequence[str], hyp: Sequence[str]) -> list[bool]:
    """One bool per word of ``hyp``: True where sclite's alignment to ``ref`` matches it."""
    r = [w.lower() for w in ref]
    h = [w.lower() for w in hyp]
    labels = [False] * len(h)
    if r == h:
        return [True] * len(h)
    for ev, _ri, hi in sclite_align(r, h):
        if hi >= 0 and ev == "C":
            labels[hi] = True
    return labels


def nce(conf: np.ndarray, correct: np.ndarray) -> float:
    """Normalized cross entropy (sclite's definition and clipping; log base 2)."""
    conf = np.clip(np.asarray(conf, dtype=np.float64), NCE_FLOOR, NCE_CEIL)
    correct = np.asarray(correct, dtype=bool)
    n_all = conf.size
    n_c = int(correct.sum())
    if n_all == 0 or n_c == 0 or n_c == n_all:
        return math.nan
    p_c = n_c / n_all
    h_max = -(n_c * math.log2(p_c) + (n_all - n_c) * math.log2(1.0 - p_c))
    h_conf = -(np.log2(conf[correct]).sum() + np.log2(1.0 - conf[~correct]).sum())
    return float((h_max - h_conf) / h_max)


def ece(conf: np.ndarray, correct: np.ndarray, bins: int = ECE_BINS) -> float:
    """Expected calibration error, ``bins`` equal-width bins, weighted by count."""
    conf = np.asarray(conf, dtype=np.float64)
    correct = np.asarray(correct, dtype=np.float64)
    if conf.size == 0:
        return math.nan
    idx = np.minimum((conf * bins).astype(np.int64), bins - 1)
    sum_conf = np.bincount(idx, weights=conf, minlength=bins)
    sum_acc = np.bincount(idx, weights=correct, minlength=bins)
    return float(np.abs(sum_conf - sum_acc).sum() / conf.size)


def roc_auc(conf: np.ndarray, correct: np.ndarray) -> float:
    """ROC AUC from average ranks (ties count 1/2); correct words are the positive class."""
    conf = np.asarray(conf, dtype=np.float64)
    correct = np.asarray(correct, dtype=bool)
    n_pos = int(correct.sum())
    n_neg = conf.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return math.nan
    order = np.argsort(conf, kind="mergesort")
    sorted_conf = conf[order]
    # average rank (1-based) of each run of equal values
    starts = np.flatnonzero(np.r_[True, sorted_conf[1:] != sorted_conf[:-1]])
    ends = np.r_[starts[1:], conf.size]
    avg = (starts + ends + 1) / 2.0
    ranks = np.empty(conf.size, dtype=np.float64)
    ranks[order] = np.repeat(avg, ends - starts)
    u = ranks[correct].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def summary(conf: np.ndarray, correct: np.ndarray) -> dict:
    """The metrics and the counts they rest on, as a JSON-ready dict (NaN -> None)."""
    conf = np.asarray(conf, dtype=np.float64)
    correct = np.asarray(correct, dtype=bool)
    out = {
        "words": int(conf.size),
        "correct": int(correct.sum()),
        "p_correct": float(correct.mean()) if conf.size else None,
        "mean_confidence": float(conf.mean()) if conf.size else None,
        "nce": nce(conf, correct),
        "ece": ece(conf, correct),
        "auc": roc_auc(conf, correct),
    }
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}
