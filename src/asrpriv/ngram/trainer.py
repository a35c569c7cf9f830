"""Training a back-off n-gram LM (interpolated modified Kneser-Ney) and writing it as ARPA.

See :mod:`asrpriv.ngram.kneser_ney` for the estimator and its equations; this module ties
counting, estimation and the ARPA text together.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import IO, Iterable, Sequence

import numpy as np

from asrpriv.ngram.arpa import ArpaModel, format_float, write_arpa
from asrpriv.ngram.counting import BOS_ID, EOS_ID, UNK_ID, NgramCounts, Vocab, count_ngrams
from asrpriv.ngram.kneser_ney import FALLBACK_DISCOUNTS, KneserNeyOrder, estimate

from asrpriv.errors import arg

#: digits after the point in trained ARPA files: |log10 error| <= 5e-8, i.e. a relative
#: probability error below 1.2e-7 (kenlm itself stores float32)
DEFAULT_PRECISION = 7
#: log10 probability written for <s> (context only, never predicted), as lmplz and SRILM do
BOS_LOG10 = -99.0


@dataclass
class TrainedModel:
    """Counts and modified Kneser-Ney estimates of every order, ready to be written."""

    counts: NgramCounts
    orders: list[KneserNeyOrder]

    @property
    def order(self) -> int:
        return len(self.orders)

    def ngram_counts(self) -> list[int]:
        return [len(table) for table in self.counts.orders]

    def _columns(self):
        """Per order: (word strings, log10 probs, log10 backoffs or NaN for none)."""
        vocab = self.counts.vocab.words
        prev_words: list[str] = []
        for n, (table, est) in enumerate(zip(self.counts.orders, self.orders), 1):
            if n == 1:
                words = list(vocab)
            else:
                words = [f"{prev_words[p]} {vocab[w]}"
                         for p, w in zip(table.prefix.tolist(), table.last.tolist())]
            with np.errstate(divide="ignore"):
                logp = np.log10(est.prob)
                logb = np.log10(est.gamma)
            if n == 1:
                logp[BOS_ID] = BOS_LOG10
            if n == self.order:
                logb = np.full(len(table), np.nan)
            yield n, words, logp, logb
            prev_words = words

    def write(self, out: IO[str] | str, precision: int | None = DEFAULT_PRECISION) -> None:
        """Write ARPA text to a stream or a path (a path is written atomically).

        An n-gram that is a context (has extensions) carries its back-off weight
        ``log10 gamma``; ``</s>``, highest-order n-grams and n-grams never extended carry none.
        """
        if isinstance(out, (str, os.PathLike)):
            from asrpriv.io.output import open_output

            with open_output(str(out)) as handle:
                self.write(handle, precision)
            return
        write_arpa(out, self.ngram_counts(), (
            (n, zip([format_float(x, precision) for x in logp.tolist()], words,
                    [format_float(x, precision) if x == x else None for x in logb.tolist()]))
            for n, words, logp, logb in self._columns()))

    def to_arpa_model(self, precision: int | None = None) -> ArpaModel:
        """The model as an :class:`ArpaModel` (exact float64 values unless ``precision``)."""
        ngrams = []
        for n, words, logp, logb in self._columns():
            table = {}
            for w, p, b in zip(words, logp.tolist(), logb.tolist()):
                if precision is not None:
                    p = round(p, precision)
                    b = b if b != b else round(b, precision)
                table[tuple(w.split(" "))] = (p, None if b != b else b)
            ngrams.append(table)
        return ArpaModel(ngrams)


def train(sentences: Iterable[Sequence[str]], order: int = 3, vocab: Iterable[str] | None = None,
          discount_fallback: bool | tuple[float, float, float] = False,
          discounts: dict[int, tuple[float, float, float]] | None = None) -> TrainedModel:
    """Count ``sentences`` (lists of words, without ``<s>``/``</s>``) and estimate the model.

    Args:
        order: the n-gram order N (>= 1).
        vocab: a closed vocabulary: words outside it are mapped to ``<unk>`` (which is then
            trained like a word); words in it that never occur get unigrams with the uniform
            share of the back-off mass. ``None``: the vocabulary is the words of the text.
        discount_fallback: when the discounts of an order cannot be estimated (tiny data),
            use lmplz's fallback (0.5, 1.0, 1.5) (``True``) or the given triple, instead of
            raising :class:`~asrpriv.ngram.kneser_ney.DiscountError`.
        discounts: fixed ``{order: (D1, D2, D3+)}`` overriding the estimates.
    Raises:
        ValueError: no sentences, a reserved word in a sentence, or an order below 1.
    """
    voc = Vocab(vocab, closed=True) if vocab is not None else Vocab()
    counts = count_ngrams(sentences, order, voc)
    if discount_fallback is True:
        fallback = FALLBACK_DISCOUNTS
    elif discount_fallback:
        fallback = tuple(discount_fallback)  # type: ignore[assignment]
    else:
        fallback = None
    return TrainedModel(counts, estimate(counts, fallback, discounts))


def train_arpa(sentences: Iterable[Sequence[str]], order: int = 3, output: str | IO[str] | None = None,
               precision: int | None = DEFAULT_PRECISION, **options) -> str | None:
    """Train an interpolated modified Kneser-Ney model and return or write its ARPA text.

    ``output``: a path (written atomically) or a text stream; ``None`` returns the ARPA text
    as a string. ``options`` go to :func:`train` (``vocab``, ``discount_fallback``,
    ``discounts``). Probabilities are log10, as ARPA stores them.
    """
    model = train(sentences, order, **options)
    if output is None:
        import io

        buffer = io.StringIO()
        model.write(buffer, precision)
        return buffer.getvalue()
    model.write(output, precision)
    return None


__all__ = ["TrainedModel", "train", "train_arpa", "UNK_ID", "EOS_ID", "BOS_ID"]


@dataclass
class TrainSettings:
    """The settings of ``train-ngram``: ``order`` 1-9, ``vocab`` a closed word list (None:
    open), ``classes_out``/``spans`` a class LM's membership file and entity spans (a file,
    or several: the spans of text that is their texts one after the other),
    ``precision`` digits of the log10 numbers, ``output`` the ARPA (``-`` = stdout);
    ``public`` declares the text public (else the ARPA records ``#private_raw``)."""

    text: str = "-"
    order: int = 3
    ids: bool = False
    vocab: str | None = None
    discount_fallback: bool = False
    classes_out: str | None = None
    spans: str | Sequence[str] | None = None
    class_names: str = "PER,LOC,ORG,TIME,NUM"
    member_share: float = 0.5
    precision: int = 7
    output: str = "-"
    public: bool = False


@dataclass
class TrainResult:
    """The trained model and, for a class LM, its class map; ``seconds`` the step took;
    ``vocab_given``: the words were mapped onto a given vocabulary."""

    model: TrainedModel
    class_map: object | None
    seconds: float = 0.0
    vocab_given: bool = False

    def notes(self) -> list[str]:
        """What ``train-ngram`` says on stderr: the classes (a class LM), then the counts,
        the n-grams per order, each order's discounts and the time."""
        lines = []
        if self.class_map is not None:
            lines.append("train-ngram: classes " + ", ".join(
                f"{c} {len(rows)} words" for c, rows in sorted(self.class_map.classes().items())))
        counts = self.model.counts
        lines.append(
            f"train-ngram: {counts.sentences} sentences, {counts.tokens} words"
            + (f" ({counts.oov_tokens} mapped to <unk>)" if self.vocab_given else "")
            + f"; n-grams {' '.join(str(c) for c in self.model.ngram_counts())}; "
            + "discounts " + "; ".join(
                f"{n}: " + ",".join(f"{d:.3f}" for d in est.discounts)
                + (" (fallback)" if est.fallback else "")
                for n, est in enumerate(self.model.orders, 1))
            + f"; {self.seconds:.1f} s")
        return lines


def _warn_if_ids(sentences, path):
    """Pass the sentences through, warning first if their first words look like utterance ids."""
    import itertools

    from asrpriv.errors import display_name
    from asrpriv.io.sniff import SAMPLE_LINES, ids_share_warning
    from asrpriv.talk import warn

    head = list(itertools.islice(sentences, SAMPLE_LINES))
    note = ids_share_warning(" ".join(words) for words in head)
    if note:
        warn(f"{display_name(path)}: {note}")
    yield from head
    yield from sentences


def train_ngram(s: TrainSettings) -> TrainResult:
    """The step ``train-ngram``: interpolated modified Kneser-Ney (lmplz's estimate) on the
    sentences of ``text``, written as ARPA (log10); with ``classes_out`` a class LM
    (paper 003 §2.2) and its membership file."""
    import math
    import time

    start = time.perf_counter()

    from asrpriv.errors import AsrprivError, InputError
    from asrpriv.io.output import open_output
    from asrpriv.ngram.counting import EmptyTextError, read_sentences
    from asrpriv.ngram.kneser_ney import DiscountError

    if not 1 <= s.order <= 9:
        raise AsrprivError(f"{arg('order')} must be in 1..9, got {s.order}")
    if not 1 <= s.precision <= 17:
        raise AsrprivError(f"{arg('precision')} must be in 1..17, got {s.precision}")
    if not (math.isfinite(s.member_share) and 0.0 < s.member_share <= 1.0):
        raise AsrprivError(f"{arg('member_share')} must be in (0, 1], got {s.member_share}")
    from asrpriv.provenance import Inputs, read_vocabulary, write_arpa_header

    inputs = Inputs()
    inputs.add_text(s.text, s.public)
    vocab = None
    if s.vocab is not None:  # a word list (asserted public) or a file with its own state
        from asrpriv.ngram.counting import vocab_from_lines

        vocab, vocab_state = read_vocabulary(s.vocab, vocab_from_lines)
        inputs.add(s.vocab, vocab_state)
    sentences = read_sentences(s.text, ids=s.ids)
    if not s.ids and s.classes_out is None:
        sentences = _warn_if_ids(sentences, s.text)
    class_map = None
    spans = None if s.spans is None else [s.spans] if isinstance(s.spans, str) else list(s.spans)
    if (s.classes_out is None) != (not spans):
        raise AsrprivError(f"{arg('classes')} FILE and {arg('spans')} FILE go together")
    if s.classes_out is not None:
        if vocab is not None:
            raise AsrprivError(f"{arg('vocab')} and {arg('classes')} together are not supported")
        from asrpriv.io.kaldi import iter_text
        from asrpriv.io.output import check_writable
        from asrpriv.ngram.classes import membership_from_spans
        from asrpriv.sanitize.spans import read_span_files

        check_writable(s.classes_out, arg("classes"))
        spans_by_utt = read_span_files(spans)
        for path in spans:
            inputs.add_text(path, s.public)  # annotations of the text: the text's state
        utts = [(utt, words) for _lineno, utt, words in iter_text(s.text)]
        names = [c.strip() for c in s.class_names.split(",") if c.strip()]
        class_map, _counts = membership_from_spans(utts, spans_by_utt, names, s.member_share)
        sentences = (class_map.map_words(words) for _utt, words in utts if words)
    try:
        model = train(sentences, s.order, vocab=vocab, discount_fallback=s.discount_fallback)
    except DiscountError as err:
        raise AsrprivError(f"{err}; try {arg('discount_fallback')}") from None
    except EmptyTextError:
        raise InputError(s.text, None, "empty input: expected text, one sentence per line") from None
    with open_output(s.output) as out:
        write_arpa_header(out, "train-ngram", inputs.state())
        model.write(out, s.precision)
    if class_map is not None:
        with open_output(s.classes_out) as out:
            class_map.write(out)
    return TrainResult(model, class_map, time.perf_counter() - start, s.vocab is not None)
