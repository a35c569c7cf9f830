"""Dynamic linear interpolation of LM streams (paper 003 Eq. 3) and EM for its weights.

Dynamic interpolation, per token (natural log)::

    P(w | h) = sum_k lambda_k P_k(w | h),      lambda_k >= 0, sum_k lambda_k = 1      (003 Eq. 3)

EM for the weights on held-out tokens t = 1..N (as SRILM's ``compute-best-mix``)::

    lambda_k <- (1/N) sum_t lambda_k P_k(t) / sum_j lambda_j P_j(t)

Each step cannot lower the held-out likelihood; iteration stops when no weight moves by more
than ``tol`` (absolute) in one step, or after ``max_iter`` steps. The streams are scaled once
per token by their largest member (``P_k(t) / max_j P_j(t)``, which leaves the posteriors
unchanged and keeps every number in [0, 1]), so one EM step is two K x N matrix-vector
products: its cost is small against computing the streams.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: default EM stopping tolerance: the largest absolute change of a weight in one step
DEFAULT_TOL = 1e-6
DEFAULT_MAX_ITER = 10000


def mix_logprobs(logp: np.ndarray, weights) -> np.ndarray:
    """ln sum_k w_k exp(logp[k]) per token (``logp``: float[K, N] natural log).

    A token that every weighted LM gives probability 0 gets ``-inf``.
    """
    logp = np.asarray(logp, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    live = w > 0
    if not live.any():
        raise ValueError("all weights are 0")
    lp = logp[live]
    top = lp.max(axis=0)
    finite = np.isfinite(top)
    safe_top = np.where(finite, top, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(w[live] @ np.exp(lp - safe_top)) + safe_top
    out[~finite] = -np.inf
    return out


@dataclass
class EmResult:
    """Weights found by :func:`estimate_weights` and how they were found."""

    weights: np.ndarray
    iterations: int
    converged: bool
    tol: float
    #: ln P of every token under the final weights
    ln_mix: np.ndarray


def estimate_weights(logp: np.ndarray, init=None, tol: float = DEFAULT_TOL,
                     max_iter: int = DEFAULT_MAX_ITER) -> EmResult:
    """EM estimate of interpolation weights from ``logp`` (float[K, N], natural log).

    Args:
        logp: the streams of the K LMs on the same N tokens. Tokens that every LM gives
            probability 0 must be removed first (they carry no information on the weights).
        init: starting weights (default uniform, as compute-best-mix).
        tol: stop when ``max_k |lambda_k(new) - lambda_k(old)| < tol``.
        max_iter: at most this many EM steps.
    """
    if not tol > 0 or tol == float("inf"):  # NaN: "step < nan" is never true, EM would not stop
        raise ValueError(f"tol must be a finite number > 0, got {tol}")
    logp = np.asarray(logp, dtype=np.float64)
    k, n = logp.shape
    if n == 0:
        raise ValueError("no tokens to estimate weights on")
    top = logp.max(axis=0)
    if not np.isfinite(top).all():
        raise ValueError("a token has probability 0 under every LM")
    scaled = np.exp(logp - top)  # in [0, 1], the max of each column is 1
    w = np.full(k, 1.0 / k) if init is None else np.asarray(init, dtype=np.float64).copy()
    w = w / w.sum()
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        inv = 1.0 / (w @ scaled)
        new = w * (scaled @ inv) / n
        new /= new.sum()  # guards the rounding drift of the sum
        step = np.abs(new - w).max()
        w = new
        if step < tol:
            converged = True
            break
    ln_mix = np.log(w @ scaled) + top
    return EmResult(weights=w, iterations=it, converged=converged, tol=tol, ln_mix=ln_mix)
