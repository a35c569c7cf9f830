"""N-gram sentence scores through kenlm.

kenlm reads ARPA (plain or gzip) and its own binary formats, and scores in log10; we return
natural-log scores (``log10 * ln 10``). A sentence ``w1..wn`` is scored from ``<s>`` and includes
``</s>``: ``sum_{i=1..n+1} ln P(w_i | history)`` with ``w_{n+1} = </s>``, as
``kenlm.Model.score(sentence, bos=True, eos=True)`` does. Words outside the LM's vocabulary get
the LM's ``<unk>`` probability (kenlm substitutes log10 -100 when the ARPA has no ``<unk>``).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from typing import Iterator, Sequence

from asrpriv.errors import AsrprivError, InputError
from asrpriv.io.lines import require_regular_file

LN10 = math.log(10.0)


@contextlib.contextmanager
def silence_native_stderr(enabled: bool = True) -> Iterator[None]:
    """Redirect file descriptor 2 to /dev/null (kenlm's loader prints a progress bar there)."""
    if not enabled:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


class NgramScorer:
    """A kenlm model that scores word sequences in natural log.

    Args:
        path: ARPA (``.arpa``/``.arpa.gz``) or KenLM binary file.
        verbose: let kenlm's loading messages through to stderr.
        classes: membership file of a class LM (``path`` is then its class ARPA; see
            :mod:`asrpriv.ngram.classes`).
    """

    def __init__(self, path: str, verbose: bool = False, classes: str | None = None) -> None:
        import kenlm

        if not os.path.exists(path):
            raise AsrprivError(f"{path}: no such n-gram LM file")
        require_regular_file(path, "an n-gram LM file")  # kenlm reads it more than once
        try:
            with silence_native_stderr(not verbose):
                self.model = kenlm.Model(path)
        except (OSError, RuntimeError, ValueError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise InputError(path, None, f"cannot load as an ARPA or KenLM binary LM ({first})") from None
        if classes is not None:
            from asrpriv.ngram.classes import ClassKenlmModel, read_class_map

            self.model = ClassKenlmModel(self.model, read_class_map(classes))
        self.path = path
        self.order = self.model.order

    def score(self, words: Sequence[str]) -> float:
        """Natural-log probability of ``<s> words </s>`` (sum over the words and ``</s>``)."""
        return self.model.score(" ".join(words), bos=True, eos=True) * LN10

    def score_many(self, sentences: Sequence[Sequence[str]]) -> list[float]:
        """:meth:`score` of each sentence (identical sentences are scored once)."""
        cache: dict[str, float] = {}
        score = self.model.score
        out = []
        for words in sentences:
            key = " ".join(words)
            value = cache.get(key)
            if value is None:
                value = cache[key] = score(key, bos=True, eos=True) * LN10
            out.append(value)
        return out


class MixedNgramScorer:
    """Several kenlm models, dynamically interpolated per word (paper 003 Eq. 3).

    A sentence's score is ``sum_i ln sum_k lambda_k P_k(w_i | h_i)`` over its words and
    ``</s>``: each LM scores every word through its own back-off (a word outside its
    vocabulary with its ``<unk>``), the mixture is taken word by word, not sentence by sentence.

    Args:
        paths: ARPA or KenLM binary files.
        weights: one weight per LM, >= 0, summing to 1.
        verbose: let kenlm's loading messages through to stderr.
    """

    def __init__(self, paths, weights, verbose: bool = False, classes=None) -> None:
        classes = classes or [None] * len(paths)
        self.scorers = [NgramScorer(p, verbose=verbose, classes=c) for p, c in zip(paths, classes)]
        self.weights = [float(w) for w in weights]
        self.path = ",".join(paths)
        self.order = max(s.order for s in self.scorers)

    def score(self, words: Sequence[str]) -> float:
        return self.score_many([words])[0]

    def score_many(self, sentences: Sequence[Sequence[str]]) -> list[float]:
        """Natural-log mixture score of each sentence (identical sentences are scored once)."""
        import numpy as np

        keys = [" ".join(words) for words in sentences]
        distinct = list(dict.fromkeys(keys))
        lengths = np.array([len(k.split()) + 1 for k in distinct], dtype=np.int64)
        per_lm = []
        for scorer in self.scorers:
            full = scorer.model.full_scores
            per_lm.append([lp for key in distinct for lp, _, _ in full(key, bos=True, eos=True)])
        logp10 = np.asarray(per_lm, dtype=np.float64)
        top = logp10.max(axis=0)
        mixed = np.log(np.asarray(self.weights) @ np.power(10.0, logp10 - top)) + top * LN10
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        sums = np.add.reduceat(mixed, starts) if len(mixed) else np.zeros(0)
        value = dict(zip(distinct, sums.tolist()))
        return [value[k] for k in keys]
