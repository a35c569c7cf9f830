"""add-noise on counts (the Laplace mechanism, paper 000 Eq. 8-9): the step's library half.

:func:`add_noise_counts` is the entry of ``add-noise --mechanism laplace`` (CLI and API);
the Gaussian mechanism on a model delta is :func:`asrpriv.federated.local_noise.noise_delta_file`.
The mechanism itself is :func:`asrpriv.privacy.counts_mechanism.laplace_counts`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from asrpriv.errors import AsrprivError


@dataclass
class LaplaceSettings:
    """``add-noise --mechanism laplace``: ``epsilon`` (> 0, pure DP) and ``sensitivity`` (L1
    override; None = the recorded ``max_l1``) are exact decimals or fractions (str) or floats;
    ``vocab`` is the public word list or counts file; ``seed`` None = the OS's secure source.
    ``output``: the noisy counts file (``-`` = stdout, None = write nothing)."""

    input: str = "-"
    epsilon: str | float | None = None
    vocab: str | None = None
    sensitivity: str | float | None = None
    clamp: bool = True
    seed: int | None = None
    allow_seeded: bool = False
    output: str | None = "-"


@dataclass
class LaplaceResult:
    """The release: its metadata and counts, the input's metadata, and the mechanism's
    report (:class:`asrpriv.privacy.counts_mechanism.NoiseReport`: scale, sensitivity and
    its source, dropped words)."""

    meta: dict[str, str]
    counts: dict[str, float]
    input_meta: dict[str, str]
    epsilon: Fraction
    report: object


def laplace_release(meta: dict[str, str], counts: dict[str, float], vocab: list[str],
                    epsilon: Fraction, seed: int | None, sensitivity: Fraction | None = None,
                    clamp: bool = True, allow_seeded: bool = False,
                    name: str = "counts") -> tuple[dict[str, str], dict[str, float], object]:
    """One Laplace release of in-memory counts over ``vocab`` (``name`` names them in errors):
    refuses seeded inputs unless ``allow_seeded``; returns (metadata, noisy counts, report)."""
    from asrpriv.privacy.counts_mechanism import laplace_counts
    from asrpriv.privacy.randomness import noise_rng
    from asrpriv.unigram.meta import refuse_seeded

    refuse_seeded(name, meta, allow_seeded)
    return laplace_counts(meta, counts, vocab, epsilon, noise_rng(seed), sensitivity,
                          clamp=clamp, seeded=seed is not None)


def add_noise_counts(s: LaplaceSettings) -> LaplaceResult:
    """The step ``add-noise --mechanism laplace``: read counts and the public vocabulary, add
    discrete Laplace noise of scale sensitivity/epsilon to every vocabulary word, append the
    release to the privacy history, write ``output``."""
    from asrpriv.io.counts import read_counts, read_wordlist, write_counts
    from asrpriv.io.output import open_output
    from asrpriv.privacy.counts_mechanism import exact_fraction
    from asrpriv.talk import seeded_warning
    from asrpriv.unigram.meta import refuse_seeded

    if s.epsilon is None or s.vocab is None:
        raise AsrprivError("--mechanism laplace needs --epsilon and --vocab")
    eps = exact_fraction(str(s.epsilon), "--epsilon")
    sens = exact_fraction(str(s.sensitivity), "--sensitivity") if s.sensitivity is not None else None
    if s.seed is not None:
        seeded_warning(f"--seed {s.seed}")
    meta, counts = read_counts(s.input)
    name = s.input if s.input != "-" else "<stdin>"
    refuse_seeded(name, meta, s.allow_seeded)
    vocab = read_wordlist(s.vocab)
    new_meta, noisy, report = laplace_release(meta, counts, vocab, eps, s.seed, sens, s.clamp,
                                              True, name)
    if s.output is not None:
        with open_output(s.output) as stream:
            write_counts(stream, new_meta, noisy)
    return LaplaceResult(new_meta, noisy, meta, eps, report)
