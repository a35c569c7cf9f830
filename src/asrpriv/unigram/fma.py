"""Marginal adaptation factors for a neural LM (paper 000, Eq. 1-2).

    p'(w|h) = (1/Z(h)) * (g(w) / u(w))^lambda * p(w|h)                        (Eq. 1)
    g(w)    = (1 - alpha - beta) u(w) + alpha qbar(w) + beta q(w)              (Eq. 2)

The factor file holds ``log_factor(w) = lambda * (ln g(w) - ln u(w))`` (natural log) for every
word of the background vocabulary; the normalization Z(h) is left to the rescorer, which knows
the LM's distribution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from asrpriv.errors import AsrprivError, arg


@dataclass
class FmaSettings:
    alpha: float = 0.5
    beta: float = 0.25
    lam: float = 1.0
    smoothing: float = 0.0

    def validate(self, has_global: bool, has_personal: bool) -> None:
        for name, value in (("alpha", self.alpha), ("beta", self.beta), ("lambda", self.lam),
                            ("smoothing", self.smoothing)):
            if not math.isfinite(value) or value < 0:
                raise AsrprivError(f"{arg(name)} must be a finite number >= 0, got {value}")
        if self.alpha + self.beta > 1.0 + 1e-12:
            raise AsrprivError(f"{arg('alpha')} + {arg('beta')} must be <= 1 (got {self.alpha} + {self.beta})")
        if self.alpha > 0 and not has_global:
            raise AsrprivError(f"{arg('alpha')} > 0 needs {arg('global')} (the aggregated counts qbar)")
        if self.beta > 0 and not has_personal:
            raise AsrprivError(f"{arg('beta')} > 0 needs {arg('personal')} (the client's counts q)")


def distribution(counts: dict[str, float], vocab: list[str], smoothing: float = 0.0) -> dict[str, float]:
    """Counts over ``vocab`` normalized to a distribution, with additive smoothing.

    Words outside ``vocab`` are ignored (the distribution lives on the background vocabulary).
    With zero total mass and no smoothing, every probability is 0.
    """
    total = sum(counts.get(w, 0.0) for w in vocab) + smoothing * len(vocab)
    if total <= 0:
        return {w: 0.0 for w in vocab}
    return {w: (counts.get(w, 0.0) + smoothing) / total for w in vocab}


def adaptation_factors(background: dict[str, float], global_counts: dict[str, float] | None,
                       personal: dict[str, float] | None, settings: FmaSettings) -> dict[str, float]:
    """``lambda * ln(g(w)/u(w))`` for every word of the background vocabulary.

    Args:
        background: background unigram counts (u); every count must be > 0.
        global_counts: aggregated counts (qbar), or None.
        personal: the client's counts (q), or None.
        settings: alpha, beta, lambda and the additive smoothing applied to qbar and q.

    Raises:
        AsrprivError: invalid settings, u(w) = 0, or g(w) = 0 (alpha + beta = 1 without smoothing).
    """
    settings.validate(global_counts is not None, personal is not None)
    vocab = list(background)
    zero = [w for w in vocab if background[w] <= 0]
    if zero:
        raise AsrprivError(f"background count is 0 for {len(zero)} word(s) (e.g. {zero[0]!r}): "
                           "u(w) = 0 makes the factor undefined; drop them or smooth the background")
    u = distribution(background, vocab)
    qbar = distribution(global_counts, vocab, settings.smoothing) if global_counts is not None else None
    q = distribution(personal, vocab, settings.smoothing) if personal is not None else None
    w_u = 1.0 - settings.alpha - settings.beta
    factors: dict[str, float] = {}
    bad = 0
    for word in vocab:
        g = w_u * u[word]
        if qbar is not None:
            g += settings.alpha * qbar[word]
        if q is not None:
            g += settings.beta * q[word]
        if g <= 0:
            bad += 1
            continue
        factors[word] = settings.lam * (math.log(g) - math.log(u[word]))
    if bad:
        raise AsrprivError(f"g(w) = 0 for {bad} word(s) (alpha + beta = 1 leaves no background mass): "
                           f"use {arg('smoothing')} > 0 or a smaller alpha + beta")
    return factors


def fma_factors_files(background: str, global_counts: str | None = None,
                      personal: str | None = None, alpha: float = 0.5, beta: float = 0.25,
                      lam: float = 1.0, smoothing: float = 0.0, allow_seeded: bool = False,
                      output: str | None = "-") -> tuple[dict[str, str], dict[str, float]]:
    """The step ``fma-adapt`` in factor mode (paper 000 Eq. 6-8): from counts files u
    (``background``), qbar (``global_counts``) and q (``personal``), the factors
    ``lam * (ln g(w) - ln u(w))`` (natural log) for every background word, written to
    ``output`` (None: not written) with the privacy state of the inputs it uses. Returns
    (metadata, factors). ARPA mode: :func:`asrpriv.ngram.fma_file.adapt_arpa_file`."""
    from asrpriv import __version__
    from asrpriv.io.counts import read_counts
    from asrpriv.io.factors import write_factors
    from asrpriv.io.output import open_output
    from asrpriv.privacy.state import to_meta
    from asrpriv.provenance import Inputs

    settings = FmaSettings(alpha, beta, lam, smoothing)
    settings.validate(global_counts is not None, personal is not None)
    inputs = Inputs(allow_seeded)

    def read(path, allow_empty, used=True):
        meta, counts = read_counts(path, allow_empty=allow_empty)
        if not meta and not counts:  # not even a header: no counts file at all
            from asrpriv.errors import InputError

            raise InputError(path, None, "empty input: expected a counts file (a file without "
                                         "rows still has its #format line)")
        if used:  # a weight of 0 leaves the output independent of the file
            inputs.add_counts(path, meta)
        return counts

    u = read(background, False)
    qbar = read(global_counts, True, alpha > 0) if global_counts else None
    q = read(personal, True, beta > 0) if personal else None
    factors = adaptation_factors(u, qbar, q, settings)
    meta = {"format": "asrpriv-factors/2", "alpha": f"{alpha:g}", "beta": f"{beta:g}",
            "lambda": f"{lam:g}", "smoothing": f"{smoothing:g}", "log_base": "e",
            "version": __version__}
    meta = to_meta(meta, inputs.state(), always_raw=True)
    if output is not None:
        with open_output(output) as stream:
            write_factors(stream, meta, factors)
    return meta, factors


def write_factors_file(background: str, global_path: str | None, personal_path: str | None,
                       settings: FmaSettings, output: str, allow_seeded: bool = False) -> None:
    """:func:`fma_factors_files` with its settings as one :class:`FmaSettings` (the FMP
    round, :mod:`asrpriv.federated.fmp`)."""
    fma_factors_files(background, global_path, personal_path, settings.alpha, settings.beta,
                      settings.lam, settings.smoothing, allow_seeded, output)
