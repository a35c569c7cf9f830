"""The privacy transformation itself (paper 003 §2.1, Adelani et al. 2020's same-class strategy).

For every selected entity occurrence (a span whose class is selected), independently: with
probability ``keep`` the words stay; otherwise the whole span is replaced by one string of the
same class drawn uniformly from the class's pool (which may contain the original string).
With ``tag`` every selected span becomes the single token ``<CLASS>`` instead (class-tagged
text, for class LMs). Words outside selected spans never change. The spans of the output
(``spans_out``) are the input spans moved to their output positions, with the output words
as their text (a replaced span keeps its class and gets type ``SANITIZED``).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import IO, Iterable, Sequence

from asrpriv.errors import InputError, arg, display_name
from asrpriv.io.lines import iter_blocks
from asrpriv.sanitize.lexicon import LongestMatchTagger
from asrpriv.sanitize.spans import Span, write_spans

#: ``type`` written in the output spans for a replaced entity
REPLACED_TYPE = "SANITIZED"


def tag_token(cls: str) -> str:
    """The token that stands for a whole entity of class ``cls`` in tagged text: ``<PER>``."""
    return f"<{cls}>"


def pool_from_spans(spans_by_utt: dict[str, list[Span]], classes: Iterable[str]) -> dict[str, list[str]]:
    """Per selected class, its distinct entity strings (sorted, so seeded runs repeat)."""
    wanted = set(classes)
    pool: dict[str, set[str]] = {c: set() for c in wanted}
    for spans in spans_by_utt.values():
        for s in spans:
            if s.cls in wanted:
                pool[s.cls].add(s.text)
    return {c: sorted(strings) for c, strings in pool.items()}


def pool_from_pairs(pairs: Sequence[tuple[str, str]], classes: Iterable[str]) -> dict[str, list[str]]:
    """Per selected class, its distinct strings from ``(class, string)`` pairs (sorted)."""
    wanted = set(classes)
    pool: dict[str, set[str]] = {c: set() for c in wanted}
    for cls, text in pairs:
        if cls in wanted:
            pool[cls].add(text)
    return {c: sorted(strings) for c, strings in pool.items()}


@dataclass
class Report:
    """What the transformation did, per class (selected classes and untouched ones)."""

    selected: Counter = field(default_factory=Counter)   # selected entity occurrences
    replaced: Counter = field(default_factory=Counter)   # of which replaced (or tagged)
    untouched: Counter = field(default_factory=Counter)  # occurrences of unselected classes
    lines: int = 0
    changed_lines: int = 0

    def summary(self, tag: bool) -> str:
        verb = "tagged" if tag else "replaced"
        parts = [f"{c} {self.replaced[c]}/{self.selected[c]}" for c in sorted(self.selected)]
        text = (f"{self.lines} lines, {self.changed_lines} changed; entities {verb}/selected: "
                + (", ".join(parts) if parts else "none"))
        if self.untouched:
            text += "; left untouched (class not selected): " + ", ".join(
                f"{c} {n}" for c, n in sorted(self.untouched.items()))
        return text


class Sanitizer:
    """Transforms the words of one utterance given its entity spans.

    Args:
        classes: the classes to transform; spans of other classes pass through.
        keep: probability of keeping a selected entity unchanged (0..1).
        pool: per selected class, the strings a replacement is drawn from (uniformly).
        rng: the random source (:func:`asrpriv.privacy.randomness.noise_rng`).
        tag: write ``<CLASS>`` for every selected span instead of sanitizing.
    """

    def __init__(self, classes: Iterable[str], keep: float, pool: dict[str, list[str]],
                 rng: random.Random, tag: bool = False) -> None:
        if not 0.0 <= keep <= 1.0:  # NaN too: rand() < nan would silently replace everything
            raise ValueError(f"keep must be a probability in [0, 1], got {keep}")
        self.classes = frozenset(classes)
        self.keep = keep
        self.pool = pool
        self.rng = rng
        self.tag = tag
        self.report = Report()

    def apply(self, utt: str, words: list[str], spans: Sequence[Span]) -> tuple[list[str], list[Span], bool]:
        """``(output words, output spans, changed)``; ``spans`` sorted, checked, not overlapping."""
        out: list[str] = []
        out_spans: list[Span] = []
        pos = 0
        changed = False
        rand, choice, keep = self.rng.random, self.rng.choice, self.keep
        for s in spans:
            out.extend(words[pos:s.start])
            start = len(out)
            if s.cls not in self.classes:
                self.report.untouched[s.cls] += 1
                out.extend(words[s.start:s.end])
                out_spans.append(Span(utt, start, len(out), s.cls, s.type, s.text))
            else:
                self.report.selected[s.cls] += 1
                if self.tag:
                    new, typ = [tag_token(s.cls)], s.type
                elif rand() < keep:
                    new, typ = words[s.start:s.end], s.type
                else:
                    text = choice(self.pool[s.cls])
                    new, typ = text.split(" "), REPLACED_TYPE
                if typ == REPLACED_TYPE or self.tag:
                    self.report.replaced[s.cls] += 1
                    changed = changed or new != words[s.start:s.end]
                out.extend(new)
                out_spans.append(Span(utt, start, len(out), s.cls, typ, " ".join(new)))
            pos = s.end
        out.extend(words[pos:])
        return out, out_spans, changed


def check_span(span: Span, words: list[str], spans_path: str, text_path: str, lineno: int) -> None:
    """The span's text column must equal the line's words at its positions."""
    if span.end > len(words):
        raise InputError(spans_path, span.lineno, f"span {span.start}..{span.end} of {span.utt} is past "
                                                  f"the end of its line ({len(words)} words, "
                                                  f"{display_name(text_path)}:{lineno})")
    actual = words[span.start:span.end]
    if actual != span.words():
        raise InputError(spans_path, span.lineno,
                         f"text {span.text!r} differs from words {span.start}..{span.end} of "
                         f"{span.utt} ({display_name(text_path)}:{lineno}): {' '.join(actual)!r}")


def sanitize_stream(text_path: str, out: IO[str], sanitizer: Sanitizer,
                    spans_by_utt: dict[str, list[Span]] | None = None,
                    tagger: LongestMatchTagger | None = None,
                    spans_out: IO[str] | None = None, spans_path: str = "spans") -> Report:
    """Transform a Kaldi text (``utt_id word ...`` per line) into ``out``.

    Entities come from ``spans_by_utt`` (checked against the text: a span whose text column
    differs from the line, a span utterance missing from the text or appearing twice are
    InputErrors) or, without spans, from ``tagger``. Lines without entities are copied as
    they are (their whitespace too). Reads in blocks: the speed of a word count.
    """
    report = sanitizer.report
    if spans_out is not None:
        write_spans(spans_out, [], header=True)
    pending = set(spans_by_utt) if spans_by_utt is not None else set()
    for first, block in iter_blocks(text_path):
        lines = block.split("\n")
        last = len(lines) - 1 if block.endswith("\n") else len(lines)
        report.lines += last
        block_changed = False
        for i in range(last):
            line = lines[i]
            if spans_by_utt is not None:
                cut = line.find(" ")
                utt = line if cut < 0 else line[:cut]
                if utt not in spans_by_utt:
                    if utt and "\t" not in utt:
                        continue
                    fields = line.split()  # tabs or leading blanks: the slow path
                    if not fields or fields[0] not in spans_by_utt:
                        continue
                    utt = fields[0]
                if utt not in pending:
                    raise InputError(text_path, first + i, f"utterance {utt} appears twice "
                                                           "(its spans apply to one line)")
                pending.discard(utt)
                fields = line.split()
                words = fields[1:]
                spans = spans_by_utt[utt]
                for s in spans:
                    check_span(s, words, spans_path, text_path, first + i)
            else:
                fields = line.split()
                if len(fields) < 2:
                    continue
                utt, words = fields[0], fields[1:]
                found = tagger.tag(words)
                if not found:
                    continue
                spans = [Span(utt, a, b, c, "LEXICON", " ".join(words[a:b])) for a, b, c in found]
            new_words, new_spans, changed = sanitizer.apply(utt, words, spans)
            if changed:
                report.changed_lines += 1
                block_changed = True
                lines[i] = " ".join([utt, *new_words])
            if spans_out is not None:
                write_spans(spans_out, new_spans, header=False)
        out.write(block if not block_changed else "\n".join(lines))
    if pending:
        lineno, utt = min((spans_by_utt[u][0].lineno, u) for u in pending)
        raise InputError(spans_path, lineno, f"utterance {utt} is not in {display_name(text_path)}")
    return report


@dataclass
class SanitizeSettings:
    """The settings of ``sanitize``: entities from ``spans`` (TSV) or ``lexicon`` (exactly
    one), each kept with probability ``keep`` (0-1), else replaced by a string of its class
    from the pool (``pool`` file, else the spans'/lexicon's own strings); ``classes`` the
    classes transformed; ``tag`` writes class tokens instead; ``seed`` None = the OS's
    secure source. ``output``: the transformed Kaldi text; ``spans_out``: the output's spans."""

    text: str = "-"
    spans: str | None = None
    lexicon: str | None = None
    keep: float = 0.0
    classes: Sequence[str] = ("PER", "LOC", "ORG", "TIME", "NUM")
    pool: str | None = None
    spans_out: str | None = None
    tag: bool = False
    seed: int | None = None
    output: str = "-"


def sanitize(s: SanitizeSettings) -> Report:
    """The step ``sanitize`` (paper 003 §2.1): same-class random replacement of named
    entities in Kaldi text; returns the report (entities replaced per class)."""
    import math

    from asrpriv.errors import AsrprivError
    from asrpriv.io.output import open_output
    from asrpriv.privacy.randomness import noise_rng
    from asrpriv.sanitize.lexicon import read_class_strings
    from asrpriv.sanitize.spans import read_spans

    classes = tuple(s.classes)
    if not classes:
        raise AsrprivError(f"{arg('classes')}: give at least one class")
    if not (math.isfinite(s.keep) and 0.0 <= s.keep <= 1.0):
        raise AsrprivError(f"{arg('keep')} must be in [0, 1], got {s.keep}")
    if (s.spans is None) == (s.lexicon is None):
        raise AsrprivError(f"give exactly one of {arg('spans')} FILE or {arg('lexicon')} FILE")
    spans_by_utt = tagger = None
    if s.spans is not None:
        spans_by_utt = read_spans(s.spans)
        pool = pool_from_spans(spans_by_utt, classes)
    else:
        entries = read_class_strings(s.lexicon)
        tagger = LongestMatchTagger(entries)
        pool = pool_from_pairs(entries, classes)
    if s.pool is not None:
        pool = pool_from_pairs(read_class_strings(s.pool), classes)
    if not s.tag and s.keep < 1.0:
        empty = sorted(c for c, strings in pool.items() if not strings)
        used = {sp.cls for spans in spans_by_utt.values() for sp in spans} \
            if spans_by_utt is not None else {c for c, _ in entries}
        missing = [c for c in empty if c in used]
        if missing:
            raise AsrprivError(f"no replacement strings for class(es) {', '.join(missing)} in the pool")
    sanitizer = Sanitizer(classes, s.keep, pool, noise_rng(s.seed), tag=s.tag)
    with open_output(s.output) as out:
        if s.spans_out is not None:
            with open_output(s.spans_out) as sout:
                return sanitize_stream(s.text, out, sanitizer, spans_by_utt, tagger, sout,
                                       s.spans or "spans")
        return sanitize_stream(s.text, out, sanitizer, spans_by_utt, tagger, None,
                               s.spans or "spans")
