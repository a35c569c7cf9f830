"""Non-event and noise tokens: words that are not words, dropped the same way by every step.

One list, one parser, used by ``import-nbest``, ``rescore-nbest``, ``count-unigrams`` and
``score-wer`` (``--drop-tokens``), so a token dropped on import is also dropped when an LM
scores a hypothesis, when words are counted and when WER is computed.

SRILM's rule (the ``--from srilm`` default). SRILM's ``Vocab`` constructor
(lm/src/Vocab.cc, RCS 1.57, 2014-08-29) interns ``<s>``, ``</s>`` and ``-pau-``
(``Vocab_SentStart``, ``Vocab_SentEnd``, ``Vocab_Pause`` in lm/src/Vocab.h) and declares
``<s>`` and ``-pau-`` *non-events* (``addNonEvent``): they get no probability.
``LM::prepareSentence`` and ``LM::removeNoise`` (lm/src/LM.cc) skip ``-pau-`` (and the words
of ``-noise``/``-noise-vocab``) when scoring a hypothesis, and treat ``<s>``/``</s>`` as the
sentence boundaries, which every LM adds itself; ``NBestList::removeNoise``
(lm/src/NBest.cc) strips them from N-best hypotheses. So in an SRILM/Decipher N-best list
``<s>``, ``</s>`` and ``-pau-`` are not words: :data:`SRILM_NON_EVENTS`.

:data:`DEFAULT_DROP` adds the silence and noise markers that Kaldi recipes and CMU Sphinx
put in hypotheses (``[noise]``, ``<sil>``, ...). ``<unk>`` is *not* in it: an unknown word was
a spoken word, and dropping it would turn a substitution into a deletion.

A drop specification (``--drop-tokens SPEC``) is comma-separated items, each ``none`` (no
token), ``srilm`` (:data:`SRILM_NON_EVENTS`), ``default`` (:data:`DEFAULT_DROP`), ``@FILE``
(one token per line, blank lines and lines starting with ``#`` skipped), or a literal token;
the union is dropped. Tokens match exactly (case-sensitive).
"""

from __future__ import annotations

from typing import Iterable, Sequence

from asrpriv.errors import AsrprivError, InputError, arg

#: SRILM's non-events in N-best hypotheses (lm/src/Vocab.cc, lm/src/LM.cc; see the module doc)
SRILM_NON_EVENTS: tuple[str, ...] = ("<s>", "</s>", "-pau-")

#: Silence and noise markers of Kaldi recipes (``[noise]``, ``[laughter]``, ``[vocalized-noise]``,
#: ``<sil>``/``!SIL``, ``<eps>``, ``<spoken_noise>``/``<SPOKEN_NOISE>``, ``<noise>``/``<NOISE>``)
#: and CMU Sphinx filler words (``<sil>``, ``[NOISE]``, ``[SPEECH]``, ``++NOISE++``).
NOISE_MARKERS: tuple[str, ...] = (
    "<sil>", "!SIL", "<eps>", "[noise]", "[NOISE]", "[laughter]", "[LAUGHTER]",
    "[vocalized-noise]", "[VOCALIZED-NOISE]", "<noise>", "<NOISE>", "<spoken_noise>",
    "<SPOKEN_NOISE>", "[SPEECH]", "++NOISE++",
)

#: ``--drop-tokens default``: SRILM's non-events and the noise markers
DEFAULT_DROP: tuple[str, ...] = SRILM_NON_EVENTS + NOISE_MARKERS

_NAMED = {"none": (), "srilm": SRILM_NON_EVENTS, "default": DEFAULT_DROP}

#: help text shared by every step's ``--drop-tokens``
HELP = ("Tokens that are not words, dropped from every hypothesis (and reference) before "
        "anything else: comma-separated items, each 'none', 'srilm' (SRILM's non-events "
        "<s> </s> -pau-), 'default' (those and the Kaldi/Sphinx noise markers [noise] "
        "[laughter] [vocalized-noise] <sil> !SIL <eps> <noise> <spoken_noise> [SPEECH] "
        "++NOISE++, upper-case spellings too; not <unk>), '@FILE' (one token per line) or a "
        "token. Same list in import-nbest, rescore-nbest, count-unigrams and score-wer "
        "(docs/FORMATS.md, 'Non-event and noise tokens').")


def parse_drop(spec: str | None, what: str | None = None) -> frozenset[str]:
    """The tokens of a drop specification (module docstring); ``None`` or ``""`` = none.
    ``what`` names the argument in messages (default: ``drop_tokens``)."""
    what = what or arg("drop_tokens")
    if spec is None:
        return frozenset()
    tokens: set[str] = set()
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        if item in _NAMED:
            tokens.update(_NAMED[item])
        elif item.startswith("@"):
            tokens.update(read_token_file(item[1:], what))
        elif any(ch.isspace() for ch in item):
            raise AsrprivError(f"{what}: a token cannot hold white space: {item!r}")
        else:
            tokens.add(item)
    return frozenset(tokens)


def read_token_file(path: str, what: str | None = None) -> list[str]:
    """Tokens of a file, one per line (``#`` lines and blank lines skipped)."""
    what = what or arg("drop_tokens")
    from asrpriv.io.lines import iter_lines

    if not path:
        raise AsrprivError(f"{what}: '@' needs a file name (@FILE)")
    out = []
    for lineno, line in iter_lines(path):
        token = line.strip()
        if not token or token.startswith("#"):
            continue
        if any(ch.isspace() for ch in token):
            raise InputError(path, lineno, f"{what}: one token per line, got {token!r}")
        out.append(token)
    return out


def drop_words(words: Sequence[str], drop: frozenset[str] | set[str]) -> list[str]:
    """``words`` without the tokens of ``drop`` (a new list; the input is not changed)."""
    if not drop:
        return list(words)
    return [w for w in words if w not in drop]


def drop_text(text: str, drop: frozenset[str] | set[str]) -> str:
    """A space-joined text without the tokens of ``drop``."""
    if not drop:
        return text
    return " ".join(w for w in text.split() if w not in drop)


def count_dropped(words: Iterable[str], drop: frozenset[str] | set[str]) -> int:
    return sum(1 for w in words if w in drop) if drop else 0
