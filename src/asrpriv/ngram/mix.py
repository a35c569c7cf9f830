"""A static ARPA mixture of back-off n-gram LMs (SRILM ``ngram -mix-lm`` semantics).

Given LMs P_1..P_K and weights lambda_k (>= 0, sum 1), the mixture is one back-off model:

- its vocabulary is the union of the LMs' unigram lists; its n-grams are the union of their
  n-grams, closed under prefixes (every context with explicit successors is listed, so it can
  carry a back-off weight) and under suffixes (what kenlm's lookup needs; the LMs that
  ``train-ngram``, lmplz and SRILM write are closed already, so nothing is added for them);
- every listed n-gram (h, w) gets the dynamic interpolation (paper 003 Eq. 3)::

      P_mix(w | h) = sum_k lambda_k P_k(w | h)

  where P_k(w | h) goes through LM k's own back-off (``bow_k(h) P_k(w | h')`` when k does not
  list (h, w)); a context word outside k's vocabulary is k's ``<unk>`` (as kenlm reads it),
  and a predicted word outside k's vocabulary has P_k = 0 (so that each P_k is a distribution
  over the union vocabulary and the mixture normalizes; SRILM does the same);
- back-off weights are recomputed so that every context normalizes exactly::

      bow_mix(h) = (1 - sum_{w in E(h)} P_mix(w | h)) / (1 - sum_{w in E(h)} P_mix(w | h'))

  with E(h) the listed successors of h and h' = h without its oldest word (P_mix(w | h') is
  listed too, by suffix closure).

The static mixture equals the dynamic interpolation on every listed n-gram (whose predicted
word every LM knows), but not on backed-off ones: there it is ``bow_mix(h) P_mix(w | h')``,
not ``sum_k lambda_k bow_k(h) P_k(w | h')``. That is SRILM's ``-mix-lm`` approximation too
(an exact static mixture would need every n-gram of every context).

All arithmetic is per order on numpy arrays (:mod:`asrpriv.ngram.packed`): the LMs' tables are
looked up with ``searchsorted`` on row codes, orders are computed lowest first (P_k of a
backed-off n-gram is ``bow_k(h) + P_k`` of its suffix, already computed), so memory grows
with the number of n-grams, never with contexts x vocabulary. Probabilities in log10.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Sequence

import numpy as np

from asrpriv.ngram.packed import PackedArpa, lookup, row_codes

#: log10 probability written for <s> and for probability 0 (as lmplz and SRILM write)
LOG10_ZERO = -99.0


@dataclass
class MixedOrder:
    """One order of the mixture: rows of union word ids, log10 probs, log10 back-offs (NaN: none)."""

    ids: np.ndarray
    logp: np.ndarray
    bow: np.ndarray


@dataclass
class MixedArpa:
    """The static mixture: ``words`` (union vocabulary) and its orders, rows sorted."""

    words: list[str]
    orders: list[MixedOrder]

    def counts(self) -> list[int]:
        return [len(o.logp) for o in self.orders]

    def write(self, out: IO[str], precision: int | None = 7) -> None:
        """Write ARPA text: ``precision`` digits after the point (None = shortest exact decimal);
        probability 0 (and ``<s>``) as -99. Lines are built per order in chunks of 64k rows."""
        from asrpriv.ngram.arpa import write_header

        write_header(out, self.counts())
        words = self.words
        fmt = repr if precision is None else f"{{:.{precision}f}}".format
        for n, order in enumerate(self.orders, 1):
            out.write(f"\\{n}-grams:\n")
            logp = np.where(np.isfinite(order.logp) & (order.logp > LOG10_ZERO), order.logp, LOG10_ZERO)
            bow = np.where(np.isnan(order.bow), np.nan,
                           np.where(order.bow > LOG10_ZERO, order.bow, LOG10_ZERO))
            has_bow = not np.isnan(bow).all()
            for start in range(0, len(logp), 65536):
                stop = start + 65536
                keys = order.ids[start:stop].tolist()
                names = [" ".join([words[w] for w in key]) for key in keys]
                probs = [fmt(x) for x in logp[start:stop].tolist()]
                if has_bow:
                    bows = [fmt(x) for x in bow[start:stop].tolist()]
                    out.write("".join([f"{p}\t{w}\t{b}\n" for p, w, b in zip(probs, names, bows)]))
                else:
                    out.write("".join([f"{p}\t{w}\n" for p, w in zip(probs, names)]))
            out.write("\n")
        out.write("\\end\\\n")


def _unique_rows(rows: np.ndarray, base: int) -> np.ndarray:
    """The distinct rows of ``rows`` (int64[M, n]), sorted lexicographically."""
    if len(rows) == 0:
        return rows
    codes = row_codes([rows], base)[0]
    _, first = np.unique(codes, return_index=True)
    return rows[first]


def _log10_mix(parts: Sequence[np.ndarray], weights: Sequence[float]) -> np.ndarray:
    """log10 sum_k w_k 10^parts[k], with -inf parts counting 0."""
    total = np.zeros(len(parts[0]), dtype=np.float64)
    for part, w in zip(parts, weights):
        if w > 0:
            total += w * np.power(10.0, part)
    with np.errstate(divide="ignore"):
        return np.log10(total)


def mix_models(models: Sequence[PackedArpa], weights: Sequence[float]) -> MixedArpa:
    """The static mixture of ``models`` with ``weights`` (see the module docstring).

    The union vocabulary and each model's view of it (:func:`_union_vocabulary`), the union
    n-grams closed under prefixes and suffixes (:func:`_union_rows`), each model's tables in
    union ids (:func:`_sorted_tables`), then the mixed probabilities order by order, lowest
    first, and the back-off weights of each order's contexts from their listed successors.
    """
    if len(models) != len(weights):
        raise ValueError("one weight per model")
    words, index, to_union, known, ctx_map = _union_vocabulary(models)
    v = len(words)
    base = v + 1  # id v: a context word a model cannot match (it has no <unk>)
    top = max(m.order for m in models)
    rows = _union_rows(models, to_union, v, base, top)
    tables = _sorted_tables(models, to_union, base)

    def table_lookup(k: int, n: int, query: np.ndarray):
        """Index into model k's order-n table of each query row, -1 where absent (None: no table)."""
        if n > models[k].order:
            return None
        q, t = row_codes([query, tables[k][n - 1][0]], base)
        return lookup(t, q)

    # --- probabilities, lowest order first
    out: list[MixedOrder] = []
    prev_k: list[np.ndarray] = []
    prev_mix = None
    bos = index.get("<s>")
    for n in range(1, top + 1):
        r = rows[n - 1]
        if n == 1:
            parts = []
            for k in range(len(models)):
                p = np.full(v, -np.inf)
                unigrams, logp, _ = tables[k][0]
                p[unigrams[:, 0]] = logp
                parts.append(p)
            mix = _log10_mix(parts, weights)
            if bos is not None:
                mix[bos] = LOG10_ZERO
            out.append(MixedOrder(r, mix, np.full(v, np.nan)))
        else:
            prev_rows = rows[n - 2]
            pre_q, suf_q, prev_c = row_codes([r[:, :-1], r[:, 1:], prev_rows], base)
            prefix_idx = lookup(prev_c, pre_q)
            suffix_idx = lookup(prev_c, suf_q)
            assert (prefix_idx >= 0).all() and (suffix_idx >= 0).all()
            parts = []
            for k in range(len(models)):
                view = np.concatenate([ctx_map[k][r[:, :-1]], r[:, -1:]], axis=1)
                p = prev_k[k][suffix_idx].copy()
                ctx_hit = table_lookup(k, n - 1, view[:, :-1])
                if ctx_hit is not None:
                    bows = tables[k][n - 2][2]
                    p += np.where(ctx_hit >= 0, bows[np.maximum(ctx_hit, 0)], 0.0)
                hit = table_lookup(k, n, view)
                if hit is not None:
                    logps = tables[k][n - 1][1]
                    p = np.where(hit >= 0, logps[np.maximum(hit, 0)], p)
                p[~known[k][r[:, -1]]] = -np.inf
                parts.append(p)
            mix = _log10_mix(parts, weights)
            # back-off weights of the contexts (order n-1), from their listed successors
            m = len(prev_rows)
            num = 1.0 - np.bincount(prefix_idx, weights=np.power(10.0, mix), minlength=m)
            den = 1.0 - np.bincount(prefix_idx, weights=np.power(10.0, prev_mix[suffix_idx]), minlength=m)
            with np.errstate(divide="ignore", invalid="ignore"):
                bow = np.where((num > 0) & (den > 0), np.log10(num / den), np.where(num > 0, 0.0, -np.inf))
            out[n - 2].bow = bow
            out.append(MixedOrder(r, mix, np.full(len(r), np.nan)))
        prev_k = parts
        prev_mix = mix
    return MixedArpa(words, out)


def _union_vocabulary(models: Sequence[PackedArpa]):
    """``(words, word -> union id, per model: its ids in the union, which union ids it knows,
    the union id it reads each word as in a context (<unk>, or v: no match))``."""
    words: list[str] = []
    index: dict[str, int] = {}
    to_union = []
    for model in models:
        ids = []
        for w in model.words:
            if w not in index:
                index[w] = len(words)
                words.append(w)
            ids.append(index[w])
        to_union.append(np.asarray(ids, dtype=np.int64))
    v = len(words)
    unk = index.get("<unk>")
    known = []      # union id -> in model k's vocabulary
    ctx_map = []    # union id -> the union id model k reads it as, in a context
    for k, model in enumerate(models):
        inside = np.zeros(v, dtype=bool)
        inside[to_union[k]] = True
        known.append(inside)
        k_unk = unk if (unk is not None and "<unk>" in model.words) else v
        ctx_map.append(np.where(inside, np.arange(v), k_unk))
    return words, index, to_union, known, ctx_map


def _union_rows(models: Sequence[PackedArpa], to_union, v: int, base: int, top: int) -> list[np.ndarray]:
    """The union n-grams of every order (union ids), closed under prefixes and suffixes."""
    rows: list[np.ndarray] = [np.arange(v, dtype=np.int64).reshape(-1, 1)]
    for n in range(2, top + 1):
        parts = [to_union[k][m.orders[n - 1].ids] for k, m in enumerate(models) if m.order >= n]
        rows.append(np.concatenate(parts) if parts else np.zeros((0, n), dtype=np.int64))
    for n in range(top, 2, -1):
        rows[n - 1] = _unique_rows(rows[n - 1], base)
        rows[n - 2] = np.concatenate([rows[n - 2], rows[n - 1][:, :-1], rows[n - 1][:, 1:]])
    if top >= 2:
        rows[1] = _unique_rows(rows[1], base)
    return rows


def _sorted_tables(models: Sequence[PackedArpa], to_union, base: int):
    """Each model's tables per order in union ids, rows sorted (lookups: joint row codes and
    searchsorted): ``(rows, log10 p, log10 back-off with NaN as 0)``."""
    tables = []
    for k, model in enumerate(models):
        per_order = []
        for order in model.orders:
            r = to_union[k][order.ids]
            srt = np.argsort(row_codes([r], base)[0], kind="stable")
            per_order.append((r[srt], order.logp[srt], np.nan_to_num(order.bow[srt], nan=0.0)))
        tables.append(per_order)
    return tables

