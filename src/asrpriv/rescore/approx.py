"""The ``approx-ngram`` step as a library call: an ARPA n-gram approximation of a neural LM.

It lives beside the NNLM scorer it drives (:class:`asrpriv.rescore.nnlm.NnlmScorer`); the
n-gram estimate itself is :mod:`asrpriv.ngram.approx` (paper 003 §2.4, Singh et al. 2017).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

from asrpriv.errors import arg


@dataclass
class ApproxSettings:
    """The settings of ``approx-ngram``: ``text`` (``-`` = stdin; Kaldi text with ``ids``) is
    scored by the neural LM ``model``; ``order`` 1..6; ``min_backoff`` in [0, 1) is the least
    mass each context leaves to back-off; ``output`` the ARPA (log10), ``-`` = stdout.
    ``public`` declares ``text`` public (else the ARPA records it as private data)."""

    text: str = "-"
    model: str = ""
    order: int = 3
    ids: bool = False
    min_backoff: float = 0.01
    batch_tokens: int = 4096
    device: str = "cpu"
    threads: int = 0
    precision: int = 7
    output: str = "-"
    public: bool = False
    allow_seeded: bool = False


@dataclass
class ApproxResult:
    """What was written: sentences and tokens scored, n-grams per order, seconds scoring."""

    sentences: int
    tokens: int
    ngrams: list[int]
    scoring_seconds: float
    seconds: float

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / max(self.scoring_seconds, 1e-9)

    def summary(self) -> str:
        """The line ``approx-ngram`` says on stderr."""
        return (f"approx-ngram: {self.sentences} sentences, {self.tokens} tokens scored in "
                f"{self.scoring_seconds:.1f} s ({self.tokens_per_second:.0f} tokens/s); n-grams "
                + " ".join(str(n) for n in self.ngrams) + f"; total {self.seconds:.1f} s")


def approx_ngram(s: ApproxSettings, info: Callable[[str], None] | None = None) -> ApproxResult:
    """The step ``approx-ngram`` (:func:`_approx_ngram`); the model given as ``-`` is read
    from standard input (copied once)."""
    import dataclasses

    from asrpriv.io.lines import stdin_spooled

    with stdin_spooled(s.model, streamed=(s.text,)) as (model,):
        return _approx_ngram(dataclasses.replace(s, model=model), info)


def _approx_ngram(s: ApproxSettings, info: Callable[[str], None] | None = None) -> ApproxResult:
    """The step ``approx-ngram``: for every token of ``text`` (its words and each sentence's
    ``</s>``) the neural LM's probability given the whole sentence so far is assigned to the
    token's 1..N-gram and averaged per n-gram (probabilities, not logs); each context keeps
    ``max(min_backoff, 1 - sum)`` for back-off (formulas in :mod:`asrpriv.ngram.approx`).

    The ARPA carries the privacy state of the model and of the text
    (:mod:`asrpriv.provenance`). Bad settings raise AsrprivError, bad input InputError.
    """
    from asrpriv.errors import AsrprivError, InputError
    from asrpriv.io.output import open_output
    from asrpriv.ngram.approx import average_ngrams, build_approx, token_logprobs, write_approx_arpa
    from asrpriv.nnlm.data import read_corpus
    from asrpriv.nnlm.modelfile import read_model_file
    from asrpriv.nnlm.runtime import use_threads
    from asrpriv.provenance import Inputs, write_arpa_header
    from asrpriv.rescore.nnlm import NnlmScorer, _max_positions

    if not 1 <= s.order <= 6:
        raise AsrprivError(f"{arg('order')} must be in 1..6, got {s.order}")
    if not (math.isfinite(s.min_backoff) and 0.0 <= s.min_backoff < 1.0):
        raise AsrprivError(f"{arg('min_backoff')} must be in [0, 1), got {s.min_backoff}")
    if not 1 <= s.precision <= 17:
        raise AsrprivError(f"{arg('precision')} must be in 1..17, got {s.precision}")
    if s.batch_tokens < 1 or s.threads < 0:
        raise AsrprivError(f"{arg('batch_tokens')} must be >= 1 and {arg('threads')} >= 0")
    inputs = Inputs(s.allow_seeded)
    inputs.add_payload(s.model, read_model_file(s.model))
    inputs.add_text(s.text, s.public)
    use_threads(s.threads)
    scorer = NnlmScorer(s.model, device=s.device, batch_tokens=s.batch_tokens)
    model, vocab, config = scorer.model, scorer.vocab, scorer.config
    limit = _max_positions(config)
    corpus = read_corpus(s.text, ids=s.ids, max_words=limit - 1 if limit else None)
    sentences = corpus.sentences
    if not sentences:
        raise InputError(s.text, None, "empty input: expected sentences")
    start = time.perf_counter()
    seqs, logps = token_logprobs(model, vocab, sentences, s.batch_tokens, s.device, scorer=scorer)
    t_score = time.perf_counter() - start
    tokens = sum(len(x) for x in logps)
    base = len(vocab) + 1
    tables = average_ngrams(seqs, logps, s.order, base)
    orders = build_approx(tables, base, vocab.unk_id, vocab.bos_id, s.min_backoff)
    with open_output(s.output) as out:
        write_arpa_header(out, "approx-ngram", inputs.state())
        write_approx_arpa(out, orders, vocab.words, s.precision)
    return ApproxResult(len(sentences), tokens, [len(o.rows) for o in orders], t_score,
                        time.perf_counter() - start)
