"""Class-based n-gram LMs with deterministic word classes (Brown et al. 1992; paper 003 §2.2).

Every *member* word belongs to exactly one class; all other words are their own class. A
class LM is an ordinary back-off n-gram over class tokens (``<PER>``, ...) and plain words,
plus a membership ``P(w | c)``:

    P(w | h) = P(c(w) | c(h)) * P(w | c(w))   for a member w (h mapped to classes too),
    P(w | h) = P(w | c(h))                    for any other word,

so the probabilities over the whole vocabulary (plain words, members, ``</s>``, ``<unk>``)
sum to 1 whenever the n-gram over classes does. With one member per class, ``P(w|c) = 1``
and the class LM is the word LM with that word renamed.

Membership comes from entity spans (``examples/data/ami/ne/``): a word w joins class c when
at least ``min_share`` of all its occurrences in the training text lie inside spans of class
c (so "a" or "the" inside "a hundred" stays a word). Then *every* occurrence of a member in
the training text is replaced by its class token (the mapping must be the same at training
and at scoring time for the sums above to hold), and ``P(w | c) = count(w) / count(c)``
counts all occurrences (maximum likelihood).

Membership file: SRILM's ``-classes`` format (classes-format(5)), one line per member,
``CLASS p word`` (p = P(word | CLASS), a probability, not a log); single-word expansions only.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Iterable, Iterator

from asrpriv.errors import InputError
from asrpriv.io.classes import ClassMap, class_token, read_class_map  # noqa: F401  (the membership file)

LN10 = math.log(10.0)


def membership_from_spans(utts: Iterable[tuple[str, list[str]]], spans_by_utt: dict,
                          classes: Iterable[str], min_share: float = 0.5) -> tuple[ClassMap, Counter]:
    """Members and ``P(w | c)`` from a text and its entity spans (see the module docstring).

    Args:
        utts: ``(utt_id, words)`` of the training text (all of it: counts are over all of it).
        spans_by_utt: :func:`asrpriv.sanitize.spans.read_spans` of that text.
        classes: the classes to model.
        min_share: a word joins class c when >= this share of its occurrences are in c's spans.

    Returns:
        the map and the count of every word in the text.
    """
    wanted = set(classes)
    total: Counter = Counter()
    inside: dict[str, Counter] = defaultdict(Counter)
    for utt, words in utts:
        total.update(words)
        for s in spans_by_utt.get(utt, ()):
            if s.cls in wanted:
                for w in words[s.start:s.end]:
                    inside[w][s.cls] += 1
    chosen: dict[str, str] = {}
    for w, by_class in inside.items():
        cls, n = min(by_class.items(), key=lambda kv: (-kv[1], kv[0]))
        if n >= min_share * total[w] and w not in ("<unk>", "<s>", "</s>"):
            chosen[w] = class_token(cls)
    class_total: Counter = Counter()
    for w, c in chosen.items():
        class_total[c] += total[w]
    return ClassMap({w: (c, total[w] / class_total[c]) for w, c in chosen.items()}), total


class ClassKenlmModel:
    """A kenlm model over class tokens plus a :class:`ClassMap`, with kenlm's scoring API.

    ``full_scores``/``score`` take a sentence of *words* and return log10 scores of
    ``P(c(w)|c(h)) P(w|c(w))``, so code written for ``kenlm.Model`` scores a class LM too.
    ``oov`` is kenlm's flag on the mapped token (a member is never OOV).
    """

    def __init__(self, model, class_map: ClassMap) -> None:
        self.model = model
        self.class_map = class_map
        self.order = model.order

    def __contains__(self, word: str) -> bool:
        return word in self.class_map.member or word in self.model

    def full_scores(self, sentence: str, bos: bool = True, eos: bool = True) -> Iterator[tuple[float, int, bool]]:
        words = sentence.split()
        mapped = " ".join(self.class_map.map_words(words))
        extra = self.class_map.log10_membership(words) + ([0.0] if eos else [])
        for (lp, n, oov), add in zip(self.model.full_scores(mapped, bos=bos, eos=eos), extra):
            yield lp + add, n, oov

    def score(self, sentence: str, bos: bool = True, eos: bool = True) -> float:
        return sum(lp for lp, _n, _o in self.full_scores(sentence, bos=bos, eos=eos))


def load_class_model(arpa: str, classes: str) -> ClassKenlmModel:
    """kenlm-load the class ARPA and read its membership file."""
    from asrpriv.nnlm.perplexity import load_kenlm

    class_map = read_class_map(classes)  # first: a bad small file fails before a big load
    return ClassKenlmModel(load_kenlm(arpa), class_map)
