"""``asrpriv privacy-report``: epsilon at delta of a file's privacy history, or of (z, q, T)."""

from __future__ import annotations

import json

import click

from asrpriv.errors import AsrprivError
from asrpriv.commands.options import FiniteFloat, common_options


@click.command("privacy-report")
@click.argument("file", required=False, metavar="[FILE]")
@click.option("--noise-multiplier", type=FiniteFloat(), default=None, help="z (without FILE).")
@click.option("--sample-rate", type=FiniteFloat(), default=None, help="Poisson sampling rate q (without FILE).")
@click.option("--rounds", type=int, default=None, help="Number of rounds T (without FILE).")
@click.option("--delta", type=FiniteFloat(), default=1e-5, show_default=True,
              help="The delta at which epsilon is reported.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--require-dp", is_flag=True,
              help="Exit 3 unless FILE is differentially private (every private input went "
                   "through a secure DP release): for batch jobs that must not release a "
                   "non-private file.")
@common_options
def privacy_report(file, noise_multiplier, sample_rate, rounds, delta, as_json, require_dp):
    """Epsilon at --delta by RDP and PLD accountants (dp-accounting), for a file or for (z, q, T).

    \b
    FILE (counts, factors, model, delta, ARPA, report): its privacy STATE first, in words --
    public, NOT private (un-noised private data, or seeded test noise), mixed (DP releases
    plus un-noised data: no guarantee for that data's owners), or differentially private --
    then its privacy history (every DP release the file depends on) and the total epsilon
    (Laplace releases as LaplaceDpEvent(1/eps), Gaussian rounds as Poisson-subsampled
    Gaussians, composed as the history says). An empty history means no noise was
    released: no guarantee, never "epsilon 0". --require-dp exits 3 unless the file is DP.
    --noise-multiplier Z --sample-rate Q --rounds T: T rounds of the Poisson-subsampled
    Gaussian mechanism (paper 001: q 0.01, T 1000, delta 1e-5).
    RDP uses dp-accounting's default orders; PLD a discretization of 1e-4. Paper 001 prints
    248.6 / 14.2 / 0.9 for z = 0.2 / 0.5 / 1.5; the accountants give 253.0 / 15.47 / 1.013 (RDP)
    and 228.7 / 13.36 / 0.918 (PLD): see docs/FEDERATED.md.
    """
    from asrpriv.privacy import accounting

    params = (noise_multiplier, sample_rate, rounds)
    if file is None:
        if any(p is None for p in params):
            raise AsrprivError("give FILE, or --noise-multiplier, --sample-rate and --rounds")
        try:
            result = accounting.gaussian_epsilons(noise_multiplier, sample_rate, rounds, delta)
        except ValueError as err:
            raise AsrprivError(str(err)) from None
        if as_json:
            click.echo(json.dumps(result, sort_keys=True))
        else:
            click.echo(f"Poisson-subsampled Gaussian: z={noise_multiplier:g} q={sample_rate:g} "
                       f"T={rounds}: epsilon {result['epsilon_rdp']:.4g} by RDP (order "
                       f"{result['rdp_order']:g}), {result['epsilon_pld']:.4g} by PLD, "
                       f"at delta {delta:g}")
        return
    if any(p is not None for p in params):
        raise AsrprivError("--noise-multiplier/--sample-rate/--rounds are for the form without FILE")
    from asrpriv.errors import InputError, one_line
    from asrpriv.provenance import read_state

    try:
        kind, state = read_state(file)
    except InputError as err:  # damaged or contradictory: never "public", never DP
        if not require_dp:
            raise
        click.echo(f"asrpriv privacy-report: --require-dp: {one_line(str(err))} (unreadable "
                   "privacy record: NOT private)", err=True)
        raise SystemExit(3) from None
    history = state.history
    total = None
    if history.releases:
        try:
            total = accounting.history_epsilon(history, delta)
        except ValueError as err:
            raise AsrprivError(str(err)) from None
    if as_json:
        record = json.loads(history.to_json())
        obj = {"file": file, "kind": kind, "state": state.kind, "is_dp": state.is_dp,
               "state_words": state.words(),
               "private_raw": [p.to_dict() for p in sorted(state.raw)],
               "releases": record["releases"], "tree": record["tree"], "seeded": history.seeded}
        if total is not None:
            obj.update(total.as_dict())
        click.echo(json.dumps(obj, sort_keys=True))
        _require(require_dp, state)
        return
    click.echo(f"{file} ({kind}): {state.words()}")
    if not history.releases:
        _require(require_dp, state)
        return
    click.echo(f"  {len(history)} DP release(s)" + (" -- SEEDED test noise, NOT private"
                                                      if history.seeded else ""))
    for release in history.releases:
        click.echo("  " + accounting.describe_release(release))
    if history.tree is not None:
        click.echo(f"  composition: {json.loads(history.to_json())['tree']}")
    if total.error:
        click.echo(f"total: undefined ({total.error})")
        for unit in sorted(history.units()):  # each unit's releases accounted alone
            alone = accounting.history_epsilon(history.restricted(unit), delta)
            if not alone.error:
                click.echo(f"  the releases per {unit} alone: epsilon {alone.epsilon_rdp:.4g} "
                           f"(RDP) at delta {delta:g}"
                           + (f", {alone.epsilon_pure:.6g} (pure DP)"
                              if alone.epsilon_pure is not None else "")
                           + " -- NOT a guarantee for the file")
        _require(require_dp, state)
        return
    scope = "" if state.is_dp else ("of the releases only (the un-noised data above has no "
                                    "guarantee) " if state.raw else "as recorded (seeded: NOT private) ")
    line = (f"total {scope}at delta {delta:g}: epsilon {total.epsilon_rdp:.4g} (RDP), "
            f"{total.epsilon_pld:.4g} (PLD)")
    if total.epsilon_pure is not None:
        line += f", {total.epsilon_pure:.6g} (pure DP, delta 0)"
    click.echo(line)
    if total.pld_note:
        click.echo(f"  note: {total.pld_note}")
    _require(require_dp, state)


def _require(require_dp: bool, state) -> None:
    """--require-dp: exit 3 (stderr says why) unless the file is DP."""
    if require_dp and not state.is_dp:
        click.echo(f"asrpriv privacy-report: --require-dp: the file is not differentially private "
                   f"({state.kind})", err=True)
        raise SystemExit(3)
