"""Reading training text and counting n-grams into sorted integer tables.

Sentences are framed as ``<s> w1 .. wn </s>``; an n-gram never crosses a sentence boundary,
and ``<s>`` occurs only as the first word of an n-gram (one ``<s>`` per sentence, no padding:
the n-gram ``<s> w1`` is the longest history at a sentence start, as in SRILM and KenLM).

Tables are numpy arrays kept in lexicographic order of the word ids. An n-gram of order
``n >= 2`` is stored as one int64 key ``prefix_index * V + last_word`` where ``prefix_index``
is the row of its ``(n-1)``-word prefix in the order ``n-1`` table and ``V`` the vocabulary
size; the unigram table is the vocabulary itself (row = word id). The keys of one order
sorted ascending are thus in lexicographic order of the words, for any order and any ``V``
(no mixed-radix overflow), and a lookup is one ``searchsorted``.

Memory: the input is streamed line by line into one int32 token array (4 bytes per running
word, less than the n-gram tables built from it); the tables grow with the number of
distinct n-grams.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

import numpy as np

from asrpriv.errors import InputError

UNK = "<unk>"
BOS = "<s>"
EOS = "</s>"
#: fixed ids of the special words
UNK_ID, BOS_ID, EOS_ID = 0, 1, 2


class EmptyTextError(ValueError):
    """No non-empty sentence to count."""


class Vocab:
    """Word <-> id map; ids 0, 1, 2 are ``<unk>``, ``<s>``, ``</s>``.

    ``closed=True`` (a ``--vocab`` list): words not in the list map to ``<unk>``; otherwise
    new words are added as they are seen.
    """

    def __init__(self, words: Iterable[str] = (), closed: bool = False) -> None:
        self.words: list[str] = [UNK, BOS, EOS]
        self.ids: dict[str, int] = {UNK: UNK_ID, BOS: BOS_ID, EOS: EOS_ID}
        for word in words:
            self.add(word)
        self.closed = closed

    def add(self, word: str) -> int:
        wid = self.ids.get(word)
        if wid is None:
            wid = self.ids[word] = len(self.words)
            self.words.append(word)
        return wid

    def __len__(self) -> int:
        return len(self.words)


@dataclass
class Order:
    """The distinct n-grams of one order, sorted lexicographically (see the module docstring).

    ``keys``: int64 (``prefix * V + last``; for unigrams, the word id); ``prefix``: row of the
    ``(n-1)``-word prefix in the previous order (-1 for unigrams); ``suffix``: row of the
    ``(n-1)``-word suffix (the back-off n-gram) in the previous order (-1 for unigrams);
    ``last``: the last word id; ``first``: the first word id; ``count``: raw occurrences.
    """

    n: int
    keys: np.ndarray
    prefix: np.ndarray
    suffix: np.ndarray
    last: np.ndarray
    first: np.ndarray
    count: np.ndarray

    def __len__(self) -> int:
        return len(self.keys)


@dataclass
class NgramCounts:
    """Raw counts of every order 1..N, plus the vocabulary and the number of sentences."""

    vocab: Vocab
    orders: list[Order] = field(default_factory=list)
    sentences: int = 0
    tokens: int = 0  # running words, without <s> and </s>
    oov_tokens: int = 0  # running words mapped to <unk> by a closed vocabulary

    @property
    def order(self) -> int:
        return len(self.orders)

    def words_of(self, n: int, row: int) -> tuple[str, ...]:
        """The words of row ``row`` of order ``n`` (for messages and tests; not fast)."""
        out = []
        while n > 1:
            table = self.orders[n - 1]
            out.append(self.vocab.words[int(table.last[row])])
            row = int(table.prefix[row])
            n -= 1
        out.append(self.vocab.words[row])
        return tuple(reversed(out))


def encode_sentences(sentences: Iterable[Sequence[str]], vocab: Vocab) -> tuple[array, int, int, int]:
    """Frame and encode sentences into one int32 token stream ``<s> w.. </s> <s> w.. </s>``.

    Returns ``(tokens, sentences, running_words, oov_words)``. Empty sentences are skipped.
    Raises ``ValueError`` for a sentence that contains ``<s>`` or ``</s>``.
    """
    tokens = array("i")
    ids = vocab.ids
    closed = vocab.closed
    n_sent = n_words = n_oov = 0
    for words in sentences:
        if not words:
            continue
        row = [BOS_ID]
        for word in words:
            wid = ids.get(word)
            if wid is None:
                if closed:
                    wid = UNK_ID
                    n_oov += 1
                else:
                    wid = vocab.add(word)
            elif wid == BOS_ID or wid == EOS_ID:
                raise ValueError(f"sentence contains the reserved word {word}")
            row.append(wid)
        row.append(EOS_ID)
        tokens.extend(row)
        n_sent += 1
        n_words += len(words)
    return tokens, n_sent, n_words, n_oov


def count_ngrams(sentences: Iterable[Sequence[str]], order: int, vocab: Vocab | None = None) -> NgramCounts:
    """Count every n-gram of orders 1..``order`` in ``sentences`` (lists of words).

    Raises :class:`EmptyTextError` if there is no non-empty sentence, ``ValueError`` if one contains ``<s>``/``</s>``.
    """
    if order < 1:
        raise ValueError("order must be at least 1")
    vocab = vocab if vocab is not None else Vocab()
    stream, n_sent, n_words, n_oov = encode_sentences(sentences, vocab)
    if n_sent == 0:
        raise EmptyTextError("no sentences to train on")
    tok = np.frombuffer(stream, dtype=np.int32).astype(np.int64)
    V = len(vocab)
    # sentence number of each token: a new sentence starts at each <s>
    sid = np.cumsum(tok == BOS_ID)
    result = NgramCounts(vocab=vocab, sentences=n_sent, tokens=n_words, oov_tokens=n_oov)

    ids = np.arange(V, dtype=np.int64)
    minus = np.full(V, -1, dtype=np.int64)
    result.orders.append(Order(1, ids, minus, minus.copy(), ids, ids,
                               np.bincount(tok, minlength=V).astype(np.int64)))
    idx = tok  # row, in the previous order's table, of the (n-1)-gram starting at each position
    T = len(tok)
    for n in range(2, order + 1):
        span = T - n + 1
        if span <= 0:
            break
        valid = sid[:span] == sid[n - 1:]
        valid &= idx[:span] >= 0
        key = idx[:span] * V + tok[n - 1:]
        keys, inverse, counts = np.unique(key[valid], return_inverse=True, return_counts=True)
        if len(keys) == 0:
            break
        prev = result.orders[-1]
        prefix = keys // V
        last = keys % V
        if n == 2:
            suffix = last.copy()
        else:
            skey = prev.suffix[prefix] * V + last  # (w2..w_{n-1}) row * V + w_n, in order n-1
            suffix = np.searchsorted(prev.keys, skey)
        first = prev.first[prefix]
        result.orders.append(Order(n, keys, prefix, suffix, last, first, counts.astype(np.int64)))
        new_idx = np.full(span, -1, dtype=np.int64)
        new_idx[valid] = inverse
        idx = new_idx
    return result


def read_sentences(path: str | None, ids: bool = False) -> Iterator[list[str]]:
    """Yield the word lists of a text file (``-`` = stdin), one sentence per line.

    ``ids=True``: Kaldi text, the first token of each line is the utterance id (dropped).
    Blank lines (and utterances without words) are skipped. A line with ``<s>`` or ``</s>``
    is an :class:`~asrpriv.errors.InputError` naming the line.
    """
    from asrpriv.io.kaldi import iter_text
    from asrpriv.io.lines import iter_lines

    if ids:
        source = ((lineno, words) for lineno, _utt, words in iter_text(path))
    else:
        source = ((lineno, line.split()) for lineno, line in iter_lines(path))
    for lineno, words in source:
        if BOS in words or EOS in words:
            bad = BOS if BOS in words else EOS
            raise InputError(path, lineno, f"reserved word {bad} in the text (sentences are framed "
                                           "with <s> and </s> automatically)")
        yield words


def read_vocab(path: str) -> list[str]:
    """Read a vocabulary list: white-space separated words (one per line is usual).

    ``<s>``, ``</s>`` and ``<unk>`` are allowed and ignored (they are always in the model).
    """
    from asrpriv.io.lines import iter_lines

    return vocab_from_lines(path, iter_lines(path))


def vocab_from_lines(path: str, numbered) -> list[str]:
    """:func:`read_vocab` on ``(line number, line)`` pairs already being read."""
    words: list[str] = []
    for _lineno, line in numbered:
        words.extend(w for w in line.split() if w not in (BOS, EOS, UNK))
    if not words:
        raise InputError(path, None, "empty vocabulary: expected words, one per line")
    return words
