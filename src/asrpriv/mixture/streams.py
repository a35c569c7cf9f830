"""Per-token log-probability streams of language models of any kind (natural log).

A *stream* is what one LM says about every scored token of a text, in text order: for each
sentence ``w1..wn`` the tokens ``w1 .. wn </s>`` (``<s>`` is context only), so a text of S
sentences and W words has ``W + S`` tokens. Each LM scores a token as it does alone: a word
outside its vocabulary gets its ``<unk>`` probability (kenlm's and asrpriv's convention) and is
flagged as an OOV *of that LM*.

The protocol an LM kind implements (:class:`TokenLM`)::

    lm.name                          # how it is named in reports
    lm.kind                          # "ngram", "nnlm", ...
    lm.word_logprobs(sentences)      # -> (ln p float64[tokens], oov bool[tokens])

and :data:`LOADERS` maps a file to its kind: ``(kind, detect(path) -> bool, load(path, **opts))``,
tried in order; the last entry (kenlm: ARPA, ``.arpa.gz``, kenlm binary) takes any file. A new
kind (a class LM) adds one entry before it.
"""

from __future__ import annotations

import math
import os
from typing import Callable, Protocol, Sequence

import numpy as np

from asrpriv.errors import InputError, arg, display_name
from asrpriv.io.lines import require_regular_file
from asrpriv.io.sniff import is_torch_file

LN10 = math.log(10.0)


class TokenLM(Protocol):
    """An LM that scores every token of a text (see the module docstring)."""

    name: str
    kind: str

    def word_logprobs(self, sentences: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
        """``(ln p, oov)`` of the tokens ``w1..wn </s>`` of every sentence, in order."""


def token_count(sentences: Sequence[Sequence[str]]) -> int:
    """Scored tokens of ``sentences``: words plus one ``</s>`` per sentence."""
    return sum(len(s) for s in sentences) + len(sentences)


def sentence_index(sentences: Sequence[Sequence[str]]) -> np.ndarray:
    """For each token, the 0-based index of its sentence (int64[tokens])."""
    lengths = np.fromiter((len(s) + 1 for s in sentences), dtype=np.int64, count=len(sentences))
    return np.repeat(np.arange(len(sentences), dtype=np.int64), lengths)


class KenlmLM:
    """An ARPA (``.arpa``, ``.arpa.gz``) or kenlm binary n-gram LM, scored by kenlm (log10 -> ln).

    ``oov`` flags are kenlm's own (the word maps to ``<unk>``).
    """

    kind = "ngram"

    def __init__(self, path: str) -> None:
        from asrpriv.nnlm.perplexity import load_kenlm

        self.model = load_kenlm(path)
        self.name = display_name(path)
        self.order = self.model.order

    def __contains__(self, word: str) -> bool:
        return word in self.model

    def word_logprobs(self, sentences):
        logp: list[float] = []
        oov: list[bool] = []
        full_scores = self.model.full_scores
        for words in sentences:
            for log10p, _order, is_oov in full_scores(" ".join(words), bos=True, eos=True):
                logp.append(log10p)
                oov.append(is_oov)
        return np.asarray(logp, dtype=np.float64) * LN10, np.asarray(oov, dtype=bool)


class ClassLM(KenlmLM):
    """A class n-gram (ARPA over class tokens) with its membership file (``train-ngram --classes``).

    Scores ``ln P(c(w)|c(h)) + ln P(w|c(w))`` per token (:mod:`asrpriv.ngram.classes`).
    """

    kind = "class"

    def __init__(self, path: str, classes: str) -> None:
        from asrpriv.ngram.classes import load_class_model

        self.model = load_class_model(path, classes)
        self.name = display_name(path)
        self.order = self.model.order


class NnlmLM:
    """An asrpriv neural LM model file (``finetune-lm``), scored in batches of similar length.

    Args:
        path: the model file.
        batch_size: sentences per forward pass.
        device: where the model runs.
    """

    kind = "nnlm"

    def __init__(self, path: str, batch_size: int = 64, device: str = "cpu") -> None:
        from asrpriv.nnlm.modelfile import load_model

        self.model, self.vocab, self.config = load_model(path, device=device)
        self.name = display_name(path)
        self.batch_size = batch_size
        self.device = device

    def __contains__(self, word: str) -> bool:
        return word in self.vocab

    def word_logprobs(self, sentences):
        import torch

        from asrpriv.nnlm.score import encode_sentences, masked_logprobs, pad_batch

        model, vocab, device = self.model, self.vocab, self.device
        seqs = encode_sentences(vocab, sentences)
        offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
        np.cumsum([len(s) - 1 for s in seqs], out=offsets[1:])
        out = np.zeros(int(offsets[-1]), dtype=np.float64)
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        model.eval()
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start:start + self.batch_size]
                inputs, targets, mask = pad_batch([seqs[i] for i in idx], vocab.eos_id)
                inputs, targets, mask = inputs.to(device), targets.to(device), mask.to(device)
                picked = masked_logprobs(model, inputs, targets, mask)
                # mask rows are left-aligned, so the masked values come sentence by sentence
                values = picked.double().cpu().numpy()
                pos = 0
                for i in idx:
                    n = int(offsets[i + 1] - offsets[i])
                    out[offsets[i]:offsets[i + 1]] = values[pos:pos + n]
                    pos += n
        oov = np.fromiter((w not in vocab for s in sentences for w in (*s, "</s>")),
                          dtype=bool, count=len(out))
        return out, oov


#: (kind, detect(path), load(path, **options)), tried in order; the last takes any file
LOADERS: list[tuple[str, Callable[[str], bool], Callable[..., TokenLM]]] = [
    ("nnlm", is_torch_file,
     lambda path, batch_size=64, device="cpu", **_: NnlmLM(path, batch_size, device)),
    ("ngram", lambda path: True, lambda path, **_: KenlmLM(path)),
]


def load_lm(path: str, classes: str | None = None, **options) -> TokenLM:
    """Load one LM file of any known kind (see :data:`LOADERS`); a bad file is an InputError.

    ``classes``: a membership file; ``path`` is then the class ARPA of a :class:`ClassLM`
    (a class ARPA is an ordinary ARPA, so its kind is told, not detected).
    """
    for name in (path, classes):
        if name is not None and not os.path.exists(name):
            raise InputError(name, None, "no such file")
        if name is not None:
            require_regular_file(name, "an LM file")  # no FIFO: it is sniffed, then read again
    if classes is not None:
        return ClassLM(path, classes)
    for _kind, detect, load in LOADERS:
        if detect(path):
            return load(path, **options)
    raise InputError(path, None, "not a known LM file")  # unreachable: the last loader takes all


def pair_classes(lm_paths: Sequence[str], classes: Sequence[str]) -> list[str | None]:
    """Membership files per LM: none, one per LM in order (``-`` = a word LM), or one for one LM."""
    from asrpriv.errors import AsrprivError

    if not classes:
        return [None] * len(lm_paths)
    if len(classes) != len(lm_paths):
        raise AsrprivError(f"{len(classes)} {arg('classes')} for {len(lm_paths)} LMs: give one per LM, in "
                           "order, '-' for a word LM")
    return [None if c == "-" else c for c in classes]


def compute_streams(lms: Sequence[TokenLM], sentences: Sequence[Sequence[str]]
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Every LM's stream: ``(ln p float64[K, tokens], oov bool[K, tokens])``."""
    n = token_count(sentences)
    logp = np.empty((len(lms), n), dtype=np.float64)
    oov = np.empty((len(lms), n), dtype=bool)
    for k, lm in enumerate(lms):
        lp, ov = lm.word_logprobs(sentences)
        if lp.shape != (n,) or ov.shape != (n,):
            raise RuntimeError(f"{lm.name}: {lp.shape[0]} token scores for {n} tokens")
        logp[k], oov[k] = lp, ov
    return logp, oov
