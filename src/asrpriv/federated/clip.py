"""L2 norm and clipping of a whole model delta (all parameters as one vector; paper 001 Sec. 2.4).

A client's delta is clipped as one vector over *every* floating parameter, not per tensor:
``D' = D * min(1, C / ||D||_2)``, so that one client moves the server's sum by at most C
(McMahan et al. 2018; the sensitivity that :mod:`asrpriv.federated.aggregate` and the
accountant assume). Norms are computed in float64 over float32 parameters.
"""

from __future__ import annotations

import math

#: coordinates per float64 temporary when measuring a norm (bounded transient memory)
NORM_CHUNK = 1 << 18
#: a clipped delta is brought to norm <= C * (1 - MARGIN), so that any float64 measurement of
#: its norm (summation order changes the last bits) finds it <= C
MARGIN = 1e-9



def check_clip(clip, what: str | None = None) -> float:
    """The one check of a clip bound C (the L2 bound of a client's delta, the sensitivity of
    the Gaussian mechanism): a finite number > 0, else :class:`AsrprivError` naming the
    argument (``what``, default ``clip``). Every step and library function that takes C
    calls it. Returns C as a float."""
    from asrpriv.errors import AsrprivError, arg

    if isinstance(clip, bool) or not isinstance(clip, (int, float)) \
            or not (math.isfinite(clip) and clip > 0):
        raise AsrprivError(f"{what or arg('clip')} must be a finite number > 0, got {clip!r}")
    return float(clip)

def l2_norm(state: dict) -> float:
    """L2 norm of a state dict taken as one vector (all floating tensors), computed in float64."""
    return norm_of_slices(part for tensor in state.values() if tensor.is_floating_point()
                          for part in tensor.reshape(-1).split(NORM_CHUNK))


def norm_of_slices(parts) -> float:
    """L2 norm of the concatenation of ``parts`` (1-D slices of :data:`NORM_CHUNK` values of
    each floating tensor in turn; bounded float64 temporaries), in float64. A finite result
    means every value was finite (squares of float32 values cannot overflow float64)."""
    import torch

    total = 0.0
    for part in parts:
        total += float(torch.linalg.vector_norm(part, dtype=torch.float64)) ** 2
    return math.sqrt(total)


def clip_factor(norm: float, clip: float) -> float:
    """min(1, C / norm): the scale that brings a vector of L2 norm ``norm`` within C."""
    return 1.0 if norm <= clip else clip / norm


def clip_l2(state: dict, clip: float) -> tuple[float, float]:
    """Clip ``state`` (a delta) in place to L2 norm <= ``clip`` over all floating tensors.

    Multiplies every floating tensor by ``min(1, C' / ||state||_2)`` with
    ``C' = C (1 - 1e-9)``: a margin far below any effect on training, so that the result's
    norm is <= C however it is summed in float64 (numpy, torch, ``aggregate``). Scaling
    float32 values rounds each coordinate, which can leave the norm a few ulps above C';
    then the state is scaled once more by ``C' / norm * (1 - 1e-6)``. A delta already within
    C is left unchanged.

    Returns:
        ``(norm before clipping, overall factor applied)`` (factor 1.0: left unchanged).
    """
    check_clip(clip)
    norm = l2_norm(state)
    if not math.isfinite(norm):
        raise ValueError("the delta holds NaN or infinite values")
    if norm <= clip:
        return norm, 1.0
    target = clip * (1.0 - MARGIN)
    factor, applied = target / norm, 1.0
    while factor != 1.0:
        for tensor in state.values():
            if tensor.is_floating_point():
                tensor.mul_(factor)
        applied *= factor
        now = l2_norm(state)
        factor = 1.0 if now <= target else target / now * (1.0 - 1e-6)
    return norm, applied
