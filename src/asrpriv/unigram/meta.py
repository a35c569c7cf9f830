"""Metadata of counts files: what a privacy mechanism needs, kept consistent across steps.

Keys (all optional except ``format``):

- ``format``: ``asrpriv-counts/1``.
- ``unit``: the adjacency unit whose whole contribution is bounded: ``utterance`` or ``client``.
- ``max_l1``: the L1 bound B enforced on each unit's contribution vector (present only when a
  bound was enforced). Under add/remove-one-unit adjacency the L1 sensitivity of the summed
  counts is exactly B.
- ``grid``: counts are integer multiples of this step (exact sums; discrete noise needs it).
- ``units``: how many units contributed (data-dependent; dropped by ``add-noise``).
- ``noise``: ``none`` or ``laplace``; ``epsilon``: total epsilon spent (the ledger);
  ``composition``: how the ledger was combined by ``aggregate``.
"""

from __future__ import annotations

from fractions import Fraction

from asrpriv import __version__
from asrpriv.errors import AsrprivError

FORMAT = "asrpriv-counts/1"

#: keys whose values must agree for counts to be summed
MUST_AGREE = ("unit", "max_l1", "grid", "noise")
#: keys describing how counts were made; kept when equal, dropped when they differ
DESCRIPTIVE = ("source", "sigma", "top", "sensitivity", "sensitivity_source", "vocab_size",
               "mechanism")


def base_meta(**items: object) -> dict[str, str]:
    meta = {"format": FORMAT, "version": __version__}
    meta.update({k: str(v) for k, v in items.items() if v is not None})
    return meta


def merge(metas: list[tuple[str, dict[str, str]]], disjoint: bool = False) -> dict[str, str]:
    """Merge the metadata of counts files being summed, or refuse to mix incompatible ones.

    Args:
        metas: ``(file name, metadata)`` for each input.
        disjoint: the inputs come from disjoint sets of units (parallel composition): the
            merged epsilon is the maximum, not the sum.

    Raises:
        AsrprivError: inputs disagree on unit, bound, grid or noise state.
    """
    first_name, first = metas[0]
    for name, meta in metas[1:]:
        for key in MUST_AGREE:
            a, b = first.get(key, "none" if key == "noise" else ""), meta.get(key, "none" if key == "noise" else "")
            if key == "max_l1" and a and b and _number(a, name, key) == _number(b, name, key):
                continue
            if a != b:
                raise AsrprivError(f"cannot sum counts with different {key}: {first_name} has "
                                   f"{a or '(none)'}, {name} has {b or '(none)'}")
    merged = base_meta()
    for key in MUST_AGREE:
        if first.get(key):
            merged[key] = first[key]
    for key in DESCRIPTIVE:
        values = {meta.get(key) for _, meta in metas}
        if len(values) == 1 and None not in values:
            merged[key] = values.pop()
    if all("units" in meta for _, meta in metas):
        merged["units"] = str(sum(int(_number(meta["units"], name, "units")) for name, meta in metas))
    if first.get("noise", "none") != "none":
        eps = [_number(meta.get("epsilon", ""), name, "epsilon") for name, meta in metas]
        merged["epsilon"] = _fmt(max(eps) if disjoint else sum(eps))
        merged["composition"] = "parallel(disjoint units)" if disjoint else "sequential"
        merged["delta"] = "0"
    return merged


def _number(text: str, name: str, key: str) -> Fraction:
    """A metadata number, exactly; anything else is a one-line error naming the file."""
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise AsrprivError(f"{name}: metadata {key}: expected a number, got {text!r}") from None


def _fmt(value: Fraction) -> str:
    return f"{float(value):.10g}"
