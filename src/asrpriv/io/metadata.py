"""``#key=value`` metadata lines of counts and factors files, validated one by one.

Every metadata line is checked when read: it must have the ``#key=value`` shape, a key this
format knows, a key not seen before in the file, and a value in range (see ``VALIDATORS``).
Anything else is an :class:`InputError` naming ``FILE:LINE`` (exit 2): a file whose
metadata cannot be trusted is never half-read, since the metadata calibrates the privacy noise.
"""

from __future__ import annotations

import math
import re
from typing import Callable, Iterable, Iterator

from asrpriv.errors import InputError

COUNTS_FORMATS = ("asrpriv-counts/1", "asrpriv-counts/2")
FACTORS_FORMATS = ("asrpriv-factors/1", "asrpriv-factors/2")
_KEY = re.compile(r"[a-z][a-z0-9_]*\Z")
_PLAIN = re.compile(r"[A-Za-z0-9_.+:/-]{1,200}\Z")


def plain_float(text: str) -> float:
    """``float(text)``, refusing what Python reads but people do not write in data files:
    ``_`` digit groups (``1_0`` is 10 to Python). ValueError otherwise, as ``float``."""
    if "_" in text:
        raise ValueError(f"could not convert string to float: {text!r}")
    return float(text)


def _positive(value: str) -> str | None:
    try:
        number = plain_float(value)
    except ValueError:
        return "expected a number"
    if not math.isfinite(number) or number <= 0:
        return "expected a finite number > 0"
    return None


def _nonnegative_int(value: str) -> str | None:
    if not value.isdigit() or len(value) > 18:
        return "expected a whole number >= 0"
    return None


def _positive_int(value: str) -> str | None:
    return _nonnegative_int(value) or (None if int(value) >= 1 else "expected a whole number >= 1")


def _choice(*allowed: str) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        return None if value in allowed else f"expected one of {', '.join(allowed)}"

    return check


def _plain(value: str) -> str | None:
    return None if _PLAIN.match(value) else "expected a short plain token"


def _partition(value: str) -> str | None:
    from asrpriv.privacy.history import check_partition

    if value == "":
        return "expected partition label(s)"
    try:
        check_partition(value)
    except ValueError as err:
        return str(err)
    return None


def _history(value: str) -> str | None:
    from asrpriv.privacy.history import History

    try:
        History.from_json(value)
    except ValueError as err:
        return f"bad privacy history: {err}"
    return None


def _raw(value: str) -> str | None:
    from asrpriv.privacy.state import StateError, raw_from_json

    try:
        raw_from_json(value)
    except (StateError, ValueError) as err:
        return f"bad private_raw: {err}"
    return None


def _positive_list(value: str) -> str | None:
    for item in value.split(","):
        problem = _positive(item)
        if problem:
            return f"{problem} in a comma-separated list"
    return None


def _zero(value: str) -> str | None:
    return None if value in ("0", "0.0") else "expected 0 (pure DP)"


_COMMON: dict[str, Callable[[str], str | None]] = {
    "version": _plain,
    "privacy_history": _history,
    "seeded": _choice("1"),
    "epsilon": _positive,
    "noise_scales": lambda v: _positive_list(v),
}

COUNTS_KEYS: dict[str, Callable[[str], str | None]] = {
    **_COMMON,
    "format": _choice(*COUNTS_FORMATS),
    "unit": _choice("utterance", "client"),
    "max_l1": _positive,
    "grid": _positive,
    "units": _nonnegative_int,
    "source": _choice("nbest", "text"),
    "sigma": _positive,
    "top": _positive_int,
    "noise": _choice("none", "laplace"),
    "mechanism": _choice("discrete-laplace"),
    "delta": _zero,
    "sensitivity": _positive,
    "sensitivity_source": _choice("max_l1", "override", "max_l1 per utterance",
                                  "max_l1 per client", "max_l1 per unit"),
    "noise_scale": _positive,
    "vocab_size": _positive_int,
    "clamp": _choice("0", "none"),
    "composition": _choice("sequential", "parallel(disjoint units)"),
    "partition": _partition,
    "public": _choice("1"),
}

FACTORS_KEYS: dict[str, Callable[[str], str | None]] = {
    **_COMMON,
    "format": _choice(*FACTORS_FORMATS),
    "alpha": lambda v: _finite(v, 0.0, 1.0),
    "beta": lambda v: _finite(v, 0.0, 1.0),
    "lambda": lambda v: _finite(v, None, None),
    "smoothing": lambda v: _finite(v, 0.0, None),
    "log_base": _choice("e"),
    "private_raw": _raw,
}

#: ``#key=value`` lines that asrpriv writes before an ARPA's ``\\data\\`` (kenlm skips them)
ARPA_KEYS: dict[str, Callable[[str], str | None]] = {
    **_COMMON,
    "format": _choice("asrpriv-arpa-meta/1"),
    "step": _plain,
    "variant": _plain,
    "beta": lambda v: _finite(v, 0.0, None),
    "prior": lambda v: _finite(v, 0.0, None),
    "oov": _plain,
    "marginal": _plain,
    "private_raw": _raw,
}


def _finite(value: str, low: float | None, high: float | None) -> str | None:
    try:
        number = plain_float(value)
    except ValueError:
        return "expected a number"
    if not math.isfinite(number) or (low is not None and number < low) or \
            (high is not None and number > high):
        return "expected a finite number" + (f" in [{low}, {high}]" if low is not None else "")
    return None


def parse_meta_line(path: str | None, lineno: int, line: str, meta: dict[str, str],
                    keys: dict[str, Callable[[str], str | None]]) -> None:
    """Validate one ``#key=value`` line and store it in ``meta``; InputError on anything wrong.

    ``line`` starts with ``#``. A lone ``#`` (blank comment) is allowed and ignored.
    """
    body = line[1:]
    if not body.strip():
        return
    key, sep, value = body.partition("=")
    if not sep or not _KEY.match(key):
        raise InputError(path, lineno, f"malformed metadata line (expected '#key=value'): {_short(line)}")
    if "\t" in value or value != value.strip():
        raise InputError(path, lineno, f"malformed metadata value for {key!r} (tab or surrounding blanks)")
    if key not in keys:
        raise InputError(path, lineno, f"unknown metadata key {key!r}")
    if key in meta:
        raise InputError(path, lineno, f"duplicate metadata key {key!r}")
    problem = keys[key](value)
    if problem:
        raise InputError(path, lineno, f"metadata {key}={_short(value)}: {problem}")
    meta[key] = value


class MetaHeader:
    """The metadata lines at the head of a counts or factors file, read as its lines go by.

    ``old_format``: the format name whose words are not escaped (``asrpriv-counts/1``);
    ``rows``: what the rows are called in messages (``count rows``); ``remake``: the advice
    when an old-format row of a ``#`` word is met; ``format_first``: the format line, if any,
    must be line 1. After :meth:`rows`: ``meta``, the first line of each key (``lines``),
    whether words are ``escaped``, and whether any metadata line was ``seen``.
    """

    def __init__(self, path: str | None, keys: dict[str, Callable[[str], str | None]],
                 old_format: str, rows: str, remake: str, format_first: bool = False) -> None:
        self.path, self.keys, self.old_format = path, keys, old_format
        self.rows_name, self.remake, self.format_first = rows, remake, format_first
        self.meta: dict[str, str] = {}
        self.lines: dict[str, int] = {}
        self.escaped = True
        self.seen = False

    def rows(self, numbered_lines: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
        """The non-blank row lines ``(line number, line)``; metadata lines are validated and kept.

        Each row given must be taken (or refused) by the caller: a metadata line after one is an
        InputError.
        """
        path, meta, lines = self.path, self.meta, self.lines
        have_rows = False
        for lineno, line in numbered_lines:
            if line.startswith("#"):
                if have_rows:
                    raise InputError(path, lineno, f"metadata line after {self.rows_name}")
                if "\t" in line and not self.escaped:
                    raise InputError(path, lineno, f"old-format ({self.old_format}) row of a word "
                                     f"starting with '#' is ambiguous with metadata; {self.remake}")
                parse_meta_line(path, lineno, line, meta, self.keys)
                if "format" in meta and "format" not in lines:
                    if self.format_first and lineno != 1:
                        raise InputError(path, lineno, "the format line must be the first line")
                    self.escaped = meta["format"] != self.old_format
                lines.update((k, lineno) for k in meta if k not in lines)
                self.seen = True
                continue
            if not line.strip():
                continue
            have_rows = True
            yield lineno, line


def check_history_consistency(path: str | None, meta: dict[str, str], lines: dict[str, int]) -> None:
    """Cross-key checks: noise needs a history; epsilon and seeded agree with it."""
    from asrpriv.privacy.history import History

    history = History.from_json(meta["privacy_history"]) if "privacy_history" in meta else History()
    where = lines.get("privacy_history") or lines.get("noise") or lines.get("epsilon")
    if meta.get("noise", "none") != "none" and not history.releases:
        raise InputError(path, lines.get("noise"), "noisy counts without a privacy_history: "
                         "their privacy cost cannot be accounted (made by an older asrpriv, or "
                         "edited); re-run add-noise with this version")
    from asrpriv.privacy.state import check_noise_scales

    problem = check_noise_scales(meta, history)
    if problem:
        raise InputError(path, lines.get("noise_scales") or where,
                         f"the privacy record contradicts itself: {problem} (edited?)")
    if meta.get("format", "").startswith("asrpriv-counts"):
        from asrpriv.privacy.state import check_laplace_record

        problem = check_laplace_record(meta, history)
        if problem:
            raise InputError(path, lines.get("noise") or where,
                             f"the privacy record contradicts itself: {problem} (edited?)")
    if history.seeded != (meta.get("seeded") == "1"):
        raise InputError(path, where or lines.get("seeded"),
                         "the 'seeded' mark disagrees with the privacy_history")
    if "epsilon" in meta:
        try:
            spent = history.epsilon_pure()
        except ValueError as err:
            raise InputError(path, lines.get("epsilon"), f"epsilon recorded but {err}") from None
        if not math.isclose(spent, float(meta["epsilon"]), rel_tol=1e-6):
            raise InputError(path, lines.get("epsilon"),
                             f"epsilon={meta['epsilon']} disagrees with the privacy_history ({spent:.10g})")


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")
