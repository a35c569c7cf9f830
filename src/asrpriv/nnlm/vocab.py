"""The word vocabulary of a neural LM (no torch here).

Ids are positions in :attr:`Vocabulary.words`. The first three entries are the specials, with
their ARPA names: ``<unk>`` (0), ``<s>`` (1) and ``</s>`` (2). ``<s>`` is context only and is
never predicted; ``</s>`` is predicted and scored, as in ARPA/kenlm perplexities.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Iterable, Sequence

UNK, BOS, EOS = "<unk>", "<s>", "</s>"
SPECIALS = (UNK, BOS, EOS)


class Vocabulary:
    """An ordered list of distinct words with the three specials first.

    Args:
        words: the words, id = position. The specials must be the first three entries
            (``<unk>``, ``<s>``, ``</s>``); use :func:`build_vocabulary` to make one from text.
    """

    __slots__ = ("words", "_index", "unk_id", "bos_id", "eos_id")

    def __init__(self, words: Sequence[str]) -> None:
        words = list(words)
        if tuple(words[:3]) != SPECIALS:
            raise ValueError(f"a vocabulary starts with {', '.join(SPECIALS)}; got {words[:3]}")
        index = {w: i for i, w in enumerate(words)}
        if len(index) != len(words):
            dup = next(w for w in words if words.count(w) > 1)
            raise ValueError(f"duplicate word in vocabulary: {dup!r}")
        if any(not isinstance(w, str) or not w or any(c.isspace() for c in w) for w in words):
            raise ValueError("vocabulary words must be non-empty strings without white space")
        self.words = words
        self._index = index
        self.unk_id = 0
        self.bos_id = 1
        self.eos_id = 2

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self._index

    def id(self, word: str) -> int:
        """The id of ``word``; an out-of-vocabulary word gets :attr:`unk_id`."""
        return self._index.get(word, 0)

    def encode(self, words: Iterable[str]) -> list[int]:
        """Ids of ``words`` (OOV -> ``<unk>``); adds no ``<s>``/``</s>``."""
        get = self._index.get
        return [get(w, 0) for w in words]

    def is_oov(self, word: str) -> bool:
        """True for a word that is scored as ``<unk>`` (a literal ``<unk>`` is not an OOV)."""
        return word not in self._index

    def __repr__(self) -> str:
        return f"Vocabulary({len(self.words)} words)"


def build_vocabulary(counts: Counter | dict[str, int], vocab_size: int | None = None,
                     min_count: int = 1) -> Vocabulary:
    """The most frequent words of ``counts`` (ties broken alphabetically), specials first.

    Args:
        counts: word -> count in the training text (specials in it are ignored).
        vocab_size: the most words in total, specials included (None or 0 = no limit).
        min_count: words seen fewer times are left out (they become ``<unk>``).
    """
    kept = sorted(((w, c) for w, c in counts.items() if c >= min_count and w not in SPECIALS),
                  key=lambda wc: (-wc[1], wc[0]))
    if vocab_size:
        if vocab_size < len(SPECIALS) + 1:
            raise ValueError(f"vocabulary size must be at least {len(SPECIALS) + 1}")
        kept = kept[:vocab_size - len(SPECIALS)]
    return Vocabulary(list(SPECIALS) + [w for w, _ in kept])


def read_word_list_state(path: str):
    """:func:`read_word_list` and the file's privacy state: ``(Vocabulary, PrivacyState)``.

    Read once, by :func:`asrpriv.provenance.read_vocabulary`: a plain list is asserted public;
    a counts, factors or ARPA file is read by its own reader (keys, or 1-grams) and brings
    its recorded state; a model or report is refused.
    """
    from asrpriv.errors import InputError
    from asrpriv.provenance import read_vocabulary

    def plain(path: str, numbered) -> list[str]:
        return read_word_list(path, numbered).words

    words, state = read_vocabulary(path, plain)
    kept = list(dict.fromkeys(w for w in words if w not in SPECIALS))
    if not kept:
        raise InputError(path, None, "no words: expected one word a line or an ARPA file")
    return Vocabulary(list(SPECIALS) + kept), state


def read_word_list(path: str, numbered_lines=None) -> Vocabulary:
    """A fixed vocabulary from a file: one word a line (its first field), or an ARPA file's
    1-grams; specials first, then the words in file order (duplicates and specials dropped).

    Read by :func:`asrpriv.io.lines.iter_lines` (``.gz``, ``-`` = stdin, bad UTF-8 as FILE:LINE).
    An empty list, an ARPA file without a 1-gram section, or a malformed 1-gram line is an
    InputError.
    """
    from asrpriv.errors import InputError
    from asrpriv.io.lines import iter_lines

    words: dict[str, None] = {}
    arpa: bool | None = None  # known at the first non-blank line that is not a '#' line
    leading: list[str] = []   # '#' lines before it: asrpriv's metadata header of an ARPA file,
    section = False           # or words of a plain list (then kept)
    for lineno, line in (iter_lines(path) if numbered_lines is None else numbered_lines):
        text = line.strip()
        if not text:
            continue
        if arpa is None:
            if text.startswith("#"):
                leading.append(text)
                continue
            arpa = text == "\\data\\"
            if not arpa:
                for held in leading:
                    words[held.split()[0]] = None
            if arpa:
                continue
        if not arpa:
            words[text.split()[0]] = None
        elif text.startswith("\\"):
            if section:
                break
            section = text == "\\1-grams:"
        elif section:
            fields = text.split()
            if len(fields) < 2:
                raise InputError(path, lineno, f"bad 1-gram line {text[:40]!r}")
            words[fields[1]] = None
    if arpa is None:                       # nothing but '#' lines: a plain list of them
        for held in leading:
            words[held.split()[0]] = None
    kept = [w for w in words if w not in SPECIALS]
    if not kept:
        raise InputError(path, None, "no words: expected one word a line or an ARPA file")
    return Vocabulary(list(SPECIALS) + kept)


def unk_penalty(arpa: str, nbest: str) -> float:
    """ln K, K = the word types of the N-best TSV's hypotheses outside the vocabulary of
    ``arpa`` (its 1-grams, as ``finetune-lm --vocab`` reads them), at least 1: the
    ``rescore-nbest --unk-penalty`` that spreads the NNLM's ``<unk>`` mass evenly over them."""
    from asrpriv.io.nbest import NbestReader

    vocab = set(read_word_list(arpa).words)
    unknown = {w for utt in NbestReader(nbest) for h in utt.hyps for w in h.words
               if w not in vocab}
    return math.log(max(1, len(unknown)))
