"""Interpolated modified Kneser-Ney smoothing, as KenLM's ``lmplz`` estimates it.

References: S. F. Chen and J. Goodman, "An empirical study of smoothing techniques for language
modeling", TR-10-98, Harvard, 1998 (equation numbers below are theirs); K. Heafield et al.,
"Scalable modified Kneser-Ney language model estimation", ACL 2013 (the lmplz pipeline).

For an n-gram model of order N (all probabilities here are plain probabilities; the ARPA
file gets their log10):

1. **Adjusted counts** ``a(w_1..w_n)``: the raw count for the highest order ``n = N`` and for
   n-grams that start with ``<s>`` (they cannot be extended to the left); otherwise the
   continuation count ``N1+(. w_1..w_n) = |{v : c(v w_1..w_n) > 0}|`` (Kneser-Ney's lower-order
   distributions, C&G section 2.7). ``<s>`` as a unigram has adjusted count 0 (it is never
   predicted), and so does ``<unk>`` unless the text maps words to it.
2. **Discounts** per order from the count-of-counts ``n_k`` (number of n-grams of that order
   with adjusted count exactly k), C&G Eq. (26)::

       Y = n_1 / (n_1 + 2 n_2)
       D_k = k - (k + 1) Y n_{k+1} / n_k      for k = 1, 2, 3 (D_3 is used for counts >= 3)

   Estimation needs ``n_1, n_2, n_3 > 0`` and gives ``0 <= D_k <= k``; otherwise it fails
   (:class:`DiscountError`) unless a fallback is given (lmplz's ``--discount_fallback``:
   0.5, 1.0, 1.5).
3. **Uninterpolated probability and back-off mass** for a context h with extensions
   ``h w`` (C&G Eq. 17 and 19)::

       denom(h)   = sum_w a(h w)
       u(w | h)   = (a(h w) - D(a(h w))) / denom(h)
       gamma(h)   = (D_1 N_1(h .) + D_2 N_2(h .) + D_3 N_3+(h .)) / denom(h)

   with ``N_k(h .)`` the number of words w with ``a(h w) = k`` (3+ for N_3+).
4. **Interpolation** (C&G Eq. 17): ``p(w | h) = u(w | h) + gamma(h) p(w | h')`` with h' = h
   without its first word; the recursion ends at the uniform distribution over the
   vocabulary without ``<s>`` (KenLM's default ``interpolate_unigrams``)::

       p(w) = u(w) + gamma() / |V|,   |V| = number of words including </s> and <unk>, without <s>

   so ``<unk>`` (count 0) gets ``gamma() / |V|``, like every other unseen vocabulary word.
5. **Back-off form**: the ARPA entry of ``h w`` holds ``log10 p(w | h)`` (interpolation folded
   in) and the back-off weight of a context h is ``log10 gamma(h)``. Then for a word w
   unseen after h the back-off rule gives ``gamma(h) p(w | h')``, exactly the interpolated
   value, and ``sum_w p(w | h) = sum u + gamma(h) = 1``: the model is normalized without any
   renormalization. ``<s>`` gets log10 probability -99 (it is context only), as lmplz and
   SRILM write it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asrpriv.ngram.counting import BOS_ID, NgramCounts

#: lmplz's ``--discount_fallback`` default
FALLBACK_DISCOUNTS = (0.5, 1.0, 1.5)


class DiscountError(ValueError):
    """Modified Kneser-Ney discounts cannot be estimated (too little or artificial data)."""


@dataclass
class KneserNeyOrder:
    """Estimated parameters of one order, aligned with the rows of its count table.

    ``adjusted``: adjusted counts a(.); ``prob``: interpolated p(w | h) (not log);
    ``gamma``: back-off mass of this n-gram as a context (NaN when it has no extension);
    ``discounts``: (D1, D2, D3+); ``count_of_counts``: (n1, n2, n3, n4).
    """

    adjusted: np.ndarray
    prob: np.ndarray
    gamma: np.ndarray
    discounts: tuple[float, float, float]
    count_of_counts: tuple[int, int, int, int]
    fallback: bool = False


def adjusted_counts(counts: NgramCounts) -> list[np.ndarray]:
    """Adjusted counts a(.) of every order (step 1 of the module docstring)."""
    N = counts.order
    out: list[np.ndarray] = []
    for n in range(1, N + 1):
        table = counts.orders[n - 1]
        if n == N:
            adj = table.count.copy()
        else:
            higher = counts.orders[n]
            cont = np.bincount(higher.suffix, minlength=len(table)).astype(np.int64)
            adj = np.where(table.first == BOS_ID, table.count, cont)
        if n == 1:
            adj = adj.copy()
            adj[BOS_ID] = 0
        out.append(adj)
    return out


def count_of_counts(adjusted: np.ndarray) -> tuple[int, int, int, int]:
    """``(n1, n2, n3, n4)``: how many n-grams have adjusted count 1, 2, 3, 4."""
    hist = np.bincount(np.minimum(adjusted, 5), minlength=6)
    return int(hist[1]), int(hist[2]), int(hist[3]), int(hist[4])


def estimate_discounts(coc: tuple[int, int, int, int], n: int,
                       fallback: tuple[float, float, float] | None = None) -> tuple[tuple[float, float, float], bool]:
    """Modified KN discounts ``(D1, D2, D3+)`` from count-of-counts, C&G Eq. (26).

    Returns ``(discounts, used_fallback)``. Raises :class:`DiscountError` when the estimate is
    undefined or out of range and no ``fallback`` is given.
    """
    n1, n2, n3, n4 = coc
    nk = (n1, n2, n3, n4)
    problem = None
    for k in (1, 2, 3):
        if nk[k - 1] == 0:
            problem = (f"no {n}-grams with adjusted count {k}, so the discount for count {k + 1 if k < 3 else '3+'} "
                       "is undefined")
            break
    discounts: list[float] = []
    if problem is None:
        y = n1 / (n1 + 2.0 * n2)
        for k in (1, 2, 3):
            d = k - (k + 1) * y * nk[k] / nk[k - 1]
            if not 0.0 <= d <= k:
                problem = f"{n}-gram discount D{k} = {d:.4g} is out of range [0, {k}]"
                break
            discounts.append(d)
    if problem is None:
        return (discounts[0], discounts[1], discounts[2]), False
    if fallback is None:
        raise DiscountError(f"cannot estimate Kneser-Ney discounts: {problem} "
                            "(is the text very small or artificial? a fallback can be used)")
    return tuple(float(x) for x in fallback), True  # type: ignore[return-value]


def _discount_of(adjusted: np.ndarray, discounts: tuple[float, float, float]) -> np.ndarray:
    table = np.array([0.0, discounts[0], discounts[1], discounts[2]])
    return table[np.minimum(adjusted, 3)]


def estimate(counts: NgramCounts, fallback: tuple[float, float, float] | None = None,
             discounts: dict[int, tuple[float, float, float]] | None = None) -> list[KneserNeyOrder]:
    """Interpolated modified Kneser-Ney estimates for every order (module docstring, steps 1-5).

    ``discounts``: optional fixed ``{order: (D1, D2, D3+)}`` that replace the estimates.
    """
    N = counts.order
    adjusted = adjusted_counts(counts)
    V = len(counts.vocab)
    result: list[KneserNeyOrder] = []
    for n in range(1, N + 1):
        table = counts.orders[n - 1]
        adj = adjusted[n - 1]
        coc = count_of_counts(adj)
        if discounts and n in discounts:
            disc, used = tuple(float(x) for x in discounts[n]), False
        else:
            disc, used = estimate_discounts(coc, n, fallback)
        d = _discount_of(adj, disc)  # type: ignore[arg-type]
        n_contexts = 1 if n == 1 else len(counts.orders[n - 2])
        ctx = np.zeros(len(table), dtype=np.int64) if n == 1 else table.prefix
        denom = np.bincount(ctx, weights=adj, minlength=n_contexts)
        mass = np.bincount(ctx, weights=d, minlength=n_contexts)
        with np.errstate(divide="ignore", invalid="ignore"):
            gamma_ctx = np.where(denom > 0, mass / denom, np.nan)
            uninterp = (adj - d) / denom[ctx]
        if n == 1:
            # interpolate with the uniform distribution over the vocabulary without <s>
            prob = uninterp + gamma_ctx[0] / (V - 1)
        else:
            lower = result[n - 2]
            prob = uninterp + gamma_ctx[ctx] * lower.prob[table.suffix]
            lower.gamma = gamma_ctx
        result.append(KneserNeyOrder(adj, prob, np.full(len(table), np.nan), disc, coc, used))  # type: ignore[arg-type]
    return result
