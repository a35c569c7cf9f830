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
put in hypotheses (``[noise]``, ``<sil>``, ...) and the non-speech tokens of three
transcription conventions, each also a named list:

* ``swbd`` (:data:`SWBD_FISHER`): Switchboard as the Mississippi State transcripts write it
  (``[noise]``, ``[vocalized-noise]``, ``[laughter]``, ``[silence]``; Kaldi
  egs/swbd/s5c/local/swbd1_data_prep.sh: "we have [NOISE], [VOCALIZED-NOISE], [LAUGHTER],
  [SILENCE]"), and Fisher as LDC transcribed it (``[laugh]``, ``[sigh]``, ``[cough]``,
  ``[mn]``, ``[breath]``, ``[lipsmack]``, ``[sneeze]``, ``[pause]``, ``[[skip]]``: the tokens
  that Kaldi egs/fisher_english/s5/local/fisher_data_prep.sh and
  egs/ami/s5b/local/fisher_map_words.pl map to noise or remove);
* ``ami`` (:data:`AMI_ICSI`): the non-speech words of the AMI and ICSI meeting recipes'
  lexicons (``[laughter]``, ``[noise]``; egs/ami/s5b/local/ami_prepare_dict.sh,
  egs/icsi/s5/local/icsi_prepare_dict.sh), to which those recipes map the corpora's
  ``<VocalSound>``/``<NonVocalSound>`` events and the Fisher tokens above;
* ``chime`` (:data:`CHIME`): the CHiME-5/6 transcription conventions (Barker et al.,
  "The fifth 'CHiME' Speech Separation and Recognition Challenge", Interspeech 2018):
  ``[noise]``, ``[laughs]``, ``[inaudible]`` (egs/chime6/s5_track1/local/prepare_dict.sh;
  prepare_data.sh folds ``[inaudible 0:12:34]`` to ``[inaudible]``). ``[redacted]`` is not
  in it: it stands for words that were spoken.

(Kaldi paths at kaldi-asr/kaldi f4007661, 2025-07-22.) Upper-case spellings are included.
``<unk>`` is in none of them: an unknown word was a spoken word, and dropping it would turn a
substitution into a deletion.

A drop specification (``--drop-tokens SPEC``) is comma-separated items, each ``none`` (no
token), ``srilm`` (:data:`SRILM_NON_EVENTS`), ``swbd``, ``ami``, ``chime``, ``default``
(:data:`DEFAULT_DROP`), ``@FILE`` (one token per line, blank lines and lines starting with
``#`` skipped), ``=TOKEN`` (the literal token TOKEN, whatever it starts with: ``=@reject@``
is Decipher's reject token ``@reject@``, ``=default`` the word ``default``, ``==x`` the token
``=x``), or any other token, taken literally; the union is dropped. An item's first character
decides: ``@`` is a file, ``=`` a literal, so the two never collide. A token cannot hold a
comma or white space (put such tokens in an @FILE: a comma there is part of the token).
Tokens match exactly (case-sensitive).
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


def _both_cases(tokens: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for t in tokens:
        for v in (t, t.upper()):
            if v not in out:
                out.append(v)
    return tuple(out)


#: Switchboard (MS-State) and Fisher (LDC) non-speech tokens (module docstring)
SWBD_FISHER: tuple[str, ...] = _both_cases((
    "[noise]", "[vocalized-noise]", "[laughter]", "[silence]",
    "[laugh]", "[sigh]", "[cough]", "[mn]", "[breath]", "[lipsmack]", "[sneeze]", "[pause]",
    "[[skip]]",
))
#: AMI and ICSI meeting recipes' non-speech words (module docstring)
AMI_ICSI: tuple[str, ...] = _both_cases(("[laughter]", "[noise]"))
#: CHiME-5/6 transcription conventions (module docstring)
CHIME: tuple[str, ...] = _both_cases(("[noise]", "[laughs]", "[inaudible]"))


def _union(*lists: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for tokens in lists:
        out.extend(t for t in tokens if t not in out)
    return tuple(out)


#: ``--drop-tokens default``: SRILM's non-events, the noise markers and the three conventions
DEFAULT_DROP: tuple[str, ...] = _union(SRILM_NON_EVENTS, NOISE_MARKERS, SWBD_FISHER, AMI_ICSI, CHIME)

_NAMED = {"none": (), "srilm": SRILM_NON_EVENTS, "swbd": SWBD_FISHER, "ami": AMI_ICSI,
          "chime": CHIME, "default": DEFAULT_DROP}

#: help text shared by every step's ``--drop-tokens``
HELP = ("Tokens that are not words, dropped from every hypothesis (and reference) before "
        "anything else: comma-separated items, each 'none', 'srilm' (SRILM's non-events "
        "<s> </s> -pau-), 'swbd' (Switchboard/Fisher: [laugh] [laughter] [noise] "
        "[vocalized-noise] [cough] [breath] [sigh] [lipsmack] [sneeze] [mn] ...), 'ami' "
        "(AMI/ICSI: [laughter] [noise]), 'chime' (CHiME-5/6: [laughs] [noise] [inaudible]), "
        "'default' (all of those and the Kaldi/Sphinx noise markers <sil> !SIL <eps> <noise> "
        "<spoken_noise> [SPEECH] ++NOISE++, upper-case spellings too; not <unk>), '@FILE' "
        "(one token per line), '=TOKEN' (TOKEN literally, e.g. '=@reject@') or a "
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
        if item.startswith("="):
            token = item[1:]
            if not token:
                raise AsrprivError(f"{what}: '=' needs a token (=TOKEN)")
            if any(ch.isspace() for ch in token):
                raise AsrprivError(f"{what}: a token cannot hold white space: {token!r}")
            tokens.add(token)
        elif item in _NAMED:
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
