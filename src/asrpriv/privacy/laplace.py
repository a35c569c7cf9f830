"""Exact discrete Laplace noise on a grid, and the Laplace mechanism for counts.

Why not ``numpy.random.laplace``: the textbook floating-point inverse-CDF sampler leaks the
true value through the low-order bits of its output (Mironov, CCS 2012). Here counts are integer
multiples of a grid step gamma (enforced by ``count-unigrams``' contribution bounding), and the
noise is gamma times an integer drawn from the discrete Laplace distribution

    P(Z = z)  proportional to  exp(-|z| / t),   t = scale / gamma,

with the exact rejection sampler of Canonne, Kamath & Steinke (NeurIPS 2020, Algorithm 2), which
uses only integer arithmetic and uniform integers. Adding it to a query of integer L1 sensitivity
Delta/gamma with t = Delta / (gamma * epsilon) is exactly epsilon-DP (pure DP, delta = 0).
"""

from __future__ import annotations

import random
from fractions import Fraction


def _bernoulli_exp_le1(rng: random.Random, num: int, den: int) -> bool:
    """Bernoulli(exp(-num/den)) for 0 <= num/den <= 1 (CKS 2020, Algorithm 1, first part)."""
    k = 1
    while rng.randrange(den * k) < num:  # Bernoulli(num / (den * k))
        k += 1
    return k % 2 == 1


def bernoulli_exp(rng: random.Random, num: int, den: int) -> bool:
    """Bernoulli(exp(-num/den)) for any num/den >= 0, exactly."""
    while num > den:
        if not _bernoulli_exp_le1(rng, 1, 1):
            return False
        num -= den
    return _bernoulli_exp_le1(rng, num, den)


def discrete_laplace(rng: random.Random, scale: Fraction) -> int:
    """One draw of Z with P(Z = z) proportional to exp(-|z| / scale); scale > 0 rational.

    CKS 2020 Algorithm 2 with scale = t/s for integers s, t >= 1.
    """
    t, s = scale.numerator, scale.denominator
    while True:
        u = rng.randrange(t)
        if not bernoulli_exp(rng, u, t):
            continue
        v = 0
        while bernoulli_exp(rng, 1, 1):
            v += 1
        y = (u + t * v) // s
        negative = rng.getrandbits(1)
        if negative and y == 0:
            continue
        return -y if negative else y


def laplace_scale_steps(sensitivity: Fraction, epsilon: Fraction, grid: Fraction) -> Fraction:
    """Noise scale in grid steps: t = Delta / (gamma * epsilon)."""
    if epsilon <= 0:
        raise ValueError("epsilon must be > 0")
    return sensitivity / (grid * epsilon)


def noisy_counts(counts_in_steps: list[int], scale_steps: Fraction,
                 rng: random.Random) -> list[int]:
    """Add independent discrete Laplace noise (in grid steps) to each integer count."""
    return [c + discrete_laplace(rng, scale_steps) for c in counts_in_steps]
