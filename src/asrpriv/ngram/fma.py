"""Fast marginal adaptation (FMA) of a back-off ARPA model, exactly normalized (paper 003 §2.3).

Two variants, with B the background n-gram model, P_B(w) a background unigram marginal and
P_A(w) the (smoothed) adaptation unigram marginal:

- standard FMA (003 Eq. 1; Kneser, Peters & Klakow 1997)::

      P_A(w|h) = (1/Z(h)) (P_A(w)/P_B(w))^beta P_B(w|h)

- reversed FMA (003 Eq. 2)::

      P_A(w|h) = (1/Z(h)) (P_B(w|h)/P_B(w))^beta P_A(w)

**One recursion for both.** Write the unnormalized adapted score as
``Q(w|h) = r(w) P_B(w|h)^g`` with

- standard: ``r(w) = (P_A(w)/P_B(w))^beta``, ``g = 1``;
- reversed: ``r(w) = P_A(w) / P_B(w)^beta``, ``g = beta``,

and ``Z(h) = sum_w Q(w|h)`` over the whole vocabulary (``<s>`` excluded: it is never predicted,
``r(<s>) = 0``). In a back-off model, for w outside the explicit successors E(h) of h,
``P_B(w|h) = bow_B(h) P_B(w|h')`` (h' = h without its oldest word; ``bow_B(h) = 1`` when h is
not listed or has no weight, as ARPA reads it), hence

      Q(w|h) = bow_B(h)^g r(w) P_B(w|h')^g = bow_B(h)^g Q(w|h')        (w not in E(h))

and, summing over the vocabulary,

      Z(h) = sum_{w in E(h)} Q(w|h) + bow_B(h)^g (Z(h') - sum_{w in E(h)} Q(w|h')).

For the standard variant (g = 1) this is Kneser et al.'s
``Z(h) = sum_E a(w) P_B(w|h) + bow_B(h) (Z(h') - sum_E a(w) P_B(w|h'))``. For the reversed
variant the backed-off part is *not* ``bow_B(h)`` times the lower order's background mass: the
power ``P_B(w|h)^beta`` splits into ``bow_B(h)^beta P_B(w|h')^beta``, so the lower order's
*unnormalized adapted* mass Z(h') (the sum of ``r(w) P_B(w|h')^beta``) is what the recursion
carries. The recursion ends at the empty context, ``Z() = sum_w r(w) P_B(w|())^g`` with
P_B(w|()) the ARPA's unigram probabilities: so a background whose unigrams (or any context)
do not sum to 1 still gives a normalized adapted model. Each context costs O(|E(h)|).

**The adapted model in back-off form.** Listed n-grams get ``P_A(w|h) = Q(w|h)/Z(h)``; for the
others ``P_A(w|h) = bow_B(h)^g Q(w|h')/Z(h) = bow_A(h) P_A(w|h')`` with

      bow_A(h) = bow_B(h)^g Z(h') / Z(h),

so the adapted model has exactly the background's n-grams (closed under prefixes and
suffixes: a missing lower-order context or suffix of a listed n-gram is added, with the value
the back-off gives it, so that its back-off weight can be stored and kenlm finds every
n-gram). Probabilities in the output are log10 (ARPA); ``<s>`` gets -99 (probability 0).

**Marginals** (:func:`marginals`).

- P_B(w): the ARPA's unigram probabilities renormalized over the vocabulary without ``<s>``,
  or, with background counts (SRILM ``-base-marginals``), those counts with add-1/2 smoothing
  over that vocabulary (a word of the ARPA never seen in the background counts keeps a nonzero
  marginal).
- P_A(w) = (1 - lambda) c(w)/C + lambda P_B(w): the adaptation counts' relative frequency
  interpolated with the background marginal (``lambda`` = ``prior``, 0 < lambda <= 1). A word
  without adaptation mass gets ``lambda P_B(w)`` (never 0); an adaptation marginal equal to
  P_B leaves P_A = P_B; lambda = 1 switches adaptation off.
- Counts: words outside the ARPA vocabulary are dropped (counted and reported) unless
  ``oov_to_unk``, which adds their counts to ``<unk>`` (when the ARPA has it; kenlm scores
  OOV words as ``<unk>``). Dropping is the default because in rescoring ``<unk>`` stands for
  *every* out-of-vocabulary word of a hypothesis: on AMI, 2% OOV tokens in a decoder's 1-best
  lifted P(<unk>) from 1e-5 to 0.02 and the rescored WER rose by 3.6 points. Counts of ``<s>``
  are dropped; negative counts (unclamped DP noise, ``add-noise --no-clamp``) are clipped to 0
  *before* normalizing (post-processing of the release: no privacy cost).

All arrays are per order on numpy (:mod:`asrpriv.ngram.packed`): lookups are ``searchsorted``
on row codes, sums per context are ``bincount``; memory grows with the number of n-grams.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from asrpriv.errors import InputError
from asrpriv.ngram.mix import LOG10_ZERO, MixedArpa, MixedOrder
from asrpriv.ngram.packed import PackedArpa, lookup, row_codes, stable_argsort


@dataclass
class Marginals:
    """P_B(w) and P_A(w) over the ARPA's word ids (float64, 0 at ``<s>``), and what was dropped."""

    background: np.ndarray
    adaptation: np.ndarray
    dropped_words: int = 0
    dropped_mass: float = 0.0
    clipped: int = 0


def _count_vector(words: list[str], counts: dict[str, float],
                  oov_to_unk: bool = False) -> tuple[np.ndarray, int, float, int]:
    """Counts over word ids: OOV words dropped (or to ``<unk>``), ``<s>`` dropped, negatives -> 0.

    Returns ``(vector, dropped words, dropped mass, clipped negatives)``.
    """
    index = {w: i for i, w in enumerate(words)}
    unk = index.get("<unk>") if oov_to_unk else None
    vec = np.zeros(len(words), dtype=np.float64)
    dropped = clipped = 0
    dropped_mass = 0.0
    for word, value in counts.items():
        if value < 0:
            clipped += 1
            value = 0.0
        i = index.get(word, unk)
        if i is None or word == "<s>":
            if value > 0:
                dropped += 1
                dropped_mass += value
            continue
        vec[i] += value
    return vec, dropped, dropped_mass, clipped


def marginals(model: PackedArpa, adapt_counts: dict[str, float], prior: float,
              background_counts: dict[str, float] | None = None,
              adapt_path: str | None = None, oov_to_unk: bool = False) -> Marginals:
    """The background and smoothed adaptation marginals (see the module docstring).

    Raises:
        InputError: no adaptation mass on a word of the ARPA vocabulary (named ``adapt_path``).
        ValueError: ``prior`` outside (0, 1].
    """
    if not 0.0 < prior <= 1.0:
        raise ValueError(f"the marginal prior weight must be in (0, 1], got {prior}")
    words = model.words
    keep = np.ones(len(words), dtype=bool)
    if "<s>" in words:
        keep[words.index("<s>")] = False
    if background_counts is None:
        p_b = np.where(keep, np.power(10.0, model.orders[0].logp), 0.0)
    else:
        c_b = _count_vector(words, background_counts, oov_to_unk)[0]
        p_b = np.where(keep, c_b + 0.5, 0.0)
    p_b = p_b / p_b.sum()
    c_a, dropped, dropped_mass, clipped = _count_vector(words, adapt_counts, oov_to_unk)
    vocab = set(words) - {"<s>", "<unk>"}
    total = c_a.sum()
    if not total > 0 or not any(w in vocab and c > 0 for w, c in adapt_counts.items()):
        raise InputError(adapt_path, _first_row_line(adapt_path),
                         f"no word of the adaptation counts ({len(adapt_counts)} words) has a count "
                         "> 0 and is in the ARPA vocabulary (<s>, <unk> aside): wrong vocabulary?")
    p_a = (1.0 - prior) * c_a / total + prior * p_b
    return Marginals(p_b, p_a, dropped, dropped_mass, clipped)


def _first_row_line(path: str | None) -> int | None:
    """Line number of the first count row of a counts file (for error messages), if readable."""
    if not path or path == "-":
        return None
    from asrpriv.io.lines import iter_lines

    for lineno, line in iter_lines(path):
        if line.strip() and not line.startswith("#"):
            return lineno
    return None


def closed_rows(model: PackedArpa) -> tuple[list[np.ndarray], list[np.ndarray | None]]:
    """The model's n-grams per order as rows of word ids, closed under prefixes and suffixes,
    sorted.

    Also, per order, the index into the model's own rows of each closed row when the closure
    added nothing to that order (the rows are the model's, permuted), else None.
    """
    v = len(model.words)
    rows: list[np.ndarray] = [np.arange(v, dtype=np.int64).reshape(-1, 1)]
    rows += [order.ids for order in model.orders[1:]]
    perms: list[np.ndarray | None] = [np.arange(v)] + [None] * (model.order - 1)
    for n in range(model.order, 1, -1):
        if n < model.order:  # rows[n-1] got the prefixes and suffixes of order n + 1
            rows[n - 1], perm = _sorted_unique(rows[n - 1], v)
            # B's rows come first in the concatenation, so equal rows resolve to B's index
            perms[n - 1] = None if len(rows[n - 1]) != len(model.orders[n - 1].ids) else perm
        elif model.orders[n - 1].sorted_index is not None:  # sorted by the reader (no duplicates)
            perms[n - 1] = model.orders[n - 1].sorted_index
            rows[n - 1] = rows[n - 1][perms[n - 1]]
        else:
            rows[n - 1], perms[n - 1] = _sorted_unique(rows[n - 1].astype(np.int64), v)
        if n > 2:
            rows[n - 2] = np.concatenate([rows[n - 2], rows[n - 1][:, :-1], rows[n - 1][:, 1:]])
    return rows, perms


def _sorted_unique(rows: np.ndarray, v: int) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` sorted without duplicates, and the index of each result row in ``rows``."""
    if len(rows) == 0:
        return rows, np.arange(0)
    codes = row_codes([rows], v)[0]
    if (codes[1:] > codes[:-1]).all():  # already sorted (and unique)
        return rows, np.arange(len(rows))
    srt, codes = stable_argsort(codes)
    first = np.concatenate([[True], codes[1:] != codes[:-1]])
    return rows[srt[first]], srt[first]


@contextlib.contextmanager
def small_pages() -> Iterator[None]:
    """numpy's large arrays on ordinary pages within the block, then as before.

    numpy asks the kernel for transparent huge pages for every array of 4 MB or more
    (``madvise``; ``NUMPY_MADVISE_HUGEPAGE`` at import). Where the kernel then compacts memory
    on the fault (``defrag=madvise``, the usual default), the dozens of fresh 16 MB
    temporaries of :func:`adapt_arpa` on the 2M-bigram model cost 0.3 s of system time, ten
    times what their ordinary page faults cost. A no-op where numpy lacks the switch.
    """
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:  # numpy < 2
        try:
            from numpy.core.multiarray import _set_madvise_hugepage
        except ImportError:
            _set_madvise_hugepage = None
    previous = _set_madvise_hugepage(False) if _set_madvise_hugepage else None
    try:
        yield
    finally:
        if _set_madvise_hugepage:
            _set_madvise_hugepage(previous)


def adapt_arpa(model: PackedArpa, marg: Marginals, beta: float, reversed_: bool = False) -> MixedArpa:
    """The FMA-adapted model (standard 003 Eq. 1, or reversed 003 Eq. 2), exactly normalized.

    Args:
        model: the background ARPA model (log10).
        marg: P_B(w) and P_A(w) from :func:`marginals`.
        beta: the exponent (>= 0).
        reversed_: the reversed variant.

    Returns:
        The adapted model (rows sorted, log10 probabilities and back-off weights).
    """
    v = len(model.words)
    bos = model.words.index("<s>") if "<s>" in model.words else None
    with np.errstate(divide="ignore", invalid="ignore"):  # <s>: log 0, set to -inf below
        log_pa, log_pb = np.log10(marg.adaptation), np.log10(marg.background)
        if reversed_:
            log_r, g = log_pa - beta * log_pb, beta
        else:
            log_r, g = beta * (log_pa - log_pb), 1.0
    if bos is not None:
        log_r[bos] = -np.inf
    rows, perms = closed_rows(model)

    # the background's probability and back-off weight of every closed row (listed or not)
    listed_logp, bows = [], []
    for n, r in enumerate(rows, 1):
        order = model.orders[n - 1]
        if perms[n - 1] is not None:  # the closure added nothing to this order: all listed
            listed_logp.append(order.logp[perms[n - 1]])
            bows.append(np.nan_to_num(order.bow[perms[n - 1]], nan=0.0))
            continue
        table, query = row_codes([order.ids, r], v)
        srt, table = stable_argsort(table)
        hit = lookup(table, query)
        hit = np.where(hit >= 0, srt[np.maximum(hit, 0)], -1)
        found = hit >= 0
        listed_logp.append(np.where(found, order.logp[np.maximum(hit, 0)], np.nan))
        bows.append(np.where(found, np.nan_to_num(order.bow[np.maximum(hit, 0)], nan=0.0), 0.0))

    def scaled(logp: np.ndarray) -> np.ndarray:  # x * 1.0 is x: no product for the standard FMA
        return logp if g == 1.0 else logp * g if g != 0 else np.zeros_like(logp)

    # order 1: the empty context
    log_pb_full = listed_logp[0]
    log_q = log_r + scaled(log_pb_full)
    z_prev = np.array([np.power(10.0, log_q).sum()])
    z_prev_of = np.zeros(v, dtype=np.int64)  # suffix of each unigram context: the empty context
    out = [MixedOrder(rows[0], log_q - np.log10(z_prev[0]), np.full(v, np.nan))]
    for n in range(2, model.order + 1):
        r, ctx = rows[n - 1], rows[n - 2]
        if n == 2:  # the contexts are the unigrams: row index = word id
            prefix, suffix = r[:, 0].astype(np.intp), r[:, 1].astype(np.intp)
            last = suffix
        else:
            pre_q, suf_q, ctx_c = row_codes([r[:, :-1], r[:, 1:], ctx], v)
            prefix, suffix = lookup(ctx_c, pre_q), lookup(ctx_c, suf_q)
            assert (prefix >= 0).all() and (suffix >= 0).all()
            last = r[:, -1]
        unlisted = np.isnan(listed_logp[n - 1])
        if unlisted.any():  # (else every row is listed: nothing backs off)
            backed = bows[n - 2][prefix] + log_pb_full[suffix]
            log_pb_n = np.where(unlisted, backed, listed_logp[n - 1])
        else:
            log_pb_n = listed_logp[n - 1]
        log_q_n = log_r[last] + scaled(log_pb_n)
        m = len(ctx)
        s1 = np.bincount(prefix, weights=np.power(10.0, log_q_n), minlength=m)
        s2 = np.bincount(prefix, weights=np.power(10.0, log_q[suffix]), minlength=m)
        z_suffix = z_prev[z_prev_of]
        rest = np.maximum(z_suffix - s2, 0.0)  # >= 0 up to rounding
        z = s1 + np.power(10.0, scaled(bows[n - 2])) * rest
        with np.errstate(divide="ignore"):
            log_z, log_z_suffix = np.log10(z), np.log10(z_suffix)
        out[n - 2].bow = scaled(bows[n - 2]) + log_z_suffix - log_z
        out.append(MixedOrder(r, log_q_n - log_z[prefix], np.full(len(r), np.nan)))
        if n < model.order:  # the suffix context of each order-n row, for the next order
            z_prev_of = suffix_of(r, ctx, v)
        z_prev, log_pb_full, log_q = z, log_pb_n, log_q_n
    for order in out:
        order.logp = np.where(np.isfinite(order.logp), order.logp, LOG10_ZERO)
    return MixedArpa(model.words, out)


def suffix_of(rows: np.ndarray, lower: np.ndarray, v: int) -> np.ndarray:
    """Index in ``lower`` (sorted rows of order n-1) of each row's suffix ``row[1:]``."""
    q, t = row_codes([rows[:, 1:], lower], v)
    idx = lookup(t, q)
    assert (idx >= 0).all()
    return idx
