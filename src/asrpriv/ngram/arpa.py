"""ARPA back-off language models: an exact reader and writer, and back-off queries.

All scores are **log10** probabilities, as the ARPA format stores them. A model read with
:func:`read_arpa` and written with :meth:`ArpaModel.write` (default ``precision=None``)
reproduces every number exactly: floats are written as the shortest decimal that reads back
to the same double (``repr``), whole numbers without a fraction (``-99``, ``0``), and an
entry without a back-off weight stays without one. Entries keep their file order.

Query semantics (SRILM/KenLM back-off)::

    p(w | h) = p*(w | h)                 if the n-gram "h w" is listed
             = bow(h) * p(w | h')        otherwise, h' = h without its first (oldest) word

with ``bow(h) = 1`` (log10 0) when h is not listed or has no weight. Words not in the unigram
list are scored as ``<unk>`` (in the history too), as kenlm does.

This module is pure Python (no numpy), so light steps can read ARPA files cheaply.
"""

from __future__ import annotations

import math
import re
from typing import IO, Iterable, Iterator, Sequence

from asrpriv.errors import InputError

UNK, BOS, EOS = "<unk>", "<s>", "</s>"

_COUNT_LINE = re.compile(r"^ngram\s+(\d+)\s*=\s*(\d+)\s*$")
_SECTION = re.compile(r"^\\(\d+)-grams:\s*$")


class ArpaModel:
    """A back-off n-gram model as listed in an ARPA file.

    ``ngrams[n-1]`` maps a tuple of n words to ``(log10 prob, log10 backoff or None)``, in
    file order. Build one with :func:`read_arpa` or from a trainer.
    """

    def __init__(self, ngrams: list[dict[tuple[str, ...], tuple[float, float | None]]]) -> None:
        if not ngrams or not ngrams[0]:
            raise ValueError("an ARPA model needs unigrams")
        self.ngrams = ngrams

    @property
    def order(self) -> int:
        return len(self.ngrams)

    @property
    def vocabulary(self) -> list[str]:
        """The unigram words, in file order (including ``<s>``, ``</s>``, ``<unk>``)."""
        return [key[0] for key in self.ngrams[0]]

    def counts(self) -> list[int]:
        return [len(table) for table in self.ngrams]

    def map_word(self, word: str) -> str:
        """The word itself if it is in the unigram list, else ``<unk>``."""
        return word if (word,) in self.ngrams[0] else UNK

    def backoff(self, context: Sequence[str]) -> float:
        """log10 back-off weight of a history (0 when it is not listed or has none)."""
        ctx = tuple(context)
        if not ctx or len(ctx) >= self.order:
            return 0.0
        entry = self.ngrams[len(ctx) - 1].get(ctx)
        if entry is None or entry[1] is None:
            return 0.0
        return entry[1]

    def prob(self, word: str, context: Sequence[str] = ()) -> float:
        """log10 p(word | context); ``context`` lists the preceding words, oldest first.

        Only the last ``order - 1`` words of the context matter. Out-of-vocabulary words
        (here and in the context) are scored as ``<unk>``; a model without ``<unk>`` gives
        ``-inf`` for them.
        """
        word = self.map_word(word)
        ctx = tuple(self.map_word(w) for w in context)
        if self.order > 1:
            ctx = ctx[len(ctx) - (self.order - 1):] if len(ctx) > self.order - 1 else ctx
        else:
            ctx = ()
        total_backoff = 0.0
        for start in range(len(ctx) + 1):
            hist = ctx[start:]
            entry = self.ngrams[len(hist)].get(hist + (word,))
            if entry is not None:
                return total_backoff + entry[0]
            total_backoff += self.backoff(hist)
        return -math.inf

    def score_sentence(self, words: Sequence[str], bos: bool = True, eos: bool = True) -> float:
        """log10 probability of a sentence: its words and, with ``eos``, ``</s>``.

        With ``bos`` the history starts as ``<s>`` (the same as ``kenlm.Model.score``).
        """
        context: list[str] = [BOS] if bos else []
        total = 0.0
        targets = list(words) + ([EOS] if eos else [])
        keep = max(self.order - 1, 0)
        for word in targets:
            total += self.prob(word, context[-keep:] if keep else ())
            context.append(word)
        return total

    def perplexity(self, sentences: Iterable[Sequence[str]]) -> tuple[float, int, int]:
        """``(perplexity, predicted tokens, OOV tokens)`` over sentences, counting ``</s>``.

        Perplexity is ``10 ** (-sum log10 p / tokens)``; OOVs are scored as ``<unk>`` and
        counted (as kenlm does).
        """
        total, tokens, oov = 0.0, 0, 0
        for words in sentences:
            total += self.score_sentence(words)
            tokens += len(words) + 1
            oov += sum(1 for w in words if (w,) not in self.ngrams[0])
        return 10.0 ** (-total / max(tokens, 1)), tokens, oov

    def write(self, out: IO[str] | str, precision: int | None = None) -> None:
        """Write the model as ARPA to a text stream or a path (a path is written atomically).

        ``precision=None`` writes every float exactly (shortest round-trip decimal);
        an integer writes that many digits after the point.
        """
        if isinstance(out, str):
            from asrpriv.io.output import open_output

            with open_output(out) as handle:
                self.write(handle, precision)
            return
        fmt = format_float if precision is None else (lambda x: format_float(x, precision))
        write_arpa(out, self.counts(), (
            (n, ((fmt(prob), " ".join(words), None if bow is None else fmt(bow))
                 for words, (prob, bow) in table.items()))
            for n, table in enumerate(self.ngrams, 1)))


def format_float(x: float, precision: int | None = None) -> str:
    """ARPA text of a number: whole numbers bare (``-99``, ``0``); else ``repr`` or fixed digits."""
    if math.isfinite(x) and x == int(x):
        return str(int(x))
    if precision is None:
        return repr(float(x))
    return f"{x:.{precision}f}"


def write_header(out: IO[str], counts: Sequence[int]) -> None:
    out.write("\n\\data\\\n")
    for n, count in enumerate(counts, 1):
        out.write(f"ngram {n}={count}\n")
    out.write("\n")


def write_arpa(out: IO[str], counts: Sequence[int],
               sections: Iterable[tuple[int, Iterable[tuple[str, str, str | None]]]]) -> None:
    """Write ARPA text: the header, then per order n its ``(log10 prob, words, log10 bow or None)``
    rows, already formatted, then ``\\end\\``. Rows are written in chunks (one ``write`` per 64k)."""
    write_header(out, counts)
    for n, rows in sections:
        out.write(f"\\{n}-grams:\n")
        chunk: list[str] = []
        for prob, words, bow in rows:
            chunk.append(f"{prob}\t{words}\n" if bow is None else f"{prob}\t{words}\t{bow}\n")
            if len(chunk) >= 65536:
                out.write("".join(chunk))
                chunk.clear()
        out.write("".join(chunk))
        out.write("\n")
    out.write("\\end\\\n")


def iter_entries(path: str | None, declared: dict[int, int] | None = None,
                 numbered_lines: Iterable[tuple[int, str]] | None = None,
                 ) -> Iterator[tuple[int, int, float, list[str], float | None]]:
    """The entries of an ARPA file, checked line by line: ``(n, lineno, log10 prob, n words,
    log10 back-off or None)``, in file order (``.gz`` is decompressed; ``-`` = stdin).

    The one line-by-line ARPA parser: :func:`read_arpa` builds its dicts from it and
    :func:`asrpriv.ngram.packed.read_packed` its arrays (where its vectorized path declines a
    file). Raises :class:`~asrpriv.errors.InputError` with the line number for a missing
    ``\\data\\`` header, bad numbers (NaN too), wrong field counts, n-gram counts that disagree
    with the header, or a missing ``\\end\\``. Duplicates are the caller's to find.
    ``declared``, if given, receives the header's counts (order -> count);
    ``numbered_lines``: the file's ``(line number, line)`` pairs when already being read (a
    pipe is read once). Log-probabilities must be finite and <= 0 (``-99`` is the usual
    "never"), back-off weights finite: ``inf``, ``-inf``, ``1e400`` (read as inf) and ``3.5``
    are refused, since steps that read them would write models other tools refuse.
    """
    from asrpriv.io.lines import iter_lines

    declared = {} if declared is None else declared
    state = "start"  # start -> header -> body -> end
    n = seen = 0
    last_line = 0
    for lineno, line in (iter_lines(path) if numbered_lines is None else numbered_lines):
        last_line = lineno
        if state == "body":
            fields = line.split()
            if not fields:
                continue
            if fields[0][0] == "\\":
                text = line.strip()
                if seen != declared.get(n, -1):
                    raise InputError(path, lineno, f"header declares {declared.get(n)} {n}-grams, "
                                                   f"the section lists {seen}")
                if text == "\\end\\":
                    state = "end"
                    continue
                match = _SECTION.match(text)
                if not match or int(match.group(1)) != n + 1:
                    raise InputError(path, lineno, f"expected \\{n + 1}-grams: or \\end\\, got {text[:40]!r}")
                n, seen = n + 1, 0
                continue
            if len(fields) == n + 1:
                bow = None
            elif len(fields) == n + 2:
                bow = _number(fields[-1], path, lineno, "back-off weight")
            else:
                raise InputError(path, lineno, f"expected a {n}-gram entry (log10 prob, {n} words, "
                                               f"optional back-off), got {len(fields)} fields")
            seen += 1
            prob = _number(fields[0], path, lineno, "log10 probability")
            if prob > 0:
                raise InputError(path, lineno, f"log10 probability {fields[0][:40]!r} > 0 (a "
                                               "probability above 1)")
            yield n, lineno, prob, fields[1:n + 1], bow
        elif state == "start":
            text = line.strip()
            if not text or text.startswith("#"):  # comment lines before \data\ (kenlm/SRILM skip them)
                continue
            if text != "\\data\\":
                raise InputError(path, lineno, "not an ARPA file: expected \\data\\")
            state = "header"
        elif state == "header":
            text = line.strip()
            if not text:
                continue
            match = _COUNT_LINE.match(text)
            if match:
                order = int(match.group(1))
                if order != len(declared) + 1:
                    raise InputError(path, lineno, f"expected 'ngram {len(declared) + 1}=COUNT', got {text!r}")
                declared[order] = int(match.group(2))
                continue
            match = _SECTION.match(text)
            if not match or int(match.group(1)) != 1 or not declared:
                raise InputError(path, lineno, f"expected 'ngram N=COUNT' or \\1-grams:, got {text[:40]!r}")
            state, n, seen = "body", 1, 0
        elif line.strip():  # after \end\
            raise InputError(path, lineno, "text after \\end\\")
    if state == "start":
        raise InputError(path, None, "empty input: expected an ARPA language model")
    if state != "end":
        raise InputError(path, last_line, "unexpected end of file: missing \\end\\")
    if n != len(declared):
        raise InputError(path, last_line, f"header declares {len(declared)} orders, file has {n}")
    if not declared.get(1):
        raise InputError(path, None, "no unigrams")


def read_arpa(path: str | None) -> ArpaModel:
    """Read an ARPA file (``.gz`` is decompressed; ``-`` = stdin) into an :class:`ArpaModel`.

    Malformed content raises :class:`~asrpriv.errors.InputError` with the line number (see
    :func:`iter_entries`), and so does a duplicate n-gram.
    """
    declared: dict[int, int] = {}
    ngrams: list[dict[tuple[str, ...], tuple[float, float | None]]] = []
    for n, lineno, prob, words, bow in iter_entries(path, declared):
        while len(ngrams) < n:
            ngrams.append({})
        table = ngrams[n - 1]
        key = tuple(words)
        if key in table:
            raise InputError(path, lineno, f"duplicate {n}-gram {' '.join(key)!r}")
        table[key] = (prob, bow)
    ngrams += [{} for _ in range(len(declared) - len(ngrams))]  # orders declared with 0 n-grams
    return ArpaModel(ngrams)


def _number(text: str, path, lineno: int, what: str = "number") -> float:
    """A finite number as ARPA files write it (no ``_`` digit groups, no NaN or inf)."""
    try:
        if "_" in text:
            raise ValueError(text)
        value = float(text)
    except ValueError:
        raise InputError(path, lineno, f"{what}: expected a number, got {text[:40]!r}") from None
    if math.isnan(value):
        raise InputError(path, lineno, f"{what}: NaN in an ARPA file")
    if not math.isfinite(value):
        raise InputError(path, lineno, f"{what}: expected a finite number, got {text[:40]!r}")
    return value
