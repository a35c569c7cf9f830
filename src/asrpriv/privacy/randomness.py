"""Where privacy noise gets its random bits.

Without a seed, bits come from the operating system's cryptographically secure source
(``os.urandom`` through :class:`random.SystemRandom`). With a seed, from a Mersenne Twister
seeded by a deliberately slow key derivation of the seed (PBKDF2-HMAC-SHA256, 200,000
iterations, ~0.1 s): repeatable for tests and debugging, and **not private** -- whoever knows
or guesses the seed recomputes the noise. The slow derivation only makes a blind search over
small seeds cost minutes instead of seconds; it is no protection. Every seeded release is
marked ``seeded`` in its privacy history and refused by later steps unless told it is a test.

Distinct integers give distinct generators (``--seed 5`` and ``--seed -5`` differ: the seed is
derived from its decimal text, not from its absolute value as ``random.Random(int)`` does).
"""

from __future__ import annotations

import hashlib
import random

#: PBKDF2 iterations of the seed derivation (a seed search pays this per guess)
SEED_ITERATIONS = 200_000


def seeded_state(seed: int) -> int:
    """The 256-bit integer a seeded noise generator starts from."""
    digest = hashlib.pbkdf2_hmac("sha256", str(int(seed)).encode(), b"asrpriv-noise-seed/1",
                                 SEED_ITERATIONS)
    return int.from_bytes(digest, "big")


def noise_rng(seed: int | None) -> random.Random:
    """A random source for privacy noise: secure unless ``seed`` is given."""
    if seed is None:
        return random.SystemRandom()
    return random.Random(seeded_state(seed))
