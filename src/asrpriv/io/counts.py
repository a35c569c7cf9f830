"""Counts files: ``#key=value`` metadata lines, then ``word<TAB>count`` rows (float counts).

Format ``asrpriv-counts/2``: words starting with ``#`` or ``\\`` are backslash-escaped.

The metadata records what a privacy mechanism needs to be calibrated (see
:mod:`asrpriv.unigram.meta`): the adjacency unit, its L1 contribution bound, the number of
units, and the privacy ledger of noise already added.
"""

from __future__ import annotations

import math
from typing import IO, Iterable

from asrpriv.errors import AsrprivError, InputError
from asrpriv.io.lines import iter_lines
from asrpriv.io.metadata import COUNTS_KEYS, MetaHeader, check_history_consistency, plain_float
from asrpriv.io.words import escape, is_word, unescape

FORMAT = "asrpriv-counts/2"


def read_counts(path: str | None, allow_empty: bool = False) -> tuple[dict[str, str], dict[str, float]]:
    """Read a counts file: ``(metadata, {word: count})``.

    Metadata lines are validated one by one (:mod:`asrpriv.io.metadata`) and against each
    other (a noisy file needs its privacy history). Words of format ``asrpriv-counts/2`` are
    unescaped (:mod:`asrpriv.io.words`); format ``/1`` (no escaping) is read when unambiguous:
    a ``#`` line holding a tab is a row of a ``#`` word there, and is refused.

    Raises:
        InputError: a malformed line, bad metadata, a duplicate word, a negative or non-finite
            count, or an empty file (unless ``allow_empty``).
    """
    return parse_counts(path, iter_lines(path), allow_empty)


def parse_counts(path: str | None, numbered_lines: Iterable[tuple[int, str]],
                 allow_empty: bool = False) -> tuple[dict[str, str], dict[str, float]]:
    """:func:`read_counts` on already-read ``(line number, line)`` pairs."""
    header = MetaHeader(path, COUNTS_KEYS, "asrpriv-counts/1", "count rows",
                        "recount with this asrpriv", format_first=True)
    meta = header.meta
    counts: dict[str, float] = {}
    for lineno, line in header.rows(numbered_lines):
        escaped = header.escaped
        parts = line.split("\t")
        if len(parts) != 2:
            raise InputError(path, lineno, f"expected 'word<TAB>count', got {len(parts)} tab-separated fields")
        field, raw = parts
        word = unescape(field) if escaped else field
        if word is None or not is_word(word):
            raise InputError(path, lineno, f"bad word {field!r}")
        try:
            value = plain_float(raw)
        except ValueError:
            raise InputError(path, lineno, f"count: expected a number, got {raw!r}") from None
        if not math.isfinite(value) or (value < 0 and meta.get("noise", "none") == "none"):
            # negative counts exist only as unclamped noisy releases (add-noise --no-clamp)
            raise InputError(path, lineno, f"count: expected a finite number >= 0, got {raw!r}")
        if word in counts:
            raise InputError(path, lineno, f"duplicate word {word!r}")
        counts[word] = value
    if not counts and not header.seen and not allow_empty:
        raise InputError(path, None, "empty input: expected a counts file ('word<TAB>count' rows)")
    check_history_consistency(path, meta, header.lines)
    check_bound_mass(path, meta, header.lines, counts)
    return meta, counts


def check_bound_mass(path: str | None, meta: dict[str, str], lines: dict[str, int],
                     counts: dict[str, float]) -> None:
    """Un-noised counts of ``#units`` units, each contributing at most ``#max_l1``, sum to at
    most ``units * max_l1``: a bound lowered below what the counts prove is refused (it would
    calibrate the noise too small). Noisy counts are not checked (their mass is noisy)."""
    if meta.get("noise", "none") != "none" or "max_l1" not in meta or "units" not in meta:
        return
    bound = float(meta["max_l1"]) * int(meta["units"])
    mass = math.fsum(counts.values())
    if mass > bound * (1 + 1e-9) + 1e-9:
        raise InputError(path, lines.get("max_l1"),
                         f"#max_l1={meta['max_l1']} with #units={meta['units']} allows a total "
                         f"count of at most {bound:.10g}, but the counts sum to more: the bound "
                         "does not hold (edited?)")


def write_counts(stream: IO[str], meta: dict[str, str], counts: dict[str, float],
                 sort: bool = True) -> None:
    """Write metadata (format line first) then rows, sorted by word (deterministic, diff-able).

    Words are escaped (:mod:`asrpriv.io.words`). Counts are written exactly (shortest
    round-trip ``repr``), so reading back gives the same floats and grid sums stay exact.
    """
    meta = {"format": FORMAT, **{k: v for k, v in meta.items() if k != "format"}}
    for key, value in meta.items():
        stream.write(f"#{key}={value}\n")
    words = sorted(counts) if sort else list(counts)
    for w in words:
        if not is_word(w):
            raise AsrprivError(f"cannot write the word {w!r}: words have no white space")
    stream.writelines(f"{escape(w)}\t{_fmt(counts[w])}\n" for w in words)


def _fmt(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def read_wordlist(path: str) -> list[str]:
    """A public vocabulary: a plain word list, or a file of asrpriv's whose state is public.

    - A plain word list: one word per line (first white-space field), escaped like counts
      rows (``\\#word``); lines starting with ``#`` are comments. Whoever gives it asserts it
      is public (docs/THREAT_MODEL.md).
    - Any file asrpriv writes is read by its own reader, never as a word list, and its
      privacy state (:mod:`asrpriv.provenance`) must be ``public``: counts of public text
      (``count-unigrams --public``), public factors, or an ARPA LM without a private record
      (its unigrams, ``<s>``/``</s>``/``<unk>`` aside). Anything else (private, mixed or even
      DP counts, factors or LMs, models, reports) is refused: its keys would become the
      release's keys and could reveal words of the private data.

    The file is read once (a pipe works).
    """
    from asrpriv.provenance import read_vocabulary

    return read_vocabulary(path, _plain_wordlist, public_only=True)[0]


def _plain_wordlist(path: str, numbered) -> list[str]:
    """A plain word list (see :func:`read_wordlist`) from its ``(line number, line)`` pairs."""
    words: list[str] = []
    seen: set[str] = set()
    for lineno, line in numbered:
        if line.startswith("#") or not line.strip():
            continue
        field = line.split()[0]
        word = unescape(field)
        if word is None or not is_word(word):
            raise InputError(path, lineno, f"bad word {field!r} (escape a leading '#' or '\\' "
                             "with a backslash)")
        if word in seen:
            raise InputError(path, lineno, f"duplicate word {word!r} in vocabulary")
        seen.add(word)
        words.append(word)
    if not words:
        raise InputError(path, None, "empty vocabulary")
    return words
