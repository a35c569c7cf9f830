"""Interpolation weights given on the command line (``--weights 0.3,0.7``); pure Python."""

from __future__ import annotations

import math

from asrpriv.errors import AsrprivError

#: how far the weights' sum may be from 1
SUM_TOLERANCE = 1e-6


def parse_weights(text: str | None, count: int, option: str = "--weights") -> list[float]:
    """The ``count`` comma-separated weights of ``text``, checked: finite, >= 0, sum 1.

    ``None`` is allowed only for one LM (weight 1). Raises :class:`AsrprivError` (exit 2)
    with a one-line message otherwise.
    """
    if text is None:
        if count == 1:
            return [1.0]
        raise AsrprivError(f"{count} LMs need {option} W1,W2,... (one weight per LM, summing to 1)")
    parts = [p.strip() for p in str(text).split(",")]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise AsrprivError(f"{option}: expected comma-separated numbers, got {text!r}") from None
    if len(values) != count:
        raise AsrprivError(f"{option}: {len(values)} weights for {count} LMs (give one per LM, in order)")
    if any(not math.isfinite(v) or v < 0 for v in values):
        raise AsrprivError(f"{option}: weights must be finite and >= 0, got {text!r}")
    total = math.fsum(values)
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise AsrprivError(f"{option}: weights sum to {total:.9g}, not 1")
    return values
