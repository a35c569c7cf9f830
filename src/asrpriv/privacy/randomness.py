"""Where privacy noise gets its random bits.

Without a seed, bits come from the operating system's cryptographically secure source
(``os.urandom`` through :class:`random.SystemRandom`). With a seed, from a seeded Mersenne
Twister: repeatable for tests and debugging, and **not private** (the noise can be recomputed).
"""

from __future__ import annotations

import random


def noise_rng(seed: int | None) -> random.Random:
    """A random source for privacy noise: secure unless ``seed`` is given."""
    if seed is None:
        return random.SystemRandom()
    return random.Random(seed)
