"""``asrpriv count-unigrams``: kernel-weighted unigram pseudo-counts (paper 000, Eq. 3-5)."""

from __future__ import annotations

import click

from asrpriv.commands.options import (FiniteFloat, WholeNumber, common_options, info, output_option,
                                      warn)
from asrpriv.io.tokens import HELP as TOKENS_HELP


@click.command("count-unigrams")
@click.argument("input_path", metavar="[INPUT]", default="-")
@click.option("--text", "text_mode", is_flag=True,
              help="INPUT is text (one sentence per line), each word weighing 1: how the "
                   "background unigram u(w) is made from a corpus. Default: an N-best TSV.")
@click.option("--ids", is_flag=True, help="With --text: Kaldi text, the first token is the utterance id.")
@click.option("--sigma", type=FiniteFloat(), default=5.0, show_default=True,
              help="Bandwidth of the rank kernel K(s) = exp(-(rank-1)^2 / (2 sigma^2)) (000 Eq. 3); "
                   "0.1 ~ 1-best only, 100 ~ uniform over the N-best.")
@click.option("--top", type=WholeNumber(min=1), default=None,
              help="Use only the first N hypotheses of each utterance (by rank).")
@click.option("--by-client", "by_client", metavar="DIR", default=None,
              help="Write one counts file per client, DIR/<client>.counts (client from the "
                   "'client' column or --utt2client), instead of one summed file.")
@click.option("--utt2client", metavar="FILE", default=None,
              help="Map utterance id -> client (Kaldi two-column file).")
@click.option("--unit", type=click.Choice(["utterance", "client"]), default="utterance",
              show_default=True, help="The adjacency unit whose whole contribution --max-l1 bounds.")
@click.option("--max-l1", "max_l1", type=FiniteFloat(), default=None,
              help="Clip each unit's contribution vector to this L1 norm (pseudo-counts), and "
                   "record the bound for add-noise. No bound given = none recorded.")
@click.option("--grid", type=FiniteFloat(), default=2.0 ** -10, show_default=True,
              help="With --max-l1: counts are floored onto multiples of this step, so sums are "
                   "exact and the discrete noise of add-noise applies.")
@click.option("--partition", metavar="NAME", default=None,
              help="Label the part of the private data these counts come from (e.g. round0), "
                   "recorded as #partition; with --by-client each file gets NAME/<client>. "
                   "'aggregate --disjoint' composes in parallel only inputs with non-overlapping "
                   "labels: by giving one you assert that no other input labelled differently "
                   "holds the same data.")
@click.option("--public", is_flag=True,
              help="The input is public data (e.g. a background corpus): mark the counts "
                   "#public=1 so 'add-noise --vocab' accepts their words as a public vocabulary.")
@click.option("--debug-private-stats", "debug_private", is_flag=True,
              help="Print the exact number of units and of clipped units on stderr. These are "
                   "un-noised statistics of the private input: debugging only.")
@click.option("--drop-tokens", "drop_tokens", default=None, metavar="SPEC",
              help=TOKENS_HELP + " Default: none.")
@output_option
@common_options
def count_unigrams(input_path, text_mode, ids, sigma, top, by_client, utt2client, unit, max_l1,
                   grid, partition, public, debug_private, drop_tokens, output):
    """Count unigram pseudo-counts from an N-best TSV (default) or text (--text).

    Each hypothesis s adds K(s) * c_s(w) to word w (000 Eq. 3-5); rank from the 'rank' column,
    else file order. Output: a counts file ('#key=value' metadata, then 'word<TAB>count').
    """
    from asrpriv.unigram.driver import CountSettings, count_unigrams as run

    result = run(CountSettings(input=input_path, text=text_mode, ids=ids, sigma=sigma, top=top,
                               by_client=by_client, utt2client=utt2client, unit=unit,
                               max_l1=max_l1, grid=grid, partition=partition, public=public,
                               output=output, drop_tokens=drop_tokens), warn=warn)
    if debug_private:  # exact, un-noised statistics of the private input
        info(f"count-unigrams: {result.units} {unit}(s)"
             + (f", {result.clipped} clipped to L1 <= {max_l1:g}" if max_l1 is not None else ""))
    elif result.units == 0:
        warn("no input units")
