"""``asrpriv privacy-report``: epsilon at delta of a file's privacy history, or of (z, q, T)."""

from __future__ import annotations

import click

from asrpriv.commands.options import FiniteFloat, WholeNumber, common_options


@click.command("privacy-report")
@click.argument("file", required=False, metavar="[FILE]")
@click.option("--noise-multiplier", type=FiniteFloat(), default=None, help="z (without FILE).")
@click.option("--sample-rate", type=FiniteFloat(), default=None, help="Poisson sampling rate q (without FILE).")
@click.option("--rounds", type=WholeNumber(), default=None, help="Number of rounds T (without FILE).")
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
    from asrpriv.privacy.report import PrivacyReportSettings, privacy_report as run

    report = run(PrivacyReportSettings(file, noise_multiplier, sample_rate, rounds, delta,
                                       as_json, require_dp))
    click.echo(report.text, nl=False)
    if report.exit_code:
        click.echo(report.refusal, err=True)
        raise SystemExit(report.exit_code)
