"""An n-gram (ARPA) approximation of a neural LM (paper 003 §2.4, after Singh et al. 2017).

1. Score every token of a text (``w1 .. wn </s>`` of each sentence, from ``<s>``) with the
   neural LM, with its whole sentence as history: ``p_t = P_nn(w_t | <s> w_1 .. w_{t-1})``
   (batched like the rescorer: length-sorted batches of at most ``batch_tokens`` padded
   positions, output layer on real positions only).
2. Assign ``p_t`` to each n-gram ending at ``w_t`` -- the unigram ``w_t``, the bigram
   ``w_{t-1} w_t``, ... up to order N (histories never reach before ``<s>``) -- and
   *average* per n-gram: ``a(h, w) = mean of p_t`` over its occurrences (probabilities, not
   logs).
3. Normalize per context and smooth for back-off:
   - unigrams: ``P1(w) = a(w) / sum_v a(v)`` over the text's tokens (``<unk>`` if never
     seen gets the smallest ``a``; ``<s>`` gets log10 -99 as context only);
   - a context h of order >= 1 with seen continuations S_h and ``A_h = sum_{w in S_h} a(h, w)``
     keeps back-off mass ``beta_h = max(delta, 1 - A_h)`` and
     ``P(w | h) = (1 - beta_h) a(h, w) / A_h`` -- i.e. the NNLM's own averaged numbers when
     they leave at least ``delta`` for unseen words, else scaled down to ``1 - delta``;
   - back-off weight ``bow(h) = beta_h / (1 - sum_{w in S_h} P_lower(w | h'))`` with h'
     = h without its oldest word and P_lower the (back-off) model of the order below, so
     every context sums to exactly 1 over the vocabulary (as in Katz back-off). If the seen
     words take all of the lower order's mass (denominator ~ 0), the context is renormalized
     to 1 over S_h and bow = 1.

Scores: natural log inside, log10 in the ARPA file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Sequence

import numpy as np

from asrpriv.errors import AsrprivError

#: default least back-off mass per context (delta above)
DEFAULT_MIN_BACKOFF = 0.01
#: log10 probability of <s> (context only)
BOS_LOG10 = -99.0


def token_logprobs(model, vocab, sentences: Sequence[Sequence[str]], batch_tokens: int = 4096,
                   device: str = "cpu", progress=None, scorer=None
                   ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per sentence: its ids ``[<s>, w1..wn, </s>]`` and ``ln P_nn`` of its n+1 targets.

    Identical sentences are scored once (their arrays are shared in the result).
    ``scorer``: an :class:`asrpriv.rescore.nnlm.NnlmScorer` of the same model, whose tiled
    output layer is then used (faster on CPU); ``progress``: an optional callable given the
    number of tokens done per batch.
    """
    import torch

    from asrpriv.nnlm.score import encode_sentences, masked_logprobs, pad_batch
    from asrpriv.nnlm.gemm import plan_batches

    all_seqs = encode_sentences(vocab, sentences)
    # identical sentences (frequent in conversational text: "yeah", "okay") are scored once
    first: dict[bytes, int] = {}
    which = [first.setdefault(s.tobytes(), len(first)) for s in all_seqs]
    seqs = [None] * len(first)
    for s, k in zip(all_seqs, which):
        seqs[k] = s
    out: list[np.ndarray] = [np.zeros(0)] * len(seqs)
    model.eval()
    with torch.inference_mode():
        for idx in plan_batches([len(s) - 1 for s in seqs], batch_tokens):
            inputs, targets, mask = pad_batch([seqs[i] for i in idx], vocab.eos_id)
            inputs, targets, mask = inputs.to(device), targets.to(device), mask.to(device)
            if hasattr(model, "hidden") and scorer is not None:
                picked = scorer.target_logprobs(model.hidden(inputs, mask), targets[mask])
            elif hasattr(model, "hidden"):
                logits = model.output(model.hidden(inputs, mask)).float()
                picked = logits.gather(-1, targets[mask].unsqueeze(-1)).squeeze(-1) \
                    - torch.logsumexp(logits, dim=-1)
            else:
                picked = masked_logprobs(model, inputs, targets, mask)
            values = picked.double().cpu().numpy()
            pos = 0
            for i in idx:  # masked values come row by row
                n = len(seqs[i]) - 1
                out[i] = values[pos:pos + n]
                pos += n
            if progress is not None:
                progress(pos)
    return all_seqs, [out[k] for k in which]


@dataclass
class OrderTable:
    """The n-grams of one order: ``rows[K, n]`` word ids (sorted by code), averages, counts."""

    rows: np.ndarray
    codes: np.ndarray
    average: np.ndarray  # mean probability a(h, w)
    count: np.ndarray


def average_ngrams(seqs: Sequence[np.ndarray], logps: Sequence[np.ndarray], order: int,
                   base: int) -> list[OrderTable]:
    """Step 2: per order 1..N, every n-gram ending at a scored token and its mean probability.

    ``base`` > every id (codes are base-``base`` numbers of the rows, oldest word first).
    """
    if base ** order >= 2 ** 62:
        raise AsrprivError(f"order {order} with a {base - 1}-word vocabulary does not fit 64-bit "
                           "n-gram codes; use a lower order")
    flat = np.concatenate([s for s in seqs]) if seqs else np.zeros(0, dtype=np.int64)
    starts = np.cumsum([0] + [len(s) for s in seqs[:-1]]).astype(np.int64)
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    # target positions in flat: every position except each sentence's first (<s>)
    sent_of = np.repeat(np.arange(len(seqs)), lengths - 1)
    offset = np.concatenate([np.arange(1, n) for n in lengths]) if len(seqs) else np.zeros(0, np.int64)
    target = starts[sent_of] + offset
    prob = np.exp(np.concatenate(logps)) if logps else np.zeros(0)
    tables = []
    for n in range(1, order + 1):
        ok = offset >= n - 1  # the history fits after <s>
        pos = target[ok]
        codes = np.zeros(len(pos), dtype=np.int64)
        for j in range(n - 1, -1, -1):  # oldest word first
            codes = codes * base + flat[pos - j]
        uniq, inverse = np.unique(codes, return_inverse=True)
        count = np.bincount(inverse, minlength=len(uniq))
        total = np.bincount(inverse, weights=prob[ok], minlength=len(uniq))
        rows = np.empty((len(uniq), n), dtype=np.int64)
        rest = uniq.copy()
        for j in range(n - 1, -1, -1):
            rows[:, j] = rest % base
            rest //= base
        tables.append(OrderTable(rows, uniq, total / count, count))
    return tables


@dataclass
class ApproxOrder:
    rows: np.ndarray
    codes: np.ndarray
    log10p: np.ndarray
    log10bow: np.ndarray  # NaN where none is written


def _lookup(codes_sorted: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Index of each code in ``codes_sorted`` or -1."""
    pos = np.searchsorted(codes_sorted, codes)
    pos = np.minimum(pos, len(codes_sorted) - 1)
    found = codes_sorted[pos] == codes if len(codes_sorted) else np.zeros(len(codes), bool)
    return np.where(found, pos, -1)


def _encode(rows: np.ndarray, base: int) -> np.ndarray:
    codes = np.zeros(len(rows), dtype=np.int64)
    for j in range(rows.shape[1]):
        codes = codes * base + rows[:, j]
    return codes


def backoff_prob(orders: list[ApproxOrder], probs: list[np.ndarray], bows: list[np.ndarray],
                 rows: np.ndarray, base: int) -> np.ndarray:
    """P(w | h) (probability) of rows ``[h.., w]`` under the back-off model built so far."""
    n = rows.shape[1]
    if n == 1:
        idx = _lookup(orders[0].codes, rows[:, 0])
        return probs[0][idx]
    idx = _lookup(orders[n - 1].codes, _encode(rows, base)) if len(orders) >= n else np.full(len(rows), -1)
    out = np.empty(len(rows))
    hit = idx >= 0
    out[hit] = probs[n - 1][idx[hit]]
    miss = ~hit
    if miss.any():
        sub = rows[miss]
        ctx = _lookup(orders[n - 2].codes, _encode(sub[:, :-1], base))
        bow = np.where(ctx >= 0, bows[n - 2][np.maximum(ctx, 0)], 1.0)
        out[miss] = bow * backoff_prob(orders, probs, bows, sub[:, 1:], base)
    return out


def build_approx(tables: list[OrderTable], base: int, unk_id: int, bos_id: int,
                 min_backoff: float = DEFAULT_MIN_BACKOFF) -> list[ApproxOrder]:
    """Step 3: normalized, back-off-smoothed n-gram probabilities from the averages."""
    if not 0.0 <= min_backoff < 1.0:  # NaN too: it would write an ARPA full of "nan"
        raise ValueError(f"min_backoff must be in [0, 1), got {min_backoff}")
    orders: list[ApproxOrder] = []
    probs: list[np.ndarray] = []
    bows: list[np.ndarray] = []
    # unigrams: the seen tokens, <unk> and <s>
    t1 = tables[0]
    ids, avg = t1.rows[:, 0], t1.average
    extra = [i for i in (unk_id, bos_id) if i not in set(ids.tolist())]
    ids = np.concatenate([ids, np.array(extra, dtype=np.int64)])
    avg = np.concatenate([avg, np.array([avg.min() if i == unk_id else 0.0 for i in extra])])
    keep = ids != bos_id
    p1 = np.zeros(len(ids))
    p1[keep] = avg[keep] / avg[keep].sum()
    sort = np.argsort(ids)
    ids, p1 = ids[sort], p1[sort]
    orders.append(ApproxOrder(ids[:, None], ids.copy(), np.log10(np.where(p1 > 0, p1, 1.0)), np.full(len(ids), np.nan)))
    orders[0].log10p[ids == bos_id] = BOS_LOG10
    probs.append(p1)
    bows.append(np.ones(len(ids)))
    for n in range(2, len(tables) + 1):
        t = tables[n - 1]
        ctx_codes = _encode(t.rows[:, :-1], base)  # sorted by code => grouped by context
        uctx, start = np.unique(ctx_codes, return_index=True)
        seen_mass = np.add.reduceat(t.average, start)
        beta = np.maximum(min_backoff, 1.0 - seen_mass)
        group = np.repeat(np.arange(len(uctx)), np.diff(np.append(start, len(ctx_codes))))
        p = (1.0 - beta[group]) * t.average / seen_mass[group]
        lower = backoff_prob(orders, probs, bows, t.rows[:, 1:], base)
        denom = 1.0 - np.add.reduceat(lower, start)
        bow_ctx = beta / np.where(denom > 1e-9, denom, 1.0)
        full = denom <= 1e-9
        if full.any():  # the seen words hold all the lower order's mass: renormalize to 1
            scale = np.where(full, 1.0 / (1.0 - beta), 1.0)
            p = p * scale[group]
            bow_ctx = np.where(full, 1.0, bow_ctx)
        # the context's bow lives on the (n-1)-gram h
        prev = orders[n - 2]
        at = _lookup(prev.codes, uctx)
        if (at < 0).any():
            raise RuntimeError("an n-gram context is missing from the order below")
        bows[n - 2][at] = bow_ctx
        prev.log10bow[at] = np.log10(bow_ctx)
        orders.append(ApproxOrder(t.rows, t.codes, np.log10(p), np.full(len(p), np.nan)))
        probs.append(p)
        bows.append(np.ones(len(p)))
    return orders


def write_approx_arpa(out: IO[str], orders: list[ApproxOrder], words: Sequence[str],
                      precision: int = 7) -> None:
    """Write the model as ARPA (log10); back-off weights only on contexts."""
    from asrpriv.ngram.arpa import format_float, write_arpa

    def rows(o: ApproxOrder):
        for r, lp, lb in zip(o.rows.tolist(), o.log10p.tolist(), o.log10bow.tolist()):
            yield (format_float(lp, precision), " ".join(words[i] for i in r),
                   None if lb != lb else format_float(lb, precision))

    write_arpa(out, [len(o.rows) for o in orders], ((n, rows(o)) for n, o in enumerate(orders, 1)))
