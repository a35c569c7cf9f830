"""Metadata of counts files: what a privacy mechanism needs, kept consistent across steps.

Keys (all optional except ``format``):

- ``format``: ``asrpriv-counts/2`` (``/1``: before words were escaped).
- ``unit``: the adjacency unit whose whole contribution is bounded: ``utterance`` or ``client``.
- ``max_l1``: the L1 bound B enforced on each unit's contribution vector (present only when a
  bound was enforced). Under add/remove-one-unit adjacency the L1 sensitivity of the summed
  counts is exactly B.
- ``grid``: counts are integer multiples of this step (exact sums; discrete noise needs it).
- ``units``: how many units contributed (data-dependent; dropped by ``add-noise``).
- ``noise``: ``none`` or ``laplace``; ``epsilon``: total pure-DP epsilon, a summary of the history:
- ``privacy_history``: the JSON of :class:`asrpriv.privacy.history.History`, the ledger
  (every release the counts depend on and how they compose); ``seeded=1`` when a release
  used seeded (not private) noise.
- ``partition``: labels of the disjoint part of the data the counts come from
  (``count-unigrams --partition``); ``public=1``: counts of public text (``--public``).

Every key is validated on read (:mod:`asrpriv.io.metadata`).
"""

from __future__ import annotations

from fractions import Fraction

from asrpriv import __version__
from asrpriv.errors import AsrprivError, arg
from asrpriv.privacy.history import History, check_partition, labels_overlap, partition_string

FORMAT = "asrpriv-counts/2"

#: keys whose values must agree for counts to be summed
MUST_AGREE = ("unit", "max_l1", "grid", "noise")
#: keys describing how counts were made; kept when equal, dropped when they differ
DESCRIPTIVE = ("source", "sigma", "top", "sensitivity", "sensitivity_source", "vocab_size",
               "mechanism")


def base_meta(**items: object) -> dict[str, str]:
    meta = {"format": FORMAT, "version": __version__}
    meta.update({k: str(v) for k, v in items.items() if v is not None})
    return meta


def history_of(meta: dict[str, str]) -> History:
    """The privacy history recorded in (already validated) metadata; empty if none."""
    text = meta.get("privacy_history")
    return History.from_json(text) if text else History()


def with_history(meta: dict[str, str], history: History) -> dict[str, str]:
    """``meta`` of counts with the history, its seeded mark and its epsilon summary set (or
    removed): :func:`asrpriv.privacy.state.to_meta` (counts keep no ``private_raw``: their
    state follows from ``#public``/``#noise``, see :func:`~asrpriv.privacy.state.from_counts_meta`)."""
    from asrpriv.privacy.state import PrivacyState, to_meta

    return to_meta(meta, PrivacyState(history, frozenset()))


def merge(metas: list[tuple[str, dict[str, str]]], disjoint: bool = False) -> dict[str, str]:
    """Merge the metadata of counts files being summed, or refuse to mix incompatible ones.

    Args:
        metas: ``(file name, metadata)`` for each input.
        disjoint: the inputs come from disjoint data (parallel composition). Refused unless
            the files prove it: each records a ``partition``, no two partitions overlap, and no
            release of a privacy history occurs in two inputs.

    **Contribution bounds compose.** Without ``disjoint`` nothing says a unit contributed to
    one input only (two counts files of the same N-best list, each bounded by 20, move by up
    to 40 when one utterance is added): the sum's ``max_l1`` is the *sum* of the inputs'
    bounds, and noise calibrated to it costs what it claims. With ``disjoint`` (proven as
    above) each unit is in one input: the bounds must agree and stay as they are. Inputs
    with a bound and inputs without one (unbounded) are never summed.

    Raises:
        AsrprivError: inputs disagree on unit, bound, grid or noise state, or cannot be
            proven disjoint.
    """
    first_name, first = metas[0]
    for name, meta in metas[1:]:
        for key in MUST_AGREE:
            a, b = first.get(key, "none" if key == "noise" else ""), meta.get(key, "none" if key == "noise" else "")
            if key == "max_l1" and a and b and (not disjoint or
                                                _number(a, name, key) == _number(b, name, key)):
                continue  # summed below (sequential) or equal (disjoint)
            if a != b:
                raise AsrprivError(f"cannot sum counts with different {key}: {first_name} has "
                                   f"{a or '(none)'}, {name} has {b or '(none)'}")
    labels = [check_partition(meta.get("partition", "")) for _, meta in metas]
    if disjoint:
        seen: set[str] = set()
        for (name, _), own in zip(metas, labels):
            if not own:
                raise AsrprivError(f"{arg('disjoint')}: {name} records no partition, so it cannot be "
                                   "proven disjoint from the others; label the data when counting "
                                   f"(count-unigrams --partition NAME), or drop {arg('disjoint')}")
            clash = labels_overlap(own, seen)
            if clash:
                raise AsrprivError(f"{arg('disjoint')}: partition {', '.join(clash)} of {name} overlaps "
                                   f"another input's (the same data twice?); drop {arg('disjoint')} "
                                   "(sequential composition) or give disjoint inputs")
            seen |= own
    try:
        history = History.combine([history_of(meta) for _, meta in metas], disjoint)
    except ValueError as err:
        raise AsrprivError(f"{arg('disjoint')}: {err}; the inputs are not provably disjoint (drop "
                           f"{arg('disjoint')} for sequential composition)") from None
    merged = base_meta()
    for key in MUST_AGREE:
        if first.get(key):
            merged[key] = first[key]
    if "max_l1" in merged and not disjoint and len(metas) > 1:
        merged["max_l1"] = _fmt_up(sum(_number(meta["max_l1"], name, "max_l1")
                                       for name, meta in metas))
    for key in DESCRIPTIVE:
        values = {meta.get(key) for _, meta in metas}
        if len(values) == 1 and None not in values:
            merged[key] = values.pop()
    if all("units" in meta for _, meta in metas):
        merged["units"] = str(sum(int(_number(meta["units"], name, "units")) for name, meta in metas))
    if all(labels):  # the sum saw the union of the parts; one unlabelled part = unknown scope
        merged["partition"] = partition_string(frozenset().union(*labels))
    if all(meta.get("public") == "1" for _, meta in metas):
        merged["public"] = "1"
    if first.get("noise", "none") != "none":
        merged["delta"] = "0"
    return with_history(merged, history)


def _number(text: str, name: str, key: str) -> Fraction:
    """A metadata number, exactly; anything else is a one-line error naming the file."""
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise AsrprivError(f"{name}: metadata {key}: expected a number, got {text!r}") from None


def _fmt_up(value: Fraction) -> str:
    """The shortest decimal of ``value``, rounded up where it is not exact (a bound written
    smaller than it is would under-noise)."""
    import math

    text = repr(float(value))
    while Fraction(text) < value:
        text = repr(math.nextafter(float(text), math.inf))
    return text[:-2] if text.endswith(".0") else text


def _fmt(value: Fraction) -> str:
    return f"{float(value):.10g}"
