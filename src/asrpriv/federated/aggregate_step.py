"""The ``aggregate`` step: one entry that sums counts files or runs one server round on
model deltas (paper 000 Eq. 6; paper 001 Eq. 5-8 with optional client-level DP).

:func:`aggregate` takes :class:`AggregateSettings` and dispatches: model deltas (a server
or model given, or inputs that are torch files, ``@LISTFILE`` or directories: decided from
the first bytes, without importing torch) go to :func:`asrpriv.federated.aggregate.run_round`,
counts to :func:`asrpriv.unigram.aggregate.aggregate_to_file`. The mode rules, the settings'
checks and what the step says live here; the click command only builds the settings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Sequence

from asrpriv.errors import AsrprivError, arg


@dataclass
class AggregateSettings:
    """The settings of ``aggregate`` (both modes; the CLI's options, named as arguments).

    Attributes:
        inputs: counts files (``-`` or none: stdin), or deltas (files, @LISTFILE, directories).
        output: the summed counts (``-``: stdout), or the new model (a file).
        disjoint, allow_empty: counts mode (see ``aggregate --help``).
        server: ``fedavg``/``fedadam`` (deltas); model: the model the deltas apply to; state:
            the server optimizer's state file; server_lr, beta1, beta2, eps: its settings.
        noise_multiplier, clip, expected_clients, expected_weight, weight_cap, sample_rate:
            client-level DP of the round (docs/FEDERATED.md).
        cohort: deltas mode: the round's sampled client ids (sample-clients' output); every
            delta must name one of them as its client label, none twice.
        aggregate_out: also write the aggregated delta here; seed: seeded (NOT private) noise.
        allow_seeded: accept inputs made with seeded test noise; debug_private: also say the
            un-noised numbers.
    """

    inputs: Sequence[str] = ()
    output: str = "-"
    disjoint: bool = False
    allow_empty: bool = False
    server: str | None = None
    model: str | None = None
    state: str | None = None
    server_lr: float | None = None
    beta1: float | None = None
    beta2: float | None = None
    eps: float | None = None
    noise_multiplier: float | None = None
    clip: float | None = None
    expected_clients: float | None = None
    expected_weight: float | None = None
    weight_cap: float | None = None
    sample_rate: float | None = None
    cohort: str | None = None
    aggregate_out: str | None = None
    seed: int | None = None
    allow_seeded: bool = False
    debug_private: bool = False


@dataclass
class AggregateResult:
    """What ``aggregate`` did: the mode, the server round's report (deltas mode), and what
    it says on stderr (``notes``) and warns about (``warnings``)."""

    mode: str  # "counts" or "deltas"
    round: object | None = None  # asrpriv.federated.aggregate's round report
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def is_delta_mode(inputs: Sequence[str]) -> bool:
    """Model deltas (torch zip or pickle files, @LISTFILE, directories) rather than counts.

    Decided from the first bytes (no torch import: counts mode stays a light step).
    """
    from asrpriv.io.sniff import is_torch_file

    for arg in inputs:
        if arg.startswith("@") or os.path.isdir(arg):
            return True
        if arg != "-" and os.path.isfile(arg) and is_torch_file(arg):
            return True
    return False


def aggregate(s: AggregateSettings, progress: Callable | None = None,
              seeded_warning: Callable[[str], None] | None = None) -> AggregateResult:
    """The step ``aggregate`` (see the module docstring).

    Args:
        progress: ``progress(total) -> meter`` over the deltas (deltas mode).
        seeded_warning: says that seeded noise is NOT private (printed even when quiet);
            default :func:`asrpriv.talk.seeded_warning`.
    """
    if seeded_warning is None:
        from asrpriv.talk import seeded_warning
    delta_mode = s.server is not None or s.model is not None or is_delta_mode(s.inputs)
    if not delta_mode:
        if s.cohort is not None:
            raise AsrprivError(f"{arg('cohort')} applies to model deltas, not to counts")
        from asrpriv.unigram.aggregate import aggregate_to_file

        aggregate_to_file(list(s.inputs) or ["-"], s.output, s.disjoint, s.allow_empty,
                          s.allow_seeded)
        return AggregateResult("counts")
    if s.server is None or s.model is None:
        raise AsrprivError(f"model deltas need {arg('server')} fedavg|fedadam and {arg('model')} MODEL")
    if s.disjoint or s.allow_empty:
        raise AsrprivError(f"{arg('disjoint')} and {arg('allow_empty')} apply to counts, not to model deltas")
    if not s.inputs:
        raise AsrprivError("no delta given")
    if s.output == "-":
        raise AsrprivError("model deltas: give the new model as -o FILE")
    from asrpriv.federated.aggregate import DpSettings, run_round

    dp = DpSettings(s.noise_multiplier, s.clip, s.expected_clients, s.expected_weight,
                    s.weight_cap, s.sample_rate)
    if s.seed is not None and s.noise_multiplier:
        seeded_warning(f"--seed {s.seed}")
    report = run_round(s.model, list(s.inputs), s.output, s.server,
                       {"lr": s.server_lr, "beta1": s.beta1, "beta2": s.beta2, "eps": s.eps},
                       s.state, dp, s.seed, s.allow_seeded, s.aggregate_out, progress=progress,
                       cohort=s.cohort)
    result = AggregateResult("deltas", report)
    if dp.active and s.noise_multiplier == 0:
        result.warnings.append(
            "--noise-multiplier 0: clipped, capped, fixed-denominator average WITHOUT noise "
            "(no differential privacy; no release recorded)")
    if report.unclipped_by_client:
        exceeded = f" ({report.clipped_here} exceeded it)" if s.debug_private else ""
        result.warnings.append(
            f"{report.unclipped_by_client} delta(s) were not clipped to {s.clip:g} by their "
            f"client{exceeded}: clipped here. The aggregate is central DP; "
            "those updates were not bounded before they left the client")
    what = f"{report.deltas} delta(s)"
    if dp.active:
        what += (f", clip {s.clip:g}, denominator {report.denominator:g}, noise std on Delta_t "
                 f"{report.noise_std:.4g}")
    elif s.debug_private:  # the clients' exact word total: a statistic of private data
        what += f", {report.total_weight:g} words"
    result.notes.append(f"aggregate: round {report.t} ({s.server}), {what}; model fingerprint "
                        f"{report.fingerprint[:12]}")
    return result
