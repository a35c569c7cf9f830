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
    """The one-line report of a :func:`summarize` summary."""
    return (f"{name}: ppl={summary['ppl']:.4f} logprob={summary['logprob']:.4f} "
            f"tokens={summary['tokens']} words={summary['words']} sentences={summary['sentences']} "
            f"oovs={summary['oovs']} oov_rate={100 * summary['oov_rate']:.2f}% "
            f"srilm_ppl={summary['srilm_ppl']:.4f} srilm_ppl1={summary['srilm_ppl1']:.4f} "
            f"(natural log; </s> counted, OOVs scored as <unk>; srilm_*: OOVs excluded)")


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
