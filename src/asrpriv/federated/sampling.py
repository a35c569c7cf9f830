"""Poisson sampling of a round's clients, as the privacy accountant assumes.

Each client of the population takes part in round t independently with probability q, so the
number of clients per round is Binomial(N, q), not fixed. This is the sampling that
``PoissonSampledDpEvent(q, ...)`` (:mod:`asrpriv.privacy.accounting`) accounts for; a
fixed-size sample without replacement needs a different accountant and is not offered.

The decision for client c in round t reads the uniform u(c, t) and keeps c iff u < q:

- with a seed, u is the first 53 bits of SHA-256("asrpriv-poisson/1", seed, t, c) over 2^53:
  repeatable, independent across rounds and clients, and the same whatever the order or size
  of the clients file (adding a client never changes the others' draws);
- without a seed, u comes from ``os.urandom`` (secure).

Amplification by sampling assumes the adversary does not know who was sampled: keep a seed as
secret as the data (whoever knows it knows every round's cohort).
"""

from __future__ import annotations

import hashlib
import os

SAMPLING_TAG = b"asrpriv-poisson/1"


def inclusion_uniform(seed: int | None, round_index: int, client: str) -> float:
    """The uniform in [0, 1) that decides whether ``client`` takes part in round ``round_index``."""
    if seed is None:
        raw = int.from_bytes(os.urandom(8), "big")
    else:
        message = b"\0".join([SAMPLING_TAG, str(int(seed)).encode(), str(int(round_index)).encode(),
                              client.encode("utf-8")])
        raw = int.from_bytes(hashlib.sha256(message).digest()[:8], "big")
    return (raw >> 11) * (2.0 ** -53)


def poisson_sample(clients: list[str], rate: float, round_index: int,
                   seed: int | None = None) -> list[str]:
    """The clients of round ``round_index``: each kept independently with probability ``rate``.

    Returns them in input order. ``rate`` in (0, 1]; rate 1 keeps everyone.
    """
    if not 0 < rate <= 1:
        raise ValueError(f"sampling rate must be in (0, 1], got {rate!r}")
    if round_index < 0:
        raise ValueError("round must be >= 0")
    return [c for c in clients if inclusion_uniform(seed, round_index, c) < rate]
