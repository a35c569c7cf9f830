"""``asrpriv sample-clients``: Poisson sampling of one round's clients (rate q)."""

from __future__ import annotations

import click

from asrpriv.commands.options import (FiniteFloat, WholeNumber, common_options, info, output_option,
                                      seed_option)


@click.command("sample-clients")
@click.argument("clients_path", metavar="[CLIENTS]", default="-")
@click.option("--rate", type=FiniteFloat(), required=True,
              help="Poisson rate q: each client takes part independently with probability q.")
@click.option("--round", "round_index", type=WholeNumber(), default=None,
              help="The round number t (>= 0); each round draws anew. Required unless --expected.")
@click.option("--expected", is_flag=True,
              help="Write q x N instead (the expected cohort size, %.6g: aggregate "
                   "--expected-clients, the fixed DP denominator); no sampling.")
@seed_option("Seed: the same (seed, round, client) always gives the same decision. Keep it "
             "secret: privacy amplification by sampling assumes the cohort is unknown. "
             "Default: os.urandom.")
@output_option
@common_options
def sample_clients(clients_path, rate, round_index, expected, seed, output):
    """Select the clients of one round by Poisson sampling, as the DP accountant assumes.

    CLIENTS: one client id per line (# comments and blank lines skipped). Writes the selected
    ids, one per line, in input order (for finetune-lm --by-client ... --clients LIST). The
    number selected is Binomial(N, q), not fixed: a fixed-size sample would need a different
    accountant. Give the same q to aggregate --sample-rate.
    """
    from asrpriv.federated.sampling import SampleSettings, sample_clients as run

    result = run(SampleSettings(clients=clients_path, rate=rate, round=round_index, seed=seed,
                                expected=expected, output=output))
    if result.summary() is not None:
        info(result.summary())
