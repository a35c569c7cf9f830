"""Confidence-weighted LM losses of paper 001 (Liu et al.), Eq. 2-4 (no torch here).

For transcript j with targets v*_{j,1..T_j} (its words then ``</s>``, so T_j = n_j + 1) and
token confidences c_{j,t}, the batch loss over n_b transcripts is (natural log)

    Eq. 2 (none):        L = -(1/n_b) sum_j (1/T_j) sum_t            log p_{j,t}
    Eq. 3 (utterance):   L = -(1/n_b) sum_j (c_j/T_j) sum_t          log p_{j,t}
    Eq. 4 (token):       L = -(1/n_b) sum_j (1/T_j) sum_t  c_{j,t}    log p_{j,t}

with the utterance confidence c_j = mean of the word confidences. Hard thresholding
(``hard:C``) drops every transcript with c_j < C before training and then uses Eq. 2.

Where the paper is silent: the ``</s>`` target, which has no confidence of its own, gets the
utterance confidence c_j in Eq. 4; an utterance with no words has c_j = 1. With
``loss_norm="token"`` the per-transcript 1/T_j and the 1/n_b become one 1/sum_j T_j (a
token-mean loss, the usual choice for training from scratch).

All of this is expressed as one weight per target, :func:`target_weights`, so that the training
loop computes ``sum(weight * nll) / denominator`` for every variant.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from asrpriv.errors import arg

MODES = ("none", "hard", "utterance", "token")
LOSS_NORMS = ("utterance", "token")


def parse_confidence(spec: str) -> tuple[str, float | None]:
    """``none | hard:C | utterance | token`` -> (mode, threshold C or None)."""
    if spec.startswith("hard:"):
        try:
            threshold = float(spec[5:])
        except ValueError:
            raise ValueError(f"hard:C needs a number C, got {spec!r}") from None
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"hard:C needs 0 <= C <= 1, got {threshold}")
        return "hard", threshold
    if spec in ("none", "utterance", "token"):
        return spec, None
    raise ValueError(f"{arg('confidence')} must be none, hard:C, utterance or token; got {spec!r}")


def utterance_confidence(conf: Sequence[float]) -> float:
    """c_j: the mean of the word confidences (1.0 for an utterance without words)."""
    return float(sum(conf) / len(conf)) if len(conf) else 1.0


def keep_mask(confidences: Sequence[Sequence[float]], threshold: float) -> list[bool]:
    """Hard thresholding: True for transcripts kept (c_j >= C), False for those dropped."""
    return [utterance_confidence(c) >= threshold for c in confidences]


def target_weights(n_words: int, conf: Sequence[float] | None, mode: str,
                   loss_norm: str = "utterance") -> np.ndarray:
    """Per-target weights (float32, length n_words + 1) of one transcript.

    The loss of a batch is ``sum over targets of weight * (-ln p) / denominator`` where the
    denominator is the number of transcripts (``loss_norm="utterance"``, Eq. 2-4) or the
    number of targets (``loss_norm="token"``).
    """
    n_targets = n_words + 1
    if mode in ("none", "hard"):
        w = np.ones(n_targets, dtype=np.float64)
    else:
        if conf is None:
            raise ValueError(f"{arg('confidence')} {mode} needs per-word confidences")
        c_j = utterance_confidence(conf)
        if mode == "utterance":
            w = np.full(n_targets, c_j, dtype=np.float64)
        elif mode == "token":
            w = np.array([*conf, c_j], dtype=np.float64)
        else:
            raise ValueError(f"unknown confidence mode {mode!r}")
    if loss_norm == "utterance":
        w = w / n_targets
    elif loss_norm != "token":
        raise ValueError(f"unknown loss normalisation {loss_norm!r}")
    return w.astype(np.float32)
