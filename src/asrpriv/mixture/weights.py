"""Interpolation weights given on the command line (``--weights 0.3,0.7``); pure Python."""

from __future__ import annotations

import math

from asrpriv.errors import AsrprivError, arg

#: how far the weights' sum may be from 1
SUM_TOLERANCE = 1e-6


def _weights_of_report(path: str, option: str):
    """The weights of an ``interpolate --heldout`` JSON report, as ``w1,w2,...`` (exact), and
    the privacy state it records (weights fitted on private text carry it; a report without
    a ``privacy_state`` reads as NOT private, fail closed). Read once."""
    import json

    from asrpriv.errors import InputError
    from asrpriv.io.lines import iter_lines
    from asrpriv.privacy.state import StateError, raw_state

    text = "\n".join(line for _n, line in iter_lines(path))
    try:
        obj = json.loads(text)
        weights = obj["weights"]
        values = ",".join(repr(float(w)) for w in weights)
    except (ValueError, KeyError, TypeError, RecursionError):
        raise InputError(path, None, f"{option} @FILE: expected the JSON report of "
                         "'interpolate --heldout' (its 'weights' list)") from None
    record = obj.get("privacy_state")
    if not isinstance(record, dict):
        return values, raw_state("unrecorded")
    from asrpriv.provenance import state_from_json

    try:
        return values, state_from_json(record)
    except (StateError, ValueError, KeyError, TypeError) as err:
        raise InputError(path, None, f"{option} @FILE: bad privacy_state: {err}") from None


def parse_weights(text: str | None, count: int, option: str | None = None) -> list[float]:
    """:func:`weights_with_state` without the state (scoring steps that write no artifact)."""
    return weights_with_state(text, count, option)[0]


def weights_with_state(text: str | None, count: int, option: str | None = None):
    """``(weights, privacy state)``: numbers typed on the command line are public; ``@FILE``
    brings the state its report records."""
    from asrpriv.privacy.state import PUBLIC

    option = option or arg("weights")
    state = PUBLIC
    if text is not None and str(text).startswith("@"):
        text, state = _weights_of_report(str(text)[1:], option)
    return _parse(text, count, option), state


def _parse(text: str | None, count: int, option: str) -> list[float]:
    """The ``count`` comma-separated weights of ``text``, checked: finite, >= 0, sum 1.

    ``@FILE``: the weights of the JSON report that ``interpolate --heldout`` printed.

    ``None`` is allowed only for one LM (weight 1). Raises :class:`AsrprivError` (exit 2)
    with a one-line message otherwise. ``option`` names the argument (default: ``weights``).
    """
    option = option or arg("weights")
    if text is None:
        if count == 1:
            return [1.0]
        raise AsrprivError(f"{count} LMs need {option} W1,W2,... (one weight per LM, summing to 1)")
    parts = [p.strip() for p in str(text).split(",")]
    try:
        values = [float(p) for p in parts]
        if any("_" in p for p in parts):
            raise ValueError(text)
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


def split_mixture(weights: list[float]) -> tuple[list[float], float]:
    """Weights of a linear mixture of n-grams and one NNLM (last) -> (the n-grams' weights
    renormalized to sum 1, the NNLM's weight): how rescore-nbest approximates the linear
    mixture of paper 003 Eq. 3 by an n-gram mixture and a log-linear NNLM share w."""
    ngram = weights[:-1]
    total = sum(ngram)
    if not total > 0:
        raise AsrprivError(f"{arg('mixture_weights')}: the n-gram weights sum to 0")
    return [w / total for w in ngram], weights[-1]
