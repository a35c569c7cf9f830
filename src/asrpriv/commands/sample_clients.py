"""``asrpriv sample-clients``: Poisson sampling of one round's clients (rate q)."""

from __future__ import annotations

import click

from asrpriv.errors import AsrprivError, InputError
from asrpriv.options import common_options, info, output_option, seed_option, warn


@click.command("sample-clients")
@click.argument("clients_path", metavar="[CLIENTS]", default="-")
@click.option("--rate", type=float, required=True,
              help="Poisson rate q: each client takes part independently with probability q.")
@click.option("--round", "round_index", type=int, default=None,
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
    from asrpriv.federated.sampling import poisson_sample
    from asrpriv.io.lines import iter_lines
    from asrpriv.io.output import open_output

    if not 0 < rate <= 1:
        raise AsrprivError("--rate must be in (0, 1]")
    if round_index is None and not expected:
        raise AsrprivError("give --round T (or --expected)")
    if round_index is not None and round_index < 0:
        raise AsrprivError("--round must be >= 0")
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
        with open_output(output) as stream:
            stream.write(f"{rate * len(clients):.6g}\n")
        return
    if seed is not None:
        warn("seeded sampling: whoever knows the seed knows every round's cohort (keep it secret)")
    chosen = poisson_sample(clients, rate, round_index, seed)
    with open_output(output) as stream:
        for client in chosen:
            stream.write(client + "\n")
    info(f"sample-clients: round {round_index}: {len(chosen)} of {len(clients)} clients (q {rate:g})")
