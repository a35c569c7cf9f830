"""The one seed-derivation rule of repeatable multi-round runs (tests only: seeded noise is
NOT private; without a seed every draw comes from the OS's secure source).

From one base seed ``S`` every round ``t`` of noise draw ``d`` (0 <= d < 100; 0 <= t < 1000
for d > 0, t < 100000 for the single draw d = 0) gets its own seed::

    seed(S, t, d) = S * 100000 + d * 1000 + t

so that rounds and draws never share a seed, and a run with base ``S`` never meets a run with
another base. Used by FMP's rounds (``fmp-rounds``/``fl-fmp``: the noise of round t), the
Flower rounds (``fl-simulate``: client training and server noise of round t) and, written
in shell arithmetic with the same strides, by the recipes (``bin/fl-finetune-experiment``:
``SEED * 100000 + t``, ``NOISE_SEED * 100000 + draw * 1000 + t``; ``bin/leakage-audit``).
"""

from __future__ import annotations

from asrpriv.errors import AsrprivError

#: the base seed's stride (room for 100 draws of 1000 rounds)
BASE_STRIDE = 100000
#: a draw's stride within a base
DRAW_STRIDE = 1000


def derive_seed(base: int | None, t: int, draw: int = 0) -> int | None:
    """``base * 100000 + draw * 1000 + t``: the seed of round ``t`` of draw ``draw``; None
    (the OS's secure source) when ``base`` is None."""
    if base is None:
        return None
    # one draw (draw 0) may run up to 99,999 rounds (paper 001's 1,000 included); runs with
    # several draws keep each draw's rounds below 1000, so that no two share a seed
    limit = BASE_STRIDE if draw == 0 else DRAW_STRIDE
    if not 0 <= t < limit or not 0 <= draw < BASE_STRIDE // DRAW_STRIDE:
        raise AsrprivError(f"seeded runs derive one seed per round (< {DRAW_STRIDE} with several "
                           f"draws, < {BASE_STRIDE} with one) and draw "
                           f"(< {BASE_STRIDE // DRAW_STRIDE}); got round {t}, draw {draw}")
    return int(base) * BASE_STRIDE + draw * DRAW_STRIDE + t
