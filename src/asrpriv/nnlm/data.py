"""Training and evaluation text for neural LMs: plain text, Kaldi text, N-best TSV (no torch here).

Formats (:func:`read_corpus`):

* an N-best TSV is recognised by its header (tab-separated, with ``utt_id`` and ``text``);
  the rank-1 (best) hypothesis of each utterance is used, with its ``confidence`` column
  (one float in [0, 1] per word) when the file has one;
* otherwise Kaldi text (``utt_id word ...``) with ``ids=True``, or plain text (one sentence
  per line) without.

A first line that looks like a misspelt N-best header is refused; plain text whose first
tokens look like utterance ids gets a warning in :attr:`Corpus.notes` (``asrpriv.io.sniff``).
A sentence longer than ``max_words`` is refused with FILE:LINE.

Blank lines of plain text are not sentences; an utterance (Kaldi or TSV) with no words is a
sentence of zero words (only ``</s>`` is predicted). Literal ``<s>``/``</s>`` in the text are
refused: the sentence markers are added here, never read.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from asrpriv.errors import InputError, arg
from asrpriv.io.lines import iter_lines
from asrpriv.io.nbest import NbestReader
from asrpriv.nnlm.vocab import BOS, EOS


@dataclass
class Corpus:
    """Sentences (word lists) of one input, with per-word confidences when the input had them.

    Attributes:
        sentences: the word lists, in input order.
        confidences: one list of floats per sentence (same lengths), or None.
        kind: "text", "kaldi" or "nbest".
        ids: utterance ids (Kaldi/TSV) or None.
        clients: the TSV's ``client`` column, one per sentence, or None.
        notes: warnings about the input for the user (e.g. ids that look like words).
    """

    sentences: list[list[str]] = field(default_factory=list)
    confidences: list[list[float]] | None = None
    kind: str = "text"
    ids: list[str] | None = None
    clients: list[str] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def words(self) -> int:
        """Number of words (``</s>`` not included)."""
        return sum(len(s) for s in self.sentences)

    def __len__(self) -> int:
        return len(self.sentences)


def _is_tsv_header(line: str) -> bool:
    columns = line.split("\t")
    return len(columns) > 1 and "utt_id" in columns and "text" in columns


def _check_words(words: list[str], path: str | None, lineno: int,
                 max_words: int | None = None) -> list[str]:
    if max_words is not None and len(words) > max_words:
        raise InputError(path, lineno, f"a sentence of {len(words)} words is longer than "
                                       f"{arg('max_words')} {max_words}")
    for marker in (BOS, EOS):
        if marker in words:
            raise InputError(path, lineno, f"{marker!r} in the text (sentence markers are added "
                                           "by the step, not read)")
    return words


def read_corpus(path: str | None, ids: bool = False, max_words: int | None = None) -> Corpus:
    """Read a whole input (``-``/None = stdin); see the module docstring for formats."""
    from asrpriv.io.kaldi import iter_text
    from asrpriv.io.sniff import SAMPLE_LINES, ids_warning, tsv_header_problem

    lines = iter_lines(path)
    first = None
    for lineno, line in lines:
        if line.strip():
            first = (lineno, line)
            break
    corpus = Corpus(kind="kaldi" if ids else "text")
    if first is None:
        return corpus
    if _is_tsv_header(first[1]):
        return _read_nbest(path, itertools.chain([first], lines), max_words)
    problem = tsv_header_problem(first[1])
    if problem:
        raise InputError(path, first[0], problem)
    sentences = corpus.sentences
    if ids:
        corpus.ids = []
        for lineno, utt_id, words in iter_text(path, itertools.chain([first], lines)):
            corpus.ids.append(utt_id)
            sentences.append(_check_words(words, path, lineno, max_words))
    else:
        sample: list[str] = []
        for lineno, line in itertools.chain([first], lines):
            words = line.split()
            if words:
                if len(sample) < SAMPLE_LINES:
                    sample.append(line)
                sentences.append(_check_words(words, path, lineno, max_words))
        note = ids_warning(sample)
        if note:
            corpus.notes.append(note)
    return corpus


def _read_nbest(path: str | None, lines, max_words: int | None = None) -> Corpus:
    reader = NbestReader(path, lines=lines)
    has_conf = "confidence" in reader.index
    corpus = Corpus(kind="nbest", ids=[], confidences=[] if has_conf else None,
                    clients=[] if "client" in reader.index else None)
    for utt in reader:
        best = utt.hyps[0]
        corpus.ids.append(utt.utt_id)
        if corpus.clients is not None:
            corpus.clients.append(utt.client)
        corpus.sentences.append(_check_words(best.words, path, best.lineno, max_words))
        if has_conf:
            corpus.confidences.append(best.confidence)
    return corpus
