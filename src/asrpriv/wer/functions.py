"""WER for Python callers, in jiwer's manners: :func:`wer` (a fraction, equal to ``jiwer.wer``)
and :func:`score_wer` (sclite's counts and alignments, WER in percent), re-exported by
:mod:`asrpriv.api`.

Both take what ``jiwer.wer`` takes -- ``reference``/``hypothesis`` as one string or a list of
strings -- and also lists of word lists, any iterable (generators), or two dicts
``utt_id -> text`` matched by id (``score_wer``). Errors are :class:`AsrprivError` naming
the argument. Importing this module imports nothing heavy (RapidFuzz when called).

The empty reference, decided: :func:`wer` does what jiwer does -- when the whole reference
has no words, the result is the number of inserted words (0 when the hypothesis is empty
too), not a fraction; :func:`score_wer`'s ``wer`` is then ``None`` (undefined, sclite prints
``n/a``) unless there is no error either (0.0), and its counts say what happened.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from asrpriv.errors import AsrprivError

_MULTI_SPACE = re.compile(r"\s\s+")


@dataclass
class UtteranceAlignment:
    """One utterance's word alignment, as sclite makes it (``score-wer --details``).

    ``ops``: ``(op, ref_index, hyp_index)`` in order; ``op`` is ``C`` (hit), ``S``, ``D`` or
    ``I``; an index is -1 on the side that has no word (``D``: hypothesis, ``I``: reference).
    ``ref``/``hyp`` are the words as compared (after case folding).
    """

    id: str
    ref: list[str]
    hyp: list[str]
    ops: list[tuple[str, int, int]]

    def count(self, op: str) -> int:
        """Number of ``op`` (``C``, ``S``, ``D`` or ``I``) steps."""
        return sum(1 for o, _r, _h in self.ops if o == op)

    def pairs(self) -> list[tuple[str, str | None, str | None]]:
        """``(op, ref_word or None, hyp_word or None)`` per step."""
        return [(o, self.ref[r] if r >= 0 else None, self.hyp[h] if h >= 0 else None)
                for o, r, h in self.ops]


@dataclass
class WerResult:
    """Word error counts (sclite's alignment: insertion/deletion cost 3, substitution 4).

    ``wer`` is in percent: 100 (S + D + I) / N, N = ``ref_words`` = hits + S + D; None when
    N = 0 and there are errors (see the module's note on empty references; :func:`wer` is the
    fraction). ``signature`` says how it was computed (sacrebleu-style ``key:value|...``: case
    folding, punctuation, alignment, version), as ``score-wer`` prints it. ``alignments``
    (computed on first use) holds every reference utterance's :class:`UtteranceAlignment`, in
    reference order.
    """

    wer: float | None
    substitutions: int
    deletions: int
    insertions: int
    ref_words: int
    sentences: int
    sentence_errors: int
    missing_hypotheses: list[str] = field(default_factory=list)
    signature: str = ""
    _words: tuple = field(default=((), {}, {}), repr=False, compare=False)

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions

    @property
    def hits(self) -> int:
        """Reference words matched exactly: N - S - D."""
        return self.ref_words - self.substitutions - self.deletions

    @property
    def alignments(self) -> list[UtteranceAlignment]:
        """Per-utterance sclite alignments (computed once, on first use)."""
        cached = self.__dict__.get("_alignments")
        if cached is None:
            from asrpriv.wer.alignment import sclite_align

            ids, refs, hyps = self._words
            cached = [UtteranceAlignment(u, refs[u], hyps.get(u, []),
                                         sclite_align(refs[u], hyps.get(u, [])))
                      for u in ids]
            self.__dict__["_alignments"] = cached
        return cached


def wer(reference=None, hypothesis=None) -> float:
    """Word error rate as a fraction, as ``jiwer.wer(reference, hypothesis)`` computes it.

    Args:
        reference, hypothesis: one string, or a list (any iterable: a generator too) of
            strings or of word lists, utterance ``i`` of one against utterance ``i`` of the
            other. Strings are split into words as jiwer splits them: runs of two or more
            white-space characters become one space, the ends are stripped, words are
            separated by spaces. Case and punctuation are compared as given.

    Returns ``(S + D + I) / N`` summed over the utterances, with the minimum number of edits
    (unit costs, as jiwer; ``score_wer`` counts sclite's alignment, which can differ by an
    error in rare ties). When the reference has no words at all the result is, as jiwer's,
    the number of inserted words (0 for an empty hypothesis).

    >>> from asrpriv import api
    >>> api.wer("the cat sat", "the hat sat down")
    0.6666666666666666
    >>> api.wer(["a b", "c"], [["a"], ["c", "d"]])
    0.6666666666666666
    >>> api.wer([""], ["a b"])
    2
    """
    from rapidfuzz.distance import Levenshtein

    refs = _jiwer_utterances(reference, "reference")
    hyps = _jiwer_utterances(hypothesis, "hypothesis")
    if len(refs) != len(hyps):
        raise AsrprivError(f"reference and hypothesis differ in length ({len(refs)} and "
                           f"{len(hyps)} utterances)")
    ids: dict[str, int] = {}
    errors = words = inserted = 0
    for r, h in zip(refs, hyps):
        ri = [ids.setdefault(w, len(ids)) for w in r]
        hi = [ids.setdefault(w, len(ids)) for w in h]
        errors += Levenshtein.distance(ri, hi)
        words += len(r)
        inserted += len(h)
    if words == 0:
        return inserted  # jiwer: every hypothesis word is an insertion, "WER" = their number
    return errors / words


def _jiwer_utterances(value, name: str) -> list[list[str]]:
    """Utterances as word lists, split as jiwer's default transform does."""
    if value is None:
        raise AsrprivError(f"{name}: missing (give a string or a list of strings)")
    if isinstance(value, str):
        return [_jiwer_words(value)]
    if isinstance(value, (bytes, Mapping)) or not isinstance(value, Iterable):
        raise AsrprivError(f"{name}: expected a string or a list of strings (or of word lists), "
                           f"got {type(value).__name__}")
    out = []
    for k, item in enumerate(value):
        if isinstance(item, str):
            out.append(_jiwer_words(item))
        elif isinstance(item, (list, tuple)) and all(isinstance(w, str) for w in item):
            out.append([w for w in item if w])
        else:
            raise AsrprivError(f"{name}[{k}]: expected a string or a list of words, got "
                               f"{type(item).__name__}")
    return out or [[]]


def _jiwer_words(text: str) -> list[str]:
    return [w for w in _MULTI_SPACE.sub(" ", text).strip().split(" ") if w]


def score_wer(refs=None, hyps=None, lowercase: bool = True, strip_punct: bool = False,
              allow_extra: bool = False, *, reference=None, hypothesis=None,
              case_folding: str = "sclite") -> WerResult:
    """WER of ``hyps`` against ``refs`` (``score-wer``), from parallel lists or from dicts.

    Args:
        refs, hyps (or jiwer's names ``reference``, ``hypothesis``): one string, two lists
            (any iterables, generators too) of the same length -- utterance ``i`` of one
            against utterance ``i`` of the other; ids are ``"0"``, ``"1"``, ... -- of strings
            (words split at white space) or of word lists, or two dicts ``utt_id -> text``
            matched by id.
        lowercase: fold case (as ``score-wer`` and sclite do by default); ``case_folding``
            says which letters: ``"sclite"`` A-Z only, as sclite; ``"unicode"`` every letter.
        strip_punct: remove punctuation at both edges of every word.
        allow_extra: with dicts, ignore ``hyps`` ids that are not in ``refs``.

    A reference without hypothesis (dicts) counts as all deletions and is listed in
    ``missing_hypotheses``. Counts equal sclite's and the CLI's; ``wer`` is a percent (the
    fraction is :func:`wer`). Errors are :class:`AsrprivError` naming the argument.

    Examples:

    >>> from asrpriv import api
    >>> r = api.score_wer(["the cat sat", "a b"], ["the hat sat down", "a b"])
    >>> round(r.wer, 2), r.hits, r.substitutions, r.deletions, r.insertions
    (40.0, 4, 1, 0, 1)
    >>> r.alignments[0].pairs()
    [('C', 'the', 'the'), ('S', 'cat', 'hat'), ('C', 'sat', 'sat'), ('I', None, 'down')]
    >>> r.signature.split("|")[:3]
    ['case:sclite', 'strip:none', 'align:sclite']
    >>> api.score_wer({"u1": "a b c"}, {"u1": "a x c"}).substitutions
    1
    >>> api.score_wer(reference="a b c", hypothesis="a x c").wer
    33.333333333333336
    >>> api.score_wer(["a"], ["a", "b"])
    Traceback (most recent call last):
    ...
    asrpriv.errors.AsrprivError: refs and hyps differ in length (1 and 2); pass two lists of the same length, or two dicts
    """
    from asrpriv.wer.report import score
    from asrpriv.wer.transcripts import Normalizer, Transcript

    if reference is not None or hypothesis is not None:
        if refs is not None or hyps is not None:
            raise AsrprivError("give refs/hyps or reference/hypothesis (jiwer's names), not both")
        refs, hyps = reference, hypothesis
        names = ("reference", "hypothesis")
    else:
        names = ("refs", "hyps")
    try:
        normalizer = Normalizer(lowercase=lowercase, strip_punct=strip_punct, case=case_folding)
    except ValueError as err:
        raise AsrprivError(f"case_folding: {err}") from None
    ref_texts, hyp_texts = _wer_inputs(refs, hyps, names)

    def transcript(texts: dict, name: str) -> Transcript:
        words = {}
        for u, t in texts.items():
            if isinstance(t, str):
                toks = normalizer.line(t).split()
            elif isinstance(t, (list, tuple)) and all(isinstance(w, str) for w in t):
                toks = [normalizer.line(w) for w in t if w]
            else:
                raise AsrprivError(f"{name}[{u!r}]: expected a string or a list of words, "
                                   f"got {type(t).__name__}")
            words[u] = normalizer.words(toks)
        return Transcript(name, "api", words, {u: i + 1 for i, u in enumerate(words)})

    ref = transcript(ref_texts, names[0])
    hyp = transcript(hyp_texts, names[1])
    if not ref.words:
        raise AsrprivError(f"{names[0]}: empty (expected at least one utterance)")
    extra = [u for u in hyp.words if u not in ref.words]
    if extra and not allow_extra:
        raise AsrprivError(f"{names[1]}: id {extra[0]!r} is not in {names[0]} ({len(extra)} such ids; "
                           "allow_extra=True ignores them)")
    report = score(ref, hyp, normalizer, allow_extra=allow_extra)
    t = report.totals
    return WerResult(t.wer, t.substitutions, t.deletions, t.insertions, t.ref_words,
                     t.sentences, t.sentence_errors, list(report.missing_hyp),
                     report.signature, (list(ref.words), ref.words, hyp.words))


def _wer_inputs(refs, hyps, names=("refs", "hyps")) -> tuple[dict, dict]:
    """Both inputs as ``id -> text (or words)`` dicts; AsrprivError naming the argument otherwise."""
    values = []
    for name, value in zip(names, (refs, hyps)):
        if value is None:
            raise AsrprivError(f"{name}: missing (give a string, a list of strings or a dict id -> text)")
        if isinstance(value, str):
            value = [value]
        elif isinstance(value, bytes) or not isinstance(value, Iterable):
            raise AsrprivError(f"{name}: expected a string, a list of strings or a dict id -> text, "
                               f"got {type(value).__name__}")
        elif not isinstance(value, Mapping):
            value = list(value)  # generators: read once
        values.append(value)
    refs, hyps = values
    if isinstance(refs, Mapping) != isinstance(hyps, Mapping):
        raise AsrprivError(f"{names[0]} and {names[1]}: pass two lists or two dicts, not one of each")
    if isinstance(refs, Mapping):
        return {str(u): t for u, t in refs.items()}, {str(u): t for u, t in hyps.items()}
    if len(refs) != len(hyps):
        raise AsrprivError(f"{names[0]} and {names[1]} differ in length ({len(refs)} and {len(hyps)}); "
                           "pass two lists of the same length, or two dicts")
    return {str(i): t for i, t in enumerate(refs)}, {str(i): t for i, t in enumerate(hyps)}
