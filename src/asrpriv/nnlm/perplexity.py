"""Perplexity of neural (our model files) and n-gram (ARPA / kenlm binary) LMs, one convention.

Both paths follow ARPA/kenlm conventions so the numbers compare: every sentence ends with a
scored ``</s>``, ``<s>`` is context only, OOV words are scored as ``<unk>`` (and counted), and

    ppl = exp(-sum ln p / (words + sentences))

with natural-log probabilities (kenlm's log10 scores are multiplied by ln 10).
"""

from __future__ import annotations

import math
from typing import Sequence

LN10 = math.log(10.0)


def _summary(logprob: float, words: int, sentences: int, oovs: int, lm_type: str) -> dict:
    tokens = words + sentences
    return {"ppl": math.exp(-logprob / tokens) if tokens else float("nan"),
            "logprob": logprob, "tokens": tokens, "words": words, "sentences": sentences,
            "oovs": oovs, "lm_type": lm_type, "log_base": "e",
            "oov_policy": "OOV words scored as <unk> and counted in tokens"}


def nnlm_perplexity(model, vocab, sentences: Sequence[Sequence[str]], batch_size: int = 64) -> dict:
    """Perplexity summary of a neural LM (see module docstring) on word-list ``sentences``."""
    from asrpriv.nnlm.score import sentence_logprobs

    logprobs = sentence_logprobs(model, vocab, sentences, batch_size=batch_size)
    words = sum(len(s) for s in sentences)
    oovs = sum(1 for s in sentences for w in s if vocab.is_oov(w))
    return _summary(math.fsum(logprobs), words, len(sentences), oovs, "nnlm")


def load_kenlm(path: str):
    """A ``kenlm.Model`` of an ARPA (optionally .gz) or kenlm binary file.

    kenlm's own stderr chatter (progress bar, "build a binary file" hint) is silenced; a file
    it cannot read becomes a one-line :class:`~asrpriv.errors.InputError`.
    """
    import os
    import tempfile

    import kenlm

    from asrpriv.errors import InputError
    from asrpriv.io.lines import require_regular_file

    require_regular_file(path, "an ARPA or kenlm binary LM")  # kenlm reads it more than once
    config = kenlm.Config()
    config.show_progress = False
    config.arpa_complain = kenlm.ARPALoadComplain.NONE if hasattr(kenlm, "ARPALoadComplain") \
        else config.arpa_complain
    saved = os.dup(2)
    with tempfile.TemporaryFile() as chatter:
        os.dup2(chatter.fileno(), 2)
        try:
            return kenlm.Model(str(path), config)
        except Exception as err:  # noqa: BLE001 - kenlm raises OSError, RuntimeError, UnicodeError...
            text = " ".join(str(err).split()) or type(err).__name__
            if " because " in text:  # kenlm: "... threw FormatLoadException because `...'. What"
                text = text.split(" because ", 1)[1]
            raise InputError(path, None, f"not an ARPA or kenlm binary LM ({text[:200]})") from None
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def kenlm_perplexity(model, sentences: Sequence[Sequence[str]]) -> dict:
    """Perplexity summary of a ``kenlm.Model`` on word-list ``sentences`` (natural log)."""
    total10 = 0.0
    words = oovs = 0
    parts = []
    for s in sentences:
        for log10p, _order, oov in model.full_scores(" ".join(s), bos=True, eos=True):
            parts.append(log10p)
            oovs += oov
        words += len(s)
    total10 = math.fsum(parts)
    return _summary(total10 * LN10, words, len(sentences), oovs, "ngram")


def format_line(summary: dict, name: str) -> str:
    """The one-line report of :func:`nnlm_perplexity` / :func:`kenlm_perplexity`."""
    return (f"{name}: ppl={summary['ppl']:.4f} logprob={summary['logprob']:.4f} "
            f"tokens={summary['tokens']} words={summary['words']} sentences={summary['sentences']} "
            f"oovs={summary['oovs']} (natural log; </s> counted, OOVs scored as <unk>)")
