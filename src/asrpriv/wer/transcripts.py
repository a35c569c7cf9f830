"""Reading transcripts for scoring: Kaldi ``text`` or sclite ``trn``, keyed by utterance id.

Text normalization is explicit (:class:`Normalizer`) and described by its signature part, so
that a score always says how its words were compared.
"""

from __future__ import annotations

import codecs
import gc
import unicodedata
from dataclasses import dataclass, field

from asrpriv.errors import InputError
from asrpriv.io.lines import iter_blocks
from asrpriv.io.trn import parse_trn_text

FORMATS = ("auto", "kaldi", "trn", "nemo")


#: sclite's case folding (SCTK ``sclite -e`` generic, every encoding): A-Z to a-z only
ASCII_LOWER = {c: c + 32 for c in range(0x41, 0x5B)}

#: ``Normalizer.case`` values
CASE_FOLDINGS = ("sclite", "unicode")


@dataclass(frozen=True)
class Normalizer:
    """How words are compared.

    ``lowercase``: fold case, as sclite does unless given ``-s``. ``case`` says which letters:
    ``"sclite"`` (the default) folds the 26 ASCII letters A-Z only, as sclite 2.4 does in
    every encoding (its default 8-bit ASCII, ``-e utf-8``, ``gb``, ``euc``; checked with
    Debian's sclite: ``É/é``, ``Д/д``, ``Ģ/ģ``, ``Σ/σ``, fullwidth ``Ａ/ａ`` stay apart);
    ``"unicode"`` folds every letter (``str.lower``), as no sclite setting does (its
    ``babel_turkish`` and ``babel_vietnamese`` localizations fold A-Z and their language's
    letters only).
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
    case: str = "sclite"

    def __post_init__(self) -> None:
        if self.case not in CASE_FOLDINGS:
            raise ValueError(f"case folding {self.case!r}: expected one of {', '.join(CASE_FOLDINGS)}")

    def with_drop(self, tokens) -> "Normalizer":
        """This normalizer also dropping ``tokens`` (case-folded as the words are)."""
        import dataclasses

        return dataclasses.replace(self, drop=frozenset(self.line(t) for t in tokens))

    def signature(self) -> str:
        """``case:sclite`` (A-Z folded), ``case:lc`` (every letter) or ``case:mixed``."""
        case = ("lc" if self.case == "unicode" else "sclite") if self.lowercase else "mixed"
        sig = f"case:{case}|strip:{'punct' if self.strip_punct else 'none'}"
        return sig + (f"|drop:{len(self.drop)}" if self.drop else "")

    def line(self, text: str) -> str:
        """``text`` case-folded (:attr:`case`), or unchanged without :attr:`lowercase`."""
        if not self.lowercase:
            return text
        return text.lower() if self.case == "unicode" else text.translate(ASCII_LOWER)

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
    """Utterances of one file: ``words[id]`` and the 1-based line of each id, in file order.

    ``networks``: trn utterances with alternations ``{ a / b }`` (see
    :mod:`asrpriv.wer.network`); their ``words`` entry is empty and must not be scored as is.
    """

    path: str | None
    format: str
    words: dict[str, list[str]]
    lines: dict[str, int]
    networks: dict[str, tuple] = field(default_factory=dict)
    #: with ``optional_deletable`` (sclite ``-D``): per trn utterance with ``(word)`` tokens,
    #: which words may be deleted at no error
    optional: dict[str, list[bool]] = field(default_factory=dict)


def _numbered_lines(blocks: list[tuple[int, str]]):
    for first, block in blocks:
        for offset, line in enumerate(block.split("\n")):
            yield first + offset, line


def detect_format(lines) -> str:
    """``nemo`` if the first non-blank line is a JSON object (not a trn line opening with an
    alternation ``{ a / b } ... (id)``), ``trn`` if every non-blank line ends with ``(id)``
    (``;;`` comment lines aside), else ``kaldi``."""
    seen = False
    for _lineno, line in lines:
        stripped = line.rstrip()
        if not stripped or stripped.lstrip().startswith(";;"):
            continue
        if not seen and stripped.lstrip().startswith("{") and not stripped.endswith(")"):
            return "nemo"
        seen = True
        if not stripped.endswith(")") or "(" not in stripped:
            return "kaldi"
    return "trn" if seen else "kaldi"


def read_transcript(path: str | None, fmt: str = "auto",
                    normalizer: Normalizer = Normalizer(), field: str = "text",
                    id_field: str | None = None, *, alternations: bool = True,
                    fold_ids: bool = False, encoding: str = "utf-8",
                    optional_deletable: bool = False, words: str | None = None) -> Transcript:
    """Read a transcript; duplicate ids, lines without an id and bad trn ids are errors.

    NeMo manifests (JSON lines): the words are the entry's ``field`` (``text`` for
    references, ``pred_text`` for hypotheses), the id its ``id_field`` or, by default, the
    file name of ``audio_filepath`` without extension.

    Case folding applies to the words only; utterance ids are folded (``str.lower``) only
    with ``fold_ids`` (sclite matches ids regardless of case). Input is decoded in blocks
    (strict UTF-8, located errors, gzip) by :func:`asrpriv.io.lines.iter_blocks`, or
    strictly with ``encoding`` (e.g. ``gb2312``) when it is not UTF-8.

    trn as sclite reads it: ``;;`` lines are comments, ``@`` is the null word (dropped), and
    alternations ``{ a / b / @ }`` become :attr:`Transcript.networks` entries (with
    ``alternations``; otherwise they are refused with FILE:LINE). With ``optional_deletable``
    (sclite ``-D``), a trn word in parentheses, ``(uh)``, is the word ``uh`` flagged in
    :attr:`Transcript.optional`.

    ``path`` may be a Kaldi rspecifier (``ark,t:ref.txt``, ``ark,t:-``, ``ark:gunzip -c
    text.gz |``, ``scp:text.scp``; :mod:`asrpriv.io.kaldi_tables`): a table of token vectors
    (Kaldi text), or with ``words`` (a words.txt symbol table) of word ids, text or binary
    (``nbest-to-linear``'s and ``lattice-best-path``'s words archives). A lhotse supervision
    or cut manifest (``.jsonl``/``.jsonl.gz``, :mod:`asrpriv.io.lhotse`) is read for its
    ``text`` (``field`` does not apply).
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown transcript format {fmt!r}")
    check_encoding(encoding)
    from asrpriv.io import kaldi_tables

    if kaldi_tables.is_specifier(path):
        if fmt not in ("auto", "kaldi"):
            from asrpriv.errors import AsrprivError

            raise AsrprivError(f"{path}: a Kaldi table holds Kaldi text; --input-format {fmt} "
                               "does not apply")
        if not is_utf8(encoding):
            from asrpriv.errors import AsrprivError

            raise AsrprivError(f"{path}: Kaldi tables are read as UTF-8 (--encoding {encoding})")
        return _read_table(path, normalizer, fold_ids, words)
    # ``words`` applies to inputs given as Kaldi tables only (a plain file is read as words)
    from asrpriv.io import lhotse as lhotse_io

    if lhotse_io.is_manifest(path):
        return _read_manifest(path, normalizer, fold_ids)
    # millions of small acyclic lists: the cyclic garbage collector would only slow this down
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _read(path, fmt, normalizer, field, id_field, alternations, fold_ids, encoding,
                     optional_deletable)
    finally:
        if was_enabled:
            gc.enable()


def check_encoding(encoding: str) -> None:
    """AsrprivError for an encoding name Python does not know."""
    try:
        codecs.lookup(encoding)
    except LookupError:
        from asrpriv.errors import AsrprivError

        raise AsrprivError(f"unknown encoding {encoding!r} (e.g. utf-8, gb2312, iso-8859-1)") from None


def is_utf8(encoding: str) -> bool:
    return codecs.lookup(encoding).name == "utf-8"


def decoded_blocks(path: str | None, encoding: str = "utf-8") -> list[tuple[int, str]]:
    """``[(first line number, text)]`` of a file: UTF-8 by blocks, else decoded line by line
    with ``encoding`` (strict; a bad byte is an :class:`InputError` naming its line)."""
    if is_utf8(encoding):
        return list(iter_blocks(path))
    from asrpriv.io.lines import _too_long, max_line_bytes, open_binary

    limit = max_line_bytes()
    stream = open_binary(path)
    try:
        data = stream.read()
    finally:
        if path not in (None, "-"):
            stream.close()
    out = []
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        if len(raw) > limit:
            raise _too_long(path, lineno, limit)
        try:
            out.append(raw.decode(encoding).rstrip("\r"))
        except UnicodeDecodeError as err:
            raise InputError(path, lineno, f"not valid {encoding} (byte {err.start + 1} of the line)") from None
    return [(1, "\n".join(out))]


def decoded_lines(path: str | None, encoding: str = "utf-8"):
    """``(line number, line)`` pairs, decoded as :func:`decoded_blocks` does."""
    return _numbered_lines(decoded_blocks(path, encoding))


def _read(path: str | None, fmt: str, normalizer: Normalizer, field: str = "text",
          id_field: str | None = None, alternations: bool = True, fold_ids: bool = False,
          encoding: str = "utf-8", optional_deletable: bool = False) -> Transcript:
    blocks = decoded_blocks(path, encoding)
    if fmt == "auto":
        fmt = detect_format(_numbered_lines(blocks))
    if fmt == "nemo":
        return _read_nemo(path, blocks, normalizer, field, id_field, fold_ids)
    words: dict[str, list[str]] = {}
    where: dict[str, int] = {}
    networks: dict[str, tuple] = {}
    optional: dict[str, list[bool]] = {}
    trn = fmt == "trn"
    lower = normalizer.lowercase
    strip = normalizer.strip_punct or bool(normalizer.drop)  # normalizer.words also drops
    for lineno, line in _numbered_lines(blocks):
        if trn:
            if not line.strip() or line.lstrip().startswith(";;"):
                continue
            utt_id, text = parse_trn_text(line, path, lineno)
            if "{" in text:  # '}' alone is a letter (Buckwalter), as sclite reads it
                if optional_deletable:
                    raise InputError(path, lineno, "alternations { a / b } together with -D "
                                     "(optionally deletable words) are not supported")
                from asrpriv.wer.network import parse_alternations, simplify

                segments = parse_alternations(text, path, lineno, hypothesis=not alternations)

                def fold(ws: list[str]) -> list[str]:
                    ws = [normalizer.line(w) for w in ws] if lower else ws
                    return normalizer.words(ws) if strip else ws

                toks, network = simplify(segments, fold)
                if network is not None:
                    networks[_key(utt_id, fold_ids)] = network
                    toks = []
            else:
                toks = text.split()
                if ";" in text:
                    from asrpriv.wer.network import strip_all_tags

                    toks = strip_all_tags(toks)
                if "@" in toks:
                    toks = [w for w in toks if w != "@"]
                if lower:
                    toks = [normalizer.line(w) for w in toks]
                flags = None
                if optional_deletable and "(" in text:
                    flags = [len(w) > 2 and w[0] == "(" and w[-1] == ")" for w in toks]
                    toks = [w[1:-1] if f else w for w, f in zip(toks, flags)]
                if strip:
                    if flags is None:
                        toks = normalizer.words(toks)
                    else:
                        kept = [(normalizer.words([w]), f) for w, f in zip(toks, flags)]
                        toks = [w[0] for w, _f in kept if w]
                        flags = [f for w, f in kept if w]
                if flags is not None and any(flags):
                    optional[_key(utt_id, fold_ids)] = flags
            utt_id = _key(utt_id, fold_ids)
        else:
            if not line or line.isspace():
                continue
            if line[0].isspace():
                raise InputError(path, lineno,
                                 "line without an utterance id (it starts with white space)")
            parts = line.split(None, 1)
            utt_id = parts[0]
            rest = parts[1] if len(parts) > 1 else ""
            if "{" in rest and "/" in rest and "}" in rest:
                raise InputError(path, lineno, "looks like an sclite alternation { a / b }: "
                                 "alternations are read from trn files (word ... (utt_id)), "
                                 "not scored as words here")
            toks = normalizer.line(rest).split()
            if strip:
                toks = normalizer.words(toks)
            utt_id = _key(utt_id, fold_ids)
        if utt_id in words:
            raise InputError(path, lineno,
                             f"duplicate utterance id {utt_id!r} (first on line {where[utt_id]})")
        words[utt_id] = toks
        where[utt_id] = lineno
    return Transcript(path=path, format=fmt, words=words, lines=where, networks=networks,
                      optional=optional)


def _normalize_words(toks: list[str], normalizer: Normalizer, path, lineno) -> list[str]:
    """Words of one Kaldi-text utterance as the Kaldi branch of :func:`_read` folds them."""
    rest = " ".join(toks)
    if "{" in rest and "/" in rest and "}" in rest:
        raise InputError(path, lineno, "looks like an sclite alternation { a / b }: "
                         "alternations are read from trn files (word ... (utt_id)), "
                         "not scored as words here")
    if normalizer.lowercase:
        toks = [w.lower() for w in toks]
    return normalizer.words(toks) if normalizer.strip_punct or normalizer.drop else toks


def _read_table(spec: str, normalizer: Normalizer, fold_ids: bool, words: str | None) -> Transcript:
    """A Kaldi table of token vectors (or word ids with ``words``) as a transcript."""
    from asrpriv.io.importers.kaldi import read_symbols
    from asrpriv.io.kaldi_tables import read_tokens

    symbols = read_symbols(words) if words is not None else None
    out: dict[str, list[str]] = {}
    where: dict[str, int] = {}
    for n, e in enumerate(read_tokens(spec, symbols), 1):
        utt_id = _key(e.key, fold_ids)
        line = e.line if e.line is not None else n
        if utt_id in out:
            raise InputError(spec, e.line, f"duplicate utterance id {utt_id!r} (entry {n})")
        out[utt_id] = _normalize_words(list(e.value), normalizer, spec, e.line)
        where[utt_id] = line
    return Transcript(path=spec, format="kaldi", words=out, lines=where)


def _read_manifest(path: str, normalizer: Normalizer, fold_ids: bool) -> Transcript:
    """The ``text`` of a lhotse supervision or cut manifest, keyed as :mod:`asrpriv.io.lhotse`
    says."""
    from asrpriv.io.lhotse import iter_supervisions

    out: dict[str, list[str]] = {}
    where: dict[str, int] = {}
    for sup in iter_supervisions(path):
        utt_id = _key(sup.key, fold_ids)
        if sup.text is None:
            raise InputError(path, sup.line, f"supervision {sup.key!r} has no text")
        if utt_id in out:
            raise InputError(path, sup.line, f"duplicate utterance id {utt_id!r} (first on line "
                                             f"{where[utt_id]})")
        out[utt_id] = _normalize_words(sup.text.split(), normalizer, path, sup.line)
        where[utt_id] = sup.line
    return Transcript(path=path, format="kaldi", words=out, lines=where)


def _key(utt_id: str, fold_ids: bool) -> str:
    return utt_id.lower() if fold_ids else utt_id


def _read_nemo(path, blocks, normalizer: Normalizer, field: str, id_field: str | None,
               fold_ids: bool = False) -> Transcript:
    from asrpriv.io.importers.nemo import iter_manifest, manifest_id

    words: dict[str, list[str]] = {}
    where: dict[str, int] = {}
    for lineno, entry in iter_manifest(path, _numbered_lines(blocks)):
        if field not in entry:
            raise InputError(path, lineno, f"no {field!r} in this manifest entry")
        utt_id = _key(manifest_id(entry, id_field, path, lineno), fold_ids)
        if utt_id in words:
            raise InputError(path, lineno,
                             f"duplicate utterance id {utt_id!r} (first on line {where[utt_id]})")
        words[utt_id] = normalizer.words(normalizer.line(str(entry[field])).split())
        where[utt_id] = lineno
    return Transcript(path=path, format="nemo", words=words, lines=where)
