"""Perplexity summaries of a token stream, and the per-word output (``perplexity --per-word``).

Two conventions are reported side by side (natural log inside, as everywhere in asrpriv):

- **asrpriv/kenlm** (``ppl``): every token counts; an OOV word is scored with ``<unk>``'s
  probability; ``ppl = exp(-sum ln p / (words + sentences))``.
- **SRILM** (``ngram -ppl`` without ``-unk``): OOV words (outside the vocabulary; for a
  mixture, outside the union of the LMs' vocabularies) and zero-probability words are left
  out of the sum and of the counts, ``</s>`` is in the sum::

      srilm_ppl  = 10 ** (-logprob10 / (words - oovs - zeroprobs + sentences))
      srilm_ppl1 = 10 ** (-logprob10 / (words - oovs - zeroprobs))

  where logprob10 sums log10 p over the scored tokens (``</s>`` included, also in ppl1).

``oov_rate`` = oovs / words (``</s>`` is never an OOV). Two LMs with different vocabularies
score different token sets under SRILM's convention, and give ``<unk>`` different meanings
under kenlm's: comparing their perplexities is then not meaningful (callers warn).

:func:`bootstrap_perplexity` (``perplexity --bootstrap N``) resamples sentences with
replacement, each carrying its log-probability sum and its token count (words + ``</s>``): the
perplexity of a resample is ``exp(-sum ln p / sum tokens)`` over its sentences, and with a
second LM scored on the same sentences (paired resampling, the same draws) the difference
``ppl_A - ppl_B``. Percentile intervals, drawn as :mod:`asrpriv.wer.bootstrap` draws its
utterances (the same index stream for the same seed and unit count).
"""

from __future__ import annotations

import math
from typing import IO, Sequence

import numpy as np

from asrpriv.mixture.streams import sentence_index

LN10 = math.log(10.0)


def summarize(ln_p: np.ndarray, oov: np.ndarray, words: int, sentences: int) -> dict:
    """Perplexity summary of a stream (``ln_p`` natural log; ``oov`` flags per token)."""
    tokens = words + sentences
    logprob = math.fsum(ln_p.tolist())
    n_oov = int(oov.sum())
    zero = (~oov) & ~np.isfinite(ln_p)
    zeroprobs = int(zero.sum())
    kept = ln_p[(~oov) & ~zero]
    logprob10 = math.fsum(kept.tolist()) / LN10
    denom = words - n_oov - zeroprobs + sentences
    denom1 = words - n_oov - zeroprobs
    return {
        "ppl": math.exp(-logprob / tokens) if tokens else float("nan"),
        "logprob": logprob, "tokens": tokens, "words": words, "sentences": sentences,
        "oovs": n_oov, "oov_rate": n_oov / words if words else 0.0,
        "zeroprobs": zeroprobs,
        "srilm_logprob10": logprob10,
        "srilm_ppl": 10.0 ** (-logprob10 / denom) if denom > 0 else float("nan"),
        "srilm_ppl1": 10.0 ** (-logprob10 / denom1) if denom1 > 0 else float("nan"),
        "log_base": "e",
        "oov_policy": "ppl: OOV words scored as <unk> and counted in tokens; srilm_ppl/srilm_ppl1: "
                      "OOVs and zero-probability words excluded (SRILM ngram -ppl)",
    }


def format_line(summary: dict, name: str) -> str:
    """The one-line report of a :func:`summarize` summary (and of its ``bootstrap``, if any)."""
    line = (f"{name}: ppl={summary['ppl']:.4f} logprob={summary['logprob']:.4f} "
            f"tokens={summary['tokens']} words={summary['words']} sentences={summary['sentences']} "
            f"oovs={summary['oovs']} oov_rate={100 * summary['oov_rate']:.2f}% "
            f"srilm_ppl={summary['srilm_ppl']:.4f} srilm_ppl1={summary['srilm_ppl1']:.4f} "
            f"(natural log; </s> counted, OOVs scored as <unk>; srilm_*: OOVs excluded)")
    b = summary.get("bootstrap")
    if b:
        line += (f" ppl {100 * b['level']:g}% CI [{b['ppl_low']:.4f}, {b['ppl_high']:.4f}] "
                 f"({b['resamples']} resamples of {b['units']} sentences, seed {b['seed']})")
    return line


def sentence_totals(ln_p: np.ndarray, sentences: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Per sentence of a token stream (``w1 .. wn </s>`` each): the sum of ``ln_p`` and the
    token count n + 1, as two float arrays."""
    tokens = np.array([len(s) + 1 for s in sentences], dtype=np.float64)
    ends = np.cumsum(tokens.astype(np.int64))
    starts = ends - tokens.astype(np.int64)
    cum = np.concatenate(([0.0], np.cumsum(np.asarray(ln_p, dtype=np.float64))))
    return cum[ends] - cum[starts], tokens


def read_sentence_totals(path: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The sentences of a ``perplexity --per-word`` TSV (:func:`write_per_word`), in file order:
    their ids, log-probability sums (column ``ln_p``, natural log) and token counts."""
    sums = read_sentence_sums(path)
    return sums["ids"], sums["lp"], sums["tok"]


def read_sentence_sums(path: str, marked: set[tuple[str, int]] | None = None) -> dict:
    """One pass over a ``perplexity --per-word`` TSV: per sentence (file order) ``ids``, ``lp``
    (log-probability sums, natural log) and ``tok`` (token counts), and with ``marked`` (a set of
    ``(utt_id, 0-based position)``) ``marked_lp`` / ``marked_n``: the sums and counts over those
    tokens only. The sums are float64 arrays."""
    import csv

    ids: list[str] = []
    lp: list[float] = []
    tok: list[int] = []
    marked_lp: list[float] = []
    marked_n: list[int] = []
    pos: dict[str, int] = {}
    with open(path, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            u = row["utt_id"]
            k = pos.get(u)
            if k is None:
                k = pos[u] = len(ids)
                ids.append(u)
                lp.append(0.0)
                tok.append(0)
                marked_lp.append(0.0)
                marked_n.append(0)
            value = float(row["ln_p"])
            lp[k] += value
            tok[k] += 1
            if marked and (u, int(row["position"]) - 1) in marked:
                marked_lp[k] += value
                marked_n[k] += 1
    sums = {"ids": ids, "lp": np.array(lp, dtype=np.float64), "tok": np.array(tok, dtype=np.float64)}
    if marked is not None:
        sums["marked_lp"] = np.array(marked_lp, dtype=np.float64)
        sums["marked_n"] = np.array(marked_n, dtype=np.float64)
    return sums


def bootstrap_perplexity(logprob: Sequence[float], tokens: Sequence[float], resamples: int,
                         level: float = 0.95, seed: int | None = None,
                         logprob_b: Sequence[float] | None = None) -> dict:
    """Percentile interval of the perplexity over ``resamples`` resamples of the sentences.

    Args:
        logprob: per sentence, the natural-log probability sum of its tokens.
        tokens: per sentence, its token count (words + ``</s>``).
        resamples: B, the number of resamples (each: U sentences drawn with replacement).
        level: the interval's level (0.95: the 2.5 and 97.5 percentiles).
        seed: of ``numpy.random.default_rng`` (None: a random one, returned).
        logprob_b: per sentence, a second LM's sum on the same sentences: then also the paired
            difference ``ppl - ppl_b`` and its interval (the same resamples).

    Returns:
        ``{"unit": "sentence", "units", "resamples", "level", "seed", "ppl", "ppl_low",
        "ppl_high"}`` and with ``logprob_b`` also ``"ppl_b", "diff", "diff_low", "diff_high"``.
    """
    import secrets

    from asrpriv.wer.bootstrap import resample_indices

    lp = np.asarray(logprob, dtype=np.float64)
    tok = np.asarray(tokens, dtype=np.float64)
    if lp.shape != tok.shape or lp.ndim != 1 or not len(lp):
        raise ValueError("logprob and tokens: one value per sentence, at least one sentence")
    if (tok <= 0).any():
        raise ValueError("every sentence has at least one token (its </s>)")
    lpb = None if logprob_b is None else np.asarray(logprob_b, dtype=np.float64)
    if lpb is not None and lpb.shape != lp.shape:
        raise ValueError("logprob_b: one value per sentence of logprob")
    if seed is None:
        seed = secrets.randbits(63)
    rng = np.random.default_rng(seed)
    ppls, diffs = [], []
    with np.errstate(over="ignore"):
        for idx in resample_indices(rng, len(lp), resamples):
            n = tok[idx].sum(axis=1)
            a = np.exp(-lp[idx].sum(axis=1) / n)
            ppls.append(a)
            if lpb is not None:
                diffs.append(a - np.exp(-lpb[idx].sum(axis=1) / n))
        q = [100.0 * (1.0 - level) / 2.0, 100.0 * (1.0 + level) / 2.0]
        total = tok.sum()
        point = math.exp(-lp.sum() / total)
        lo, hi = np.percentile(np.concatenate(ppls), q)
        out = {"unit": "sentence", "units": len(lp), "resamples": int(resamples), "level": level,
               "seed": seed, "ppl": point, "ppl_low": float(lo), "ppl_high": float(hi)}
        if lpb is not None:
            point_b = math.exp(-lpb.sum() / total)
            dlo, dhi = np.percentile(np.concatenate(diffs), q)
            out.update(ppl_b=point_b, diff=point - point_b, diff_low=float(dlo), diff_high=float(dhi))
    return out


def write_per_word(out: IO[str], sentences: Sequence[Sequence[str]], ids: Sequence[str] | None,
                   ln_p: np.ndarray, oov: np.ndarray, components: np.ndarray | None = None) -> None:
    """Write one TSV row per scored token (see docs/FORMATS.md, "Per-word log-probabilities").

    Columns: ``utt_id`` (the Kaldi/TSV id, else the 1-based sentence number), ``position``
    (1-based; ``</s>`` is n+1), ``word``, ``oov`` (0/1), ``ln_p`` (the scored model: the
    mixture, or the one LM), then with several LMs ``ln_p_1 .. ln_p_K`` (each LM alone, in
    ``--lm`` order). Natural log, written as the shortest decimal that reads back exactly.
    """
    k = 0 if components is None else components.shape[0]
    header = ["utt_id", "position", "word", "oov", "ln_p"] + [f"ln_p_{i}" for i in range(1, k + 1)]
    out.write("\t".join(header) + "\n")
    sent = sentence_index(sentences)
    t = 0
    rows: list[str] = []
    lp = ln_p.tolist()
    comp = components.T.tolist() if k else None
    ov = oov.tolist()
    for s, words in enumerate(sentences):
        uid = ids[s] if ids is not None else str(s + 1)
        for pos, word in enumerate((*words, "</s>"), 1):
            fields = [uid, str(pos), word, "1" if ov[t] else "0", repr(lp[t])]
            if comp is not None:
                fields.extend(repr(x) for x in comp[t])
            rows.append("\t".join(fields) + "\n")
            t += 1
        if len(rows) >= 65536:
            out.write("".join(rows))
            rows.clear()
    out.write("".join(rows))
    assert t == len(sent)
