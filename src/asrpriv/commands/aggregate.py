"""``asrpriv aggregate``: sum counts files (paper 000, Eq. 6)."""

from __future__ import annotations

import click

from asrpriv.options import common_options, output_option


@click.command("aggregate")
@click.argument("inputs", nargs=-1, metavar="[COUNTS]...")
@click.option("--disjoint", is_flag=True,
              help="The inputs come from disjoint data (e.g. different rounds' new utterances), "
                   "so their privacy histories compose in parallel (epsilon = the maximum). "
                   "Refused unless the files prove it: each records a partition "
                   "(count-unigrams --partition), no two overlap, no release occurs twice. "
                   "Default: sequential composition (epsilons add up).")
@click.option("--allow-empty", is_flag=True, help="Accept counts files without any count row.")
@click.option("--allow-seeded-test-noise", "allow_seeded", is_flag=True,
              help="Tests only: accept inputs that carry seeded (not private) noise.")
@output_option
@common_options
def aggregate(inputs, disjoint, allow_empty, allow_seeded, output):
    """Sum counts files ('-' or none = stdin).

    The FedAvg of unigram distributions weighted by their pseudo-count totals (000 Eq. 6) is
    exactly the sum of the counts. Summing is associative and commutative, so batch jobs can
    reduce in a tree. Files with different units, bounds or noise state are refused.
    """
    from asrpriv.unigram.aggregate import aggregate_files
    from asrpriv.io.counts import write_counts
    from asrpriv.io.output import open_output

    meta, counts = aggregate_files(list(inputs) or ["-"], disjoint, allow_empty, allow_seeded)
    with open_output(output) as stream:
        write_counts(stream, meta, counts)
