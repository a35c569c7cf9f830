"""Reading transcripts for scoring: Kaldi ``text`` or sclite ``trn``, keyed by utterance id.

Text normalization is explicit (:class:`Normalizer`) and described by its signature part, so
that a score always says how its words were compared.
"""

from __future__ import annotations

import gc
import unicodedata
from dataclasses import dataclass

from asrpriv.errors import InputError
from asrpriv.io.lines import iter_blocks
from asrpriv.io.trn import parse_trn_line

FORMATS = ("auto", "kaldi", "trn", "nemo")


@dataclass(frozen=True)
class Normalizer:
    """How words are compared.

    ``lowercase``: fold case (``str.lower``), as sclite does unless given ``-s``.
    ``strip_punct``: remove Unicode punctuation (categories P*) from both edges of every word
    (inner punctuation such as ``i'm`` or ``well-known`` is kept); words that were only
    punctuation disappear.
    ``drop``: tokens that are not words (:mod:`asrpriv.io.tokens`, ``--drop-tokens``),
    removed before punctuation is stripped (``[noise]`` must not become ``noise``); matched
    after case folding (give them folded, :meth:`with_drop` does).
    """

    lowercase: bool = True
    strip_punct: bool = False
    drop: frozenset = frozenset()

    def with_drop(self, tokens) -> "Normalizer":
        """This normalizer also dropping ``tokens`` (case-folded as the words are)."""
        folded = frozenset(t.lower() for t in tokens) if self.lowercase else frozenset(tokens)
        return Normalizer(self.lowercase, self.strip_punct, folded)

    def signature(self) -> str:
        sig = f"case:{'lc' if self.lowercase else 'mixed'}|strip:{'punct' if self.strip_punct else 'none'}"
        return sig + (f"|drop:{len(self.drop)}" if self.drop else "")

    def line(self, text: str) -> str:
        return text.lower() if self.lowercase else text

    def words(self, words: list[str]) -> list[str]:
        if self.drop:
            words = [w for w in words if w not in self.drop]
        if not self.strip_punct:
            return words
        out = []
        for word in words:
            word = _strip_punct(word)
            if word:
                out.append(word)
        return out


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P")


def _strip_punct(word: str) -> str:
    start, end = 0, len(word)
    while start < end and _is_punct(word[start]):
        start += 1
    while end > start and _is_punct(word[end - 1]):
        end -= 1
    return word[start:end]


@dataclass
class Transcript:
    """Utterances of one file: ``words[id]`` and the 1-based line of each id, in file order."""

    path: str | None
    format: str
    words: dict[str, list[str]]
    lines: dict[str, int]


def _numbered_lines(blocks: list[tuple[int, str]]):
    for first, block in blocks:
        for offset, line in enumerate(block.split("\n")):
            yield first + offset, line


def detect_format(lines) -> str:
    """``nemo`` if the first non-blank line is a JSON object, ``trn`` if every non-blank line
    ends with ``(id)``, else ``kaldi``."""
    seen = False
    for _lineno, line in lines:
        stripped = line.rstrip()
        if not stripped:
            continue
        if not seen and stripped.lstrip().startswith("{"):
            return "nemo"
        seen = True
        if not stripped.endswith(")") or "(" not in stripped:
            return "kaldi"
    return "trn" if seen else "kaldi"


def read_transcript(path: str | None, fmt: str = "auto",
                    normalizer: Normalizer = Normalizer(), field: str = "text",
                    id_field: str | None = None) -> Transcript:
    """Read a transcript; duplicate ids, lines without an id and bad trn ids are errors.

    NeMo manifests (JSON lines): the words are the entry's ``field`` (``text`` for
    references, ``pred_text`` for hypotheses), the id its ``id_field`` or, by default, the
    file name of ``audio_filepath`` without extension.

    Case folding applies to the words only, never to utterance ids. Input is decoded in
    blocks (strict UTF-8, located errors, gzip) by :func:`asrpriv.io.lines.iter_blocks`.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown transcript format {fmt!r}")
    # millions of small acyclic lists: the cyclic garbage collector would only slow this down
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _read(path, fmt, normalizer, field, id_field)
    finally:
        if was_enabled:
            gc.enable()


def _read(path: str | None, fmt: str, normalizer: Normalizer, field: str = "text",
          id_field: str | None = None) -> Transcript:
    blocks = list(iter_blocks(path))
    if fmt == "auto":
        fmt = detect_format(_numbered_lines(blocks))
    if fmt == "nemo":
        return _read_nemo(path, blocks, normalizer, field, id_field)
    words: dict[str, list[str]] = {}
    where: dict[str, int] = {}
    trn = fmt == "trn"
    lower = normalizer.lowercase
    strip = normalizer.strip_punct
    for lineno, line in _numbered_lines(blocks):
        if trn:
            if not line.strip():
                continue
            utt_id, toks = parse_trn_line(line, path, lineno)
            if lower:
                toks = [w.lower() for w in toks]
        else:
            if not line or line.isspace():
                continue
            if line[0].isspace():
                raise InputError(path, lineno,
                                 "line without an utterance id (it starts with white space)")
            parts = line.split(None, 1)
            utt_id = parts[0]
            rest = parts[1] if len(parts) > 1 else ""
            toks = (rest.lower() if lower else rest).split()
        if strip:
            toks = normalizer.words(toks)
        if utt_id in words:
            raise InputError(path, lineno,
                             f"duplicate utterance id {utt_id!r} (first on line {where[utt_id]})")
        words[utt_id] = toks
        where[utt_id] = lineno
    return Transcript(path=path, format=fmt, words=words, lines=where)


def _read_nemo(path, blocks, normalizer: Normalizer, field: str, id_field: str | None) -> Transcript:
    from asrpriv.io.importers.nemo import iter_manifest, manifest_id

    words: dict[str, list[str]] = {}
    where: dict[str, int] = {}
    for lineno, entry in iter_manifest(path, _numbered_lines(blocks)):
        if field not in entry:
            raise InputError(path, lineno, f"no {field!r} in this manifest entry")
        utt_id = manifest_id(entry, id_field, path, lineno)
        if utt_id in words:
            raise InputError(path, lineno,
                             f"duplicate utterance id {utt_id!r} (first on line {where[utt_id]})")
        words[utt_id] = normalizer.words(normalizer.line(str(entry[field])).split())
        where[utt_id] = lineno
    return Transcript(path=path, format="nemo", words=words, lines=where)
