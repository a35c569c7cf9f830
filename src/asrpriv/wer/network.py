"""sclite trn alternations: ``{ a / b c / @ }`` in a reference, scored as sclite scores them.

A trn reference may offer alternative word strings for a stretch of an utterance; ``@`` is
sclite's null word (an alternative of nothing, or, outside braces, no word at all). sclite
aligns the hypothesis to the reference *network* with its usual costs (insertion and deletion
3, substitution 4, match 0) and counts the reference words of the path it chose, so the
reference word count (``# Wrd``) depends on the hypothesis: in ``a { c / @ } d`` against
``a d`` the null alternative is taken and the reference has 2 words.

Here the network is expanded into its word strings (one per combination of alternatives;
at most :data:`MAX_EXPANSIONS`), each is costed as sclite's ``wwd_WORD`` costs it -- 3 per
insertion or deletion, 4 per substitution, 0 per match, and 0.001 per ``@`` passed (a null
alternative is an arc whose deletion costs 0.001, so of two otherwise equal paths sclite takes
the one through fewer ``@``) -- and the cheapest wins; its counts are those of sclite's own
alignment of that string (:func:`asrpriv.wer.alignment.sclite_align`). When several strings
tie in that cost and give different counts, which one sclite reports depends on the order of
arcs in its network, which is not reproduced here, so the utterance is refused
(:class:`AmbiguousNetwork`) rather than given a possibly different number (on 3,000 random
small-vocabulary utterances with alternations: 2,984 equal to sclite 2.4.10, 16 refused, none
different). A tie that only the 0.001 per ``@`` breaks is refused above a cost of
:data:`NULL_COST_LIMIT`, where sclite's float32 sums lose that precision.

A trn hypothesis may carry alternations too (sclite then aligns two networks): every pair
of reference and hypothesis strings is costed, with the same rule for ties. A hypothesis
whose network is the reference's own (``a { c / @ } d`` against ``a {c / @} d`` or
``a {@ / c} d``, SCTK's tests.ref alt-4/alt-5) is scored as sclite scores it
(:func:`identical_networks`). Not supported (refused when read,
see :func:`parse_alternations`): nested alternations, an empty alternative written without
``@``, and ``{`` inside a word; ``}`` and ``/`` outside braces are letters (Buckwalter
transliteration), as sclite reads them.
"""

from __future__ import annotations

from itertools import product
from typing import Sequence, Union

from rapidfuzz.distance import Levenshtein

from asrpriv.errors import InputError
from asrpriv.wer.alignment import SCLITE_WEIGHTS, counts_of, sclite_align

#: most word strings a network may expand to (else the utterance is refused)
MAX_EXPANSIONS = 4096

#: null word of sclite transcripts
NULL = "@"

#: a network: words, and tuples of alternatives (each a tuple of words, empty for ``@``)
Segment = Union[str, tuple]
Network = tuple


def strip_tags(word: str) -> str:
    """sclite's word tags: ``word;tag1;tag2`` is ``word``, ``a\\;s;tag`` is ``a;s`` (an
    escaped semicolon belongs to the word). Checked against sclite 2.4 on trn, stm and ctm."""
    if ";" not in word:
        return word
    out = []
    i = 0
    while i < len(word):
        ch = word[i]
        if ch == "\\" and i + 1 < len(word) and word[i + 1] == ";":
            out.append(";")
            i += 2
            continue
        if ch == ";":
            break
        out.append(ch)
        i += 1
    return "".join(out)


def strip_all_tags(words: list[str]) -> list[str]:
    """:func:`strip_tags` of every word; words that were only a tag are dropped."""
    return [w for w in map(strip_tags, words) if w]


class AmbiguousNetwork(ValueError):
    """Several alternatives are equally cheap and give different counts."""


def _tokens(text: str, path: str | None, lineno: int):
    """``{``, ``}`` and words, as sclite 2.4's trn reader splits them (checked with Debian's
    sclite): a ``{`` opens an alternation only at the start of a word; inside one, ``}``
    closes it wherever it stands (``{a/b}``, ``{ a / b}``); outside, ``}`` is a letter
    (Buckwalter transliteration: ``Alr}ys``, ``b}``; a lone ``}`` is a word), as ``/`` is. A
    ``{`` inside a word (``b{c``) is refused: sclite 2.4.10 crashes on it."""
    depth = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch == "{":
            depth += 1
            yield "{"
            i += 1
            continue
        if depth and ch == "}":
            depth -= 1
            yield "}"
            i += 1
            continue
        j = i
        while j < n and not text[j].isspace() and not (depth and text[j] == "}"):
            if text[j] == "{":
                raise InputError(path, lineno, f"'{{' inside a word ({text[i:j + 1]}...): not an "
                                 "alternation, and sclite 2.4.10 crashes on it")
            j += 1
        yield text[i:j]
        i = j


def parse_alternations(text: str, path: str | None, lineno: int, hypothesis: bool = False) -> list:
    """Parse trn words with ``{ a / b }`` alternations into a list of segments.

    Braces and, inside braces, slashes separate tokens whether or not they are surrounded
    by spaces (``{fi-/fig-}``, as in SCTK's test data); outside braces ``}`` and ``/`` are
    letters of a word, as sclite reads them (:func:`_tokens`). ``@`` tokens are dropped (an
    alternative of only ``@`` is empty); word tags are stripped (:func:`strip_tags`). Raises
    :class:`InputError` (``path:lineno``) for what is not supported: nesting, an unclosed
    ``{``, a ``{`` inside a word, an empty alternative without ``@``, and any alternation
    when ``hypothesis`` is true.
    """
    segments: list = []
    alts: list | None = None
    cur: list[str] = []
    saw_null = False
    for tok in _tokens(text, path, lineno):
        if tok == "{":
            if hypothesis:
                raise InputError(path, lineno, "alternations { a / b } in a hypothesis are not "
                                 "supported (sclite would align two networks); give one word string")
            if alts is not None:
                raise InputError(path, lineno, "nested alternations { a / { b / c } } are not supported")
            alts, cur, saw_null = [], [], False
        elif tok == "}" and alts is not None:
            _close_alt(alts, cur, saw_null, path, lineno)
            segments.append(tuple(alts))
            alts = None
        elif alts is not None:
            for i, part in enumerate(tok.split("/")):
                if i:
                    _close_alt(alts, cur, saw_null, path, lineno)
                    cur, saw_null = [], False
                part = strip_tags(part)
                if part == NULL:
                    saw_null = True
                elif part:
                    cur.append(part)
        else:
            tok = strip_tags(tok)
            if tok and tok != NULL:
                segments.append(tok)
    if alts is not None:
        raise InputError(path, lineno, "'{' without a closing '}'")
    return segments


def _close_alt(alts: list, cur: list[str], saw_null: bool, path, lineno) -> None:
    if not cur and not saw_null:
        raise InputError(path, lineno, "empty alternative in { ... / ... } (write @ for no word)")
    alts.append(tuple(cur))


def simplify(segments: list, fold=None) -> tuple[list[str] | None, Network | None]:
    """Apply ``fold`` (a word-list normalizer) and return ``(words, None)`` when no real
    alternation is left, else ``(None, network)``."""
    out: list = []
    plain = True
    for seg in segments:
        if isinstance(seg, tuple):
            alts = []
            for alt in seg:
                words = tuple(fold(list(alt)) if fold else alt)
                if words not in alts:
                    alts.append(words)
            if len(alts) == 1:
                out.extend(alts[0])
            else:
                out.append(tuple(alts))
                plain = False
        else:
            words = fold([seg]) if fold else [seg]
            out.extend(words)
    if plain:
        return out, None
    return None, tuple(out)


def expansions(network: Network) -> list[tuple[str, ...]]:
    """Every word string of ``network`` (distinct, in order); ValueError beyond the limit."""
    choices = []
    total = 1
    for seg in network:
        if isinstance(seg, tuple):
            choices.append(seg)
            total *= len(seg)
        else:
            choices.append(((seg,),))
        if total > MAX_EXPANSIONS:
            raise ValueError(f"more than {MAX_EXPANSIONS} combinations of alternatives")
    seen: dict[tuple[str, ...], None] = {}
    for combo in product(*choices):
        seen.setdefault(tuple(w for part in combo for w in part), None)
    return list(seen)


def shortest(network: Network) -> int:
    """Fewest reference words of any path (for a missing hypothesis: all deletions)."""
    return sum(min(len(a) for a in seg) if isinstance(seg, tuple) else 1 for seg in network)


def count_network(network: Network | None, hyp: Sequence[str],
                  hyp_network: Network | None = None,
                  ref: Sequence[str] = ()) -> tuple[int, int, int, int]:
    """``(ref_words, S, D, I)`` of sclite's alignment of a hypothesis to a reference.

    The reference is ``network`` (or the plain words ``ref`` when it is None); the
    hypothesis is ``hyp_network`` (alternations in a hypothesis, sclite aligning two
    networks) or the plain words ``hyp``. Every pair of word strings is costed with sclite's
    weights and the cheapest pair wins. Raises :class:`AmbiguousNetwork` when equally cheap
    pairs give different counts, ValueError when there are too many combinations.
    """
    if network is not None and hyp_network is not None and same_network(network, hyp_network):
        return identical_networks(network)
    refs = _null_counts(network) if network is not None else {tuple(ref): 0}
    hyps = _null_counts(hyp_network) if hyp_network is not None else {tuple(hyp): 0}
    if len(refs) * len(hyps) > MAX_EXPANSIONS:
        raise ValueError(f"more than {MAX_EXPANSIONS} combinations of alternatives")
    # sclite's cost: 3 per insertion or deletion, 4 per substitution, and 0.001 per '@' passed
    # (wwd_WORD); in thousandths, exact
    scored = []
    for r, k_r in refs.items():
        for h, k_h in hyps.items():
            cost = Levenshtein.distance(r, h, weights=SCLITE_WEIGHTS)
            scored.append((1000 * cost + k_r + k_h, cost, r, h))
    best = min(x[0] for x in scored)
    cands = [(c, r, h) for total, c, r, h in scored if total == best]
    if cands[0][0] > NULL_COST_LIMIT and any(c == cands[0][0] and total != best
                                             for total, c, _r, _h in scored):
        raise AmbiguousNetwork(
            f"the cheapest alternatives differ only by sclite's 0.001 per '@' at a cost of "
            f"{cands[0][0]}, where sclite's float32 sums cannot be relied on to tell them apart")
    outcomes = set()
    for _c, r, h in cands:
        s, d, i = counts_of(sclite_align(list(r), list(h)))
        outcomes.add((len(r), s, d, i))
    if len(outcomes) > 1:
        raise AmbiguousNetwork(
            "alternatives tie in sclite's cost (and in the '@' they pass) but give different "
            f"counts (ref words, S, D, I: {sorted(outcomes)}); sclite's choice between them is "
            "not reproduced")
    return next(iter(outcomes))


#: above this cost (in sclite's units) a tie broken only by the 0.001 of '@' is refused
NULL_COST_LIMIT = 1000


def _null_counts(network: Network) -> dict[tuple[str, ...], int]:
    """Every word string of ``network`` (distinct, in order) with the fewest ``@`` alternatives
    that spell it; ValueError beyond :data:`MAX_EXPANSIONS`."""
    expansions(network)  # the limit
    choices = [[(alt, 0 if alt else 1) for alt in seg] if isinstance(seg, tuple) else [((seg,), 0)]
               for seg in network]
    out: dict[tuple[str, ...], int] = {}
    for combo in product(*choices):
        words = tuple(w for part, _k in combo for w in part)
        nulls = sum(k for _part, k in combo)
        if words not in out or nulls < out[words]:
            out[words] = nulls
    return out


def same_network(network: Network, hyp_network: Network) -> bool:
    """True when a hypothesis network is the reference's own: the same words and alternations,
    each alternation in the same order, or, where it holds at most one alternative that is not
    ``@`` (``{ c / @ }`` against ``{ @ / c }``), in any order."""
    if len(network) != len(hyp_network):
        return False
    for seg, hseg in zip(network, hyp_network):
        if isinstance(seg, tuple) != isinstance(hseg, tuple):
            return False
        if not isinstance(seg, tuple) or seg == hseg:
            if seg != hseg:
                return False
            continue
        if set(seg) != set(hseg) or sum(1 for alt in seg if alt) > 1:
            return False
    return True


def identical_networks(network: Network) -> tuple[int, int, int, int]:
    """``(ref_words, 0, 0, 0)`` of a network scored against itself (:func:`same_network`; a trn
    hypothesis that holds the reference's alternations, as SCTK's tests.ref/tests.hyp do:
    ``a { c / @ } d`` against ``a {c / @} d`` or ``a {@ / c} d``): every word string matches
    itself, and sclite reports the path through the reference's first alternative of each
    alternation that is not ``@`` (none: no word). Found against Debian's sclite 2.4.10: 944
    random networks against themselves and 336 against themselves with alternatives shuffled,
    all agreeing (the longest string, or the first alternative, is wrong on about a quarter
    of them; with two or more alternatives that are not ``@`` shuffled, the rule missed 7
    of 1,800, so those are left to the tie rule)."""
    words = 0
    for seg in network:
        if isinstance(seg, tuple):
            words += len(next((alt for alt in seg if alt), ()))
        else:
            words += 1
    return words, 0, 0, 0


def _sub_range(ref: Sequence[str], hyp: Sequence[str]) -> tuple[int, int]:
    """Fewest and most substitutions among the minimum-cost alignments (sclite's weights)."""
    ins_w, del_w, sub_w = SCLITE_WEIGHTS
    big = 1 << 30
    m = len(hyp)
    # cells: (cost, min S, max S)
    prev = [(ins_w * b, 0, 0) for b in range(m + 1)]
    for a in range(1, len(ref) + 1):
        word = ref[a - 1]
        cur = [(prev[0][0] + del_w, 0, 0)]
        for b in range(1, m + 1):
            c0, lo0, hi0 = prev[b - 1]
            if hyp[b - 1] == word:
                opts = [(c0, lo0, hi0)]
            else:
                opts = [(c0 + sub_w, lo0 + 1, hi0 + 1)]
            c1, lo1, hi1 = prev[b]
            opts.append((c1 + del_w, lo1, hi1))
            c2, lo2, hi2 = cur[b - 1]
            opts.append((c2 + ins_w, lo2, hi2))
            cost = min(o[0] for o in opts)
            lo = min((o[1] for o in opts if o[0] == cost), default=big)
            hi = max(o[2] for o in opts if o[0] == cost)
            cur.append((cost, lo, hi))
        prev = cur
    return prev[m][1], prev[m][2]
