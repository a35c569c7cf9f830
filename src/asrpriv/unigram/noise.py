"""The Laplace mechanism on a counts vector over a public vocabulary (paper 000, Eq. 8-9).

Design decisions (where the paper is vague or wrong):

- **Sensitivity from enforced bounds.** The paper takes sensitivity 1 by assuming a word occurs at
  most once per utterance. A unit (utterance or client) in fact contributes a whole vector of
  kernel-weighted counts; ``count-unigrams --max-l1 B`` clips that vector to L1 norm B, so under
  add/remove-one-unit adjacency the L1 sensitivity of the summed counts is exactly B. It is read
  from the metadata, never assumed; an explicit override is recorded as such, and refused
  when below the recorded bound (it would under-noise).
- **The whole public vocabulary.** Noise is added to every word of a public vocabulary, zero
  counts included, so the set of output keys never depends on the private data. Input words
  outside it are dropped (their number and mass are private: reported on stderr only with
  ``--debug-private-stats``).
- **Post-processing only after noise.** Negative noisy counts clamp to 0; the normalizer of
  Eq. (8) is the sum of the noisy counts (the same as the paper's denominator up to the clamp).
  Post-processing costs no privacy.
- **The ledger.** Each call is one release (:class:`asrpriv.privacy.history.Release`, a fresh
  random id) appended to the input's privacy history; ``epsilon`` in the output metadata is
  the history's total (repeated noise adds up).
- **What the output says.** Data-dependent metadata (the number of units) is dropped: only the
  mechanism's public parameters remain.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction

from asrpriv.errors import AsrprivError, arg, display_name
from asrpriv.privacy.laplace import laplace_scale_steps, noisy_counts
from asrpriv.privacy.history import Release, new_release_id
from asrpriv.unigram.meta import base_meta, history_of, with_history


@dataclass
class NoiseReport:
    dropped_words: int
    dropped_mass: float
    scale: float
    sensitivity: Fraction
    sensitivity_source: str


def exact_fraction(text: str, what: str) -> Fraction:
    try:
        if "_" in text:  # Python reads 1_0 as 10; nobody means that
            raise ValueError(text)
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise AsrprivError(f"{what}: expected a number, got {text!r}") from None
    if value and not 1e-300 <= abs(value) <= 1e300:  # beyond floats: the scale would overflow
        raise AsrprivError(f"{what}: {text!r} is out of range (1e-300 to 1e300)")
    return value


def laplace_counts(meta: dict[str, str], counts: dict[str, float], vocab: list[str],
                   epsilon: Fraction, rng: random.Random,
                   sensitivity: Fraction | None = None,
                   clamp: bool = True, seeded: bool = False,
                   name: str | None = None) -> tuple[dict[str, str], dict[str, float], NoiseReport]:
    """Release ``counts`` with epsilon-DP Laplace noise over every word of ``vocab``.

    Args:
        meta: the counts' metadata (must record ``max_l1`` and ``grid`` unless overridden).
        counts: word -> count (integer multiples of the grid).
        vocab: the public vocabulary; the output has exactly these words.
        epsilon: privacy parameter (> 0).
        rng: random source (secure unless seeded, see :mod:`asrpriv.privacy.randomness`).
        sensitivity: explicit L1 sensitivity overriding the metadata's bound.
        clamp: clamp negative noisy counts to 0 (post-processing).
        seeded: ``rng`` is seeded (repeatable, not private): the release is marked so.
        name: the counts' file, named in the messages about them.

    Returns:
        ``(metadata, noisy counts, report)``.
    """
    where = f"{display_name(name)}: " if name is not None else ""
    if epsilon <= 0:
        raise AsrprivError(f"{arg('epsilon')} must be > 0")
    if sensitivity is not None:
        if sensitivity <= 0:
            raise AsrprivError(f"{arg('sensitivity')} must be > 0")
        if "max_l1" in meta and sensitivity < exact_fraction(meta["max_l1"], "max_l1"):
            raise AsrprivError(f"{where}{arg('sensitivity')} {float(sensitivity):g} is below the contribution "
                               f"bound max_l1={meta['max_l1']} the counts record: that would "
                               f"under-noise; drop {arg('sensitivity')} (or give one >= the bound)")
        source = "override"
    else:
        if "max_l1" not in meta:
            raise AsrprivError(f"{where}the counts record no contribution bound (max_l1); make them with "
                               f"'count-unigrams --max-l1 B' or give {arg('sensitivity')} explicitly")
        sensitivity = exact_fraction(meta["max_l1"], "max_l1 in metadata")
        source = f"max_l1 per {meta.get('unit', 'unit')}"
    if "grid" in meta:
        grid = exact_fraction(meta["grid"], "grid in metadata")
    else:  # counts without a grid: put them on the default grid now (exact for bounded counts)
        from asrpriv.unigram.counting import DEFAULT_GRID

        grid = Fraction(DEFAULT_GRID)
    if grid <= 0 or sensitivity <= 0:  # never hand the sampler a zero or negative scale
        raise AsrprivError(f"{where}grid ({grid}) and sensitivity ({sensitivity}) in metadata must be > 0")
    gamma = float(grid)
    steps: list[int] = []
    for word in vocab:
        value = counts.get(word, 0.0)
        k = round(value / gamma)
        if abs(k * gamma - value) > 1e-9 * max(1.0, value) and source != "override":
            # the count itself is not quoted: it is an un-noised statistic of the private input
            raise AsrprivError(f"{where}count of {word!r} is not a multiple of the grid {gamma}; "
                               "the counts were not made by a bounded count-unigrams")
        steps.append(k)
    vocab_set = set(vocab)
    dropped = [w for w in counts if w not in vocab_set]
    scale_steps = laplace_scale_steps(sensitivity, epsilon, grid)
    noisy = noisy_counts(steps, scale_steps, rng)
    out = {w: (max(k, 0) if clamp else k) * gamma for w, k in zip(vocab, noisy)}
    unit = meta.get("unit", "utterance")
    try:
        release = Release(new_release_id(), "laplace", unit,
                          {"epsilon": float(epsilon), "sensitivity_l1": float(sensitivity),
                           "grid": float(grid)}, meta.get("partition", ""), seeded)
    except (ValueError, OverflowError) as err:
        raise AsrprivError(f"cannot record this release: {err}") from None
    history = history_of(meta).add(release)
    new_meta = base_meta(unit=meta.get("unit"), max_l1=meta.get("max_l1"), grid=_f(grid),
                         noise="laplace", mechanism="discrete-laplace", delta=0,
                         sensitivity=_f(sensitivity), sensitivity_source=source,
                         noise_scale=_f(sensitivity / epsilon), vocab_size=len(vocab),
                         clamp="0" if clamp else "none", source=meta.get("source"),
                         sigma=meta.get("sigma"), partition=meta.get("partition"))
    new_meta = with_history(new_meta, history)
    report = NoiseReport(len(dropped), sum(counts[w] for w in dropped), float(sensitivity / epsilon),
                         sensitivity, source)
    return new_meta, out, report


def _f(value: Fraction) -> str:
    return f"{float(value):.10g}"


# ---------------------------------------------------------------------------- the step's entry
# add-noise --mechanism laplace (CLI and API call it); the Gaussian mechanism on a model delta
# is asrpriv.federated.local_noise.noise_delta_file.


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
    report (:class:`NoiseReport`: scale, sensitivity and
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
    from asrpriv.privacy.randomness import noise_rng
    from asrpriv.provenance import Inputs

    Inputs(allow_seeded).add_counts(name, meta)
    return laplace_counts(meta, counts, vocab, epsilon, noise_rng(seed), sensitivity,
                          clamp=clamp, seeded=seed is not None, name=name)


def add_noise_counts(s: LaplaceSettings, seeded_warning=None) -> LaplaceResult:
    """The step ``add-noise --mechanism laplace``: read counts and the public vocabulary, add
    discrete Laplace noise of scale sensitivity/epsilon to every vocabulary word, append the
    release to the privacy history, write ``output``. ``seeded_warning(text)`` says that
    seeded noise is not private (None: :func:`asrpriv.talk.seeded_warning`)."""
    from asrpriv.io.counts import read_counts, read_wordlist, write_counts
    from asrpriv.io.output import open_output
    from asrpriv.provenance import Inputs

    if seeded_warning is None:
        from asrpriv.talk import seeded_warning

    if s.epsilon is None or s.vocab is None:
        missing = [name for name, value in (
            (f"{arg('epsilon')} EPS (the privacy budget of this release)", s.epsilon),
            (f"{arg('vocab')} FILE (the public vocabulary the noise covers)", s.vocab))
            if value is None]
        given = [name for name, value in ((arg("epsilon"), s.epsilon), (arg("vocab"), s.vocab))
                 if value is not None]
        raise AsrprivError(f"{arg('mechanism')} laplace: missing " + " and ".join(missing)
                           + (f" ({given[0]} was given)" if given else ""))
    eps = exact_fraction(str(s.epsilon), arg("epsilon"))
    sens = exact_fraction(str(s.sensitivity), arg("sensitivity")) if s.sensitivity is not None else None
    if s.seed is not None:
        seeded_warning(f"--seed {s.seed}")
    meta, counts = read_counts(s.input)
    name = s.input if s.input != "-" else "<stdin>"
    Inputs(s.allow_seeded).add_counts(s.input, meta)
    vocab = read_wordlist(s.vocab)
    new_meta, noisy, report = laplace_release(meta, counts, vocab, eps, s.seed, sens, s.clamp,
                                              True, name)
    if s.output is not None:
        with open_output(s.output) as stream:
            write_counts(stream, new_meta, noisy)
    return LaplaceResult(new_meta, noisy, meta, eps, report)


def release_counts(meta: dict[str, str], counts: dict[str, float], name: str, vocab_path: str,
                   epsilon: Fraction, seed: int | None = None,
                   sensitivity: Fraction | None = None, clamp: bool = True,
                   allow_seeded: bool = False):
    """:func:`laplace_release` over the public vocabulary read from ``vocab_path`` (a word
    list or a public counts file): (new metadata, noisy counts, report)."""
    from asrpriv.io.counts import read_wordlist

    return laplace_release(meta, counts, read_wordlist(vocab_path), epsilon, seed, sensitivity,
                           clamp, allow_seeded, name)
