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
from dataclasses import dataclass
from typing import IO, Iterable, Iterator, Sequence

from asrpriv.errors import InputError

LN10 = math.log(10.0)


def class_token(cls: str) -> str:
    """The token of class ``cls`` in the class n-gram: ``<PER>`` (as ``sanitize --tag`` writes)."""
    return cls if cls.startswith("<") and cls.endswith(">") else f"<{cls}>"


@dataclass
class ClassMap:
    """Word -> (class token, P(word | class)); other words map to themselves."""

    member: dict[str, tuple[str, float]]

    def classes(self) -> dict[str, list[tuple[str, float]]]:
        out: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for w, (c, p) in self.member.items():
            out[c].append((w, p))
        return dict(out)

    def map_words(self, words: Sequence[str]) -> list[str]:
        member = self.member
        return [member[w][0] if w in member else w for w in words]

    def log10_membership(self, words: Sequence[str]) -> list[float]:
        """log10 P(w | c(w)) per word (0 for non-members)."""
        member = self.member
        return [math.log10(member[w][1]) if w in member else 0.0 for w in words]

    def write(self, out: IO[str]) -> None:
        """SRILM classes format: ``CLASS p word`` lines, classes and words sorted."""
        for c, rows in sorted(self.classes().items()):
            for w, p in sorted(rows):
                out.write(f"{c} {p:.10g} {w}\n")


def read_class_map(path: str) -> ClassMap:
    """Read a membership file (``CLASS [p] word``; no p = uniform over the class's words)."""
    from asrpriv.io.lines import iter_lines

    rows: list[tuple[int, str, float | None, str]] = []
    for lineno, line in iter_lines(path):
        fields = line.split()
        if not fields:
            continue
        p: float | None = None
        if len(fields) == 3:
            try:
                p = float(fields[1])
            except ValueError:
                raise InputError(path, lineno, f"expected CLASS p word; {fields[1]!r} is not a "
                                               "probability (multi-word expansions are not supported)") from None
            if not 0.0 < p <= 1.0:
                raise InputError(path, lineno, f"P(word | class) = {p} is not in (0, 1]")
            word = fields[2]
        elif len(fields) == 2:
            word = fields[1]
        else:
            raise InputError(path, lineno, "expected CLASS p word (single-word expansions only)")
        rows.append((lineno, fields[0], p, word))
    if not rows:
        raise InputError(path, None, "empty: expected CLASS p word lines")
    member: dict[str, tuple[str, float]] = {}
    sizes = Counter(c for _l, c, _p, _w in rows)
    totals: Counter = Counter()
    for lineno, c, p, w in rows:
        if w in member:
            raise InputError(path, lineno, f"word {w!r} is in two classes ({member[w][0]}, {c}); "
                                           "classes here are deterministic")
        member[w] = (c, p if p is not None else 1.0 / sizes[c])
        totals[c] += member[w][1]
    for c, total in totals.items():
        if abs(total - 1.0) > 1e-6:
            raise InputError(path, None, f"class {c}: P(word | class) sums to {total:.8f}, not 1")
    return ClassMap(member)


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
