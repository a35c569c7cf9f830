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
from dataclasses import dataclass

from asrpriv.errors import arg

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


@dataclass
class SampleSettings:
    """The settings of ``sample-clients``: ``clients`` (a file of client ids, one per line),
    the Poisson ``rate`` q in (0, 1], the ``round`` T (its cohort), ``seed`` (tests only:
    whoever knows it knows every cohort; None: the OS's secure source), ``expected``: write
    q x N instead of sampling; ``output`` (``-``: stdout, None: write nothing)."""

    clients: str = "-"
    rate: float = 0.1
    round: int | None = 0
    seed: int | None = None
    expected: bool = False
    output: str | None = "-"


@dataclass
class SampleResult:
    """Every client and the chosen ones, both in input order (none with ``expected``)."""

    clients: list[str]
    chosen: list[str]
    settings: SampleSettings

    def summary(self) -> str | None:
        """The line ``sample-clients`` says on stderr (None with ``expected``)."""
        s = self.settings
        if s.expected:
            return None
        return (f"sample-clients: round {s.round}: {len(self.chosen)} of {len(self.clients)} "
                f"clients (q {s.rate:g})")


def sample_clients(s: SampleSettings) -> SampleResult:
    """The step ``sample-clients`` (:func:`sample_client_file` does the work)."""
    clients, chosen = sample_client_file(s.clients, s.rate, s.round, s.seed, s.output, s.expected)
    return SampleResult(clients, chosen, s)


def sample_client_file(clients_path: str, rate: float, round_index: int | None = 0,
                       seed: int | None = None, output: str | None = "-",
                       expected: bool = False) -> tuple[list[str], list[str]]:
    """Read client ids (one per line; ``#`` comments and blank
    lines skipped, a repeated id refused with FILE:LINE), Poisson-sample them with rate
    ``rate`` in (0, 1] for round ``round_index``, write the chosen ids to ``output`` (None:
    write nothing). Returns (all clients, chosen clients), both in input order.
    ``expected``: write q x N instead (the expected cohort size: aggregate's fixed DP
    denominator); no sampling, nothing chosen."""
    from asrpriv.errors import AsrprivError, InputError
    from asrpriv.io.lines import iter_lines
    from asrpriv.io.output import open_output

    from asrpriv.privacy.accounting import check_sample_rate

    check_sample_rate(rate, arg("rate"))
    if round_index is None and not expected:
        raise AsrprivError(f"give {arg('round')} T (or {arg('expected')})")
    if round_index is not None and round_index < 0:
        raise AsrprivError(f"{arg('round')} must be >= 0")
    clients: list[str] = []
    seen: dict[str, int] = {}
    for lineno, line in iter_lines(clients_path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if len(line.split()) != 1:
            raise InputError(clients_path, lineno, "expected one client id per line")
        if line in seen:
            raise InputError(clients_path, lineno, f"client {line!r} repeats line {seen[line]}")
        seen[line] = lineno
        clients.append(line)
    if not clients:
        raise InputError(clients_path, None, "no client ids")
    if expected:
        if output is not None:
            with open_output(output) as stream:
                stream.write(f"{rate * len(clients):.6g}\n")
        return clients, []
    if seed is not None:
        from asrpriv.talk import warn

        warn("seeded sampling: whoever knows the seed knows every round's cohort (keep it secret)")
    chosen = poisson_sample(clients, rate, round_index, seed)
    if output is not None:
        with open_output(output) as stream:
            for client in chosen:
                stream.write(client + "\n")
    return clients, chosen
