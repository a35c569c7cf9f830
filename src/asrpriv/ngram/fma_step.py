"""The ``fma-adapt`` step: one entry for its two modes and their defaults.

:func:`fma_adapt` takes :class:`FmaAdaptSettings`. Factor mode (``background`` with
``global_counts``/``personal``; paper 000 Eq. 6-8) writes FMP factors through
:func:`asrpriv.unigram.fma.fma_factors_files`; ARPA mode (``arpa`` with ``adapt``; paper
003 Eq. 1-2) writes the adapted ARPA through :func:`asrpriv.ngram.fma_file.adapt_arpa_file`.
Each mode's default ``beta`` (:data:`DEFAULT_BETA`) and which settings belong to which mode
live here, not in the command.
"""

from __future__ import annotations

from dataclasses import dataclass

from asrpriv.errors import AsrprivError, arg

#: beta when none is given: the personal share in factor mode, the FMA exponent in ARPA mode
DEFAULT_BETA = {"factors": 0.25, "arpa": 0.5}


@dataclass
class FmaAdaptSettings:
    """The settings of ``fma-adapt`` (both modes).

    Attributes:
        arpa: ARPA mode: the background ARPA; adapt: its adaptation counts; reversed_: 003
            Eq. 2 instead of Eq. 1; prior: smoothing of the adaptation unigram; oov_to_unk:
            count adaptation words outside the ARPA as <unk>; precision: digits written.
        background: factor mode: the background counts u (ARPA mode: optional P_B(w));
            global_counts: qbar; personal: q; alpha, lam, smoothing: the factors' settings.
        beta: the personal share (factors) or the exponent (ARPA); None = the mode's default.
        allow_seeded: accept inputs made with seeded test noise; output: ``-`` = stdout.
    """

    arpa: str | None = None
    adapt: str | None = None
    reversed_: bool = False
    prior: float = 0.1
    oov_to_unk: bool = False
    precision: int | None = 7
    background: str | None = None
    global_counts: str | None = None
    personal: str | None = None
    alpha: float = 0.5
    beta: float | None = None
    lam: float = 1.0
    smoothing: float = 0.0
    allow_seeded: bool = False
    output: str | None = "-"

    @property
    def mode(self) -> str:
        return "arpa" if self.arpa is not None else "factors"


@dataclass
class FmaAdaptResult:
    """What ``fma-adapt`` wrote: the mode, the beta it used, and in factor mode the factors'
    metadata and the factors (word -> natural-log factor); None in ARPA mode."""

    mode: str
    beta: float
    meta: dict | None = None
    factors: dict | None = None


def fma_adapt(s: FmaAdaptSettings) -> FmaAdaptResult:
    """The step ``fma-adapt``: the adapted ARPA (ARPA mode) or the factors (factor mode). The
    ARPA given as ``-`` is read from standard input (copied once: it is read twice)."""
    import dataclasses

    from asrpriv.io.lines import stdin_spooled

    with stdin_spooled(s.arpa, streamed=(s.adapt, s.background, s.global_counts,
                                         s.personal)) as (arpa,):
        return _fma_adapt(dataclasses.replace(s, arpa=arpa))


def _fma_adapt(s: FmaAdaptSettings) -> FmaAdaptResult:
    beta = DEFAULT_BETA[s.mode] if s.beta is None else s.beta
    if s.mode == "arpa":
        from asrpriv.ngram.fma_file import adapt_arpa_file

        if s.adapt is None:
            raise AsrprivError(f"{arg('arpa')} needs {arg('adapt')} COUNTS (the adaptation unigram)")
        if s.global_counts is not None or s.personal is not None:
            raise AsrprivError(f"{arg('global_counts')}/{arg('personal')} belong to factor mode; with "
                               f"{arg('arpa')} give {arg('adapt')}")
        adapt_arpa_file(s.arpa, s.adapt, s.output, beta=beta, reversed_=s.reversed_,
                        prior=s.prior, background_path=s.background, oov_to_unk=s.oov_to_unk,
                        precision=s.precision, allow_seeded=s.allow_seeded)
        return FmaAdaptResult("arpa", beta)
    if s.adapt is not None or s.reversed_:
        raise AsrprivError(f"{arg('adapt')} and {arg('reversed_')} need {arg('arpa')} (ARPA mode)")
    if s.background is None:
        raise AsrprivError(f"give {arg('background')} COUNTS (factor mode) or {arg('arpa')} "
                           f"BG.arpa {arg('adapt')} COUNTS (ARPA mode)")
    from asrpriv.unigram.fma import fma_factors_files

    meta, factors = fma_factors_files(s.background, s.global_counts, s.personal, s.alpha, beta,
                                      s.lam, s.smoothing, s.allow_seeded, s.output)
    return FmaAdaptResult("factors", beta, dict(meta), dict(factors))
