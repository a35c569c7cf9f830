"""The ``privacy-report`` step: a file's privacy state and history, or epsilon of (z, q, T).

One library entry (:func:`privacy_report`, typed :class:`PrivacyReportSettings` in, a
:class:`PrivacyReport` out): the mode choice, the report's text and the ``require_dp`` exit
rule live here; the click command prints :attr:`PrivacyReport.text`, says
:attr:`PrivacyReport.refusal` on stderr and exits with :attr:`PrivacyReport.exit_code`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from asrpriv.errors import AsrprivError, arg

#: exit status of ``require_dp`` on a file that is not differentially private
EXIT_NOT_DP = 3


@dataclass
class PrivacyReportSettings:
    """The settings of ``privacy-report``.

    Attributes:
        file: the file whose state and history are reported; None for the (z, q, T) form.
        noise_multiplier, sample_rate, rounds: z, q and T of the form without a file.
        delta: the delta at which epsilon is reported.
        as_json: one JSON object instead of the lines in words.
        require_dp: the result's exit code is 3 unless the file is differentially private.
    """

    file: str | None = None
    noise_multiplier: float | None = None
    sample_rate: float | None = None
    rounds: int | None = None
    delta: float = 1e-5
    as_json: bool = False
    require_dp: bool = False


@dataclass
class PrivacyReport:
    """What ``privacy-report`` says: its stdout lines, the accountants' numbers
    (``epsilons``: the JSON object's fields), and the exit rule's outcome."""

    lines: list[str] = field(default_factory=list)
    epsilons: dict = field(default_factory=dict)
    exit_code: int = 0
    refusal: str | None = None  # the stderr line when exit_code is 3

    @property
    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)


def privacy_report(s: PrivacyReportSettings) -> PrivacyReport:
    """The step ``privacy-report`` (see the command's help and docs/THREAT_MODEL.md)."""
    from asrpriv.privacy import accounting

    params = (s.noise_multiplier, s.sample_rate, s.rounds)
    if s.file is None:
        if any(p is None for p in params):
            raise AsrprivError(f"give FILE, or {arg('noise_multiplier')}, {arg('sample_rate')} and {arg('rounds')}")
        try:
            result = accounting.gaussian_epsilons(s.noise_multiplier, s.sample_rate, s.rounds,
                                                  s.delta)
        except ValueError as err:
            raise AsrprivError(str(err)) from None
        if s.as_json:
            line = json.dumps(result, sort_keys=True)
        else:
            line = (f"Poisson-subsampled Gaussian: z={s.noise_multiplier:g} q={s.sample_rate:g} "
                    f"T={s.rounds}: epsilon {result['epsilon_rdp']:.4g} by RDP (order "
                    f"{result['rdp_order']:g}), {result['epsilon_pld']:.4g} by PLD, "
                    f"at delta {s.delta:g}")
        return PrivacyReport([line], dict(result))
    if any(p is not None for p in params):
        raise AsrprivError(f"{arg('noise_multiplier')}/{arg('sample_rate')}/{arg('rounds')} are for the form without FILE")
    from asrpriv.errors import InputError, one_line
    from asrpriv.provenance import read_state

    try:
        kind, state = read_state(s.file)
    except InputError as err:  # damaged or contradictory: never "public", never DP
        if not s.require_dp:
            raise
        return PrivacyReport(exit_code=EXIT_NOT_DP,
                             refusal=f"asrpriv privacy-report: --require-dp: {one_line(str(err))} "
                                     "(unreadable privacy record: NOT private)")
    history = state.history
    total = None
    if history.releases:
        try:
            total = accounting.history_epsilon(history, s.delta)
        except ValueError as err:
            raise AsrprivError(str(err)) from None
    report = PrivacyReport()
    if s.require_dp and not state.is_dp:
        report.exit_code = EXIT_NOT_DP
        report.refusal = (f"asrpriv privacy-report: --require-dp: the file is not differentially "
                          f"private ({state.kind})")
    out = report.lines
    if s.as_json:
        record = json.loads(history.to_json())
        obj = {"file": s.file, "kind": kind, "state": state.kind, "is_dp": state.is_dp,
               "state_words": state.words(),
               "private_raw": [p.to_dict() for p in sorted(state.raw)],
               "releases": record["releases"], "tree": record["tree"], "seeded": history.seeded}
        if total is not None:
            obj.update(total.as_dict())
            report.epsilons = total.as_dict()
        out.append(json.dumps(obj, sort_keys=True))
        return report
    out.append(f"{s.file} ({kind}): {state.words()}")
    if not history.releases:
        return report
    out.append(f"  {len(history)} DP release(s)" + (" -- SEEDED test noise, NOT private"
                                                     if history.seeded else ""))
    out.extend("  " + accounting.describe_release(release) for release in history.releases)
    if history.tree is not None:
        out.append(f"  composition: {json.loads(history.to_json())['tree']}")
    if total.error:
        out.append(f"total: undefined ({total.error})")
        for unit in sorted(history.units()):  # each unit's releases accounted alone
            alone = accounting.history_epsilon(history.restricted(unit), s.delta)
            if not alone.error:
                out.append(f"  the releases per {unit} alone: epsilon {alone.epsilon_rdp:.4g} "
                           f"(RDP) at delta {s.delta:g}"
                           + (f", {alone.epsilon_pure:.6g} (pure DP)"
                              if alone.epsilon_pure is not None else "")
                           + " -- NOT a guarantee for the file")
        return report
    report.epsilons = total.as_dict()
    scope = "" if state.is_dp else ("of the releases only (the un-noised data above has no "
                                    "guarantee) " if state.raw else "as recorded (seeded: NOT private) ")
    line = (f"total {scope}at delta {s.delta:g}: epsilon {total.epsilon_rdp:.4g} (RDP), "
            f"{total.epsilon_pld:.4g} (PLD)")
    if total.epsilon_pure is not None:
        line += f", {total.epsilon_pure:.6g} (pure DP, delta 0)"
    out.append(line)
    if total.pld_note:
        out.append(f"  note: {total.pld_note}")
    return report
