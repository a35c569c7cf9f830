"""``asrpriv count-unigrams``: kernel-weighted unigram pseudo-counts (paper 000, Eq. 3-5)."""

from __future__ import annotations

import click

from asrpriv.errors import AsrprivError
from asrpriv.io.tokens import HELP as TOKENS_HELP
from asrpriv.options import FiniteFloat, common_options, info, output_option, warn


@click.command("count-unigrams")
@click.argument("input_path", metavar="[INPUT]", default="-")
@click.option("--text", "text_mode", is_flag=True,
              help="INPUT is text (one sentence per line), each word weighing 1: how the "
                   "background unigram u(w) is made from a corpus. Default: an N-best TSV.")
@click.option("--ids", is_flag=True, help="With --text: Kaldi text, the first token is the utterance id.")
@click.option("--sigma", type=FiniteFloat(), default=5.0, show_default=True,
              help="Bandwidth of the rank kernel K(s) = exp(-(rank-1)^2 / (2 sigma^2)) (000 Eq. 3); "
                   "0.1 ~ 1-best only, 100 ~ uniform over the N-best.")
@click.option("--top", type=click.IntRange(min=1), default=None,
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
    from asrpriv.unigram.counting import CountAccumulator
    from asrpriv.io.tokens import parse_drop
    from asrpriv.unigram.driver import count_nbest, count_text, write_outputs

    drop = parse_drop(drop_tokens)

    import math

    if not (math.isfinite(sigma) and sigma > 0):
        raise AsrprivError(f"--sigma must be a finite number > 0, got {sigma}")
    if max_l1 is not None and not (math.isfinite(max_l1) and max_l1 > 0):
        raise AsrprivError(f"--max-l1 must be a finite number > 0, got {max_l1}")
    if not (math.isfinite(grid) and grid > 0):
        raise AsrprivError(f"--grid must be a finite number > 0, got {grid}")
    if max_l1 is not None and max_l1 / grid > 2.0 ** 52:
        raise AsrprivError(f"--max-l1 / --grid must be at most 2^52 grid steps (exact float sums), "
                           f"got {max_l1 / grid:.3g}")
    labels = {}
    if partition is not None:
        from asrpriv.privacy.history import check_partition

        try:
            if "," in partition:
                raise ValueError("give one label (no comma)")
            check_partition(partition)
        except ValueError as err:
            raise AsrprivError(f"--partition: {err}") from None
        if public:
            raise AsrprivError("--partition labels private data; --public data needs none")
        labels["partition"] = partition
    if public:
        labels["public"] = 1
    if ids and not text_mode:
        raise AsrprivError("--ids applies to --text input only")
    client_of = None
    if utt2client:
        from asrpriv.io.kaldi import read_map

        client_of = read_map(utt2client, "client")
    if text_mode and (by_client or unit == "client") and not (ids and client_of):
        raise AsrprivError("--by-client and --unit client on text need --ids and --utt2client")
    if by_client and output != "-":
        raise AsrprivError("--by-client writes DIR/<client>.counts; do not combine it with -o")

    def make_accumulator() -> CountAccumulator:
        return CountAccumulator(max_l1, grid)

    if text_mode:
        result = count_text(input_path, ids, client_of, unit, by_client is not None, make_accumulator,
                            warn=warn, drop=drop)
        settings = {"source": "text"}
    else:
        result = count_nbest(input_path, sigma, top, client_of, unit, by_client is not None,
                             make_accumulator, drop=drop)
        settings = {"source": "nbest", "sigma": sigma, "top": top}
    bound = {"unit": unit, "max_l1": max_l1, "grid": grid} if max_l1 is not None else {}
    clipped, units = write_outputs(result, output, by_client, {**settings, **bound, **labels})
    if debug_private:  # exact, un-noised statistics of the private input
        info(f"count-unigrams: {units} {unit}(s)"
             + (f", {clipped} clipped to L1 <= {max_l1:g}" if max_l1 is not None else ""))
    elif units == 0:
        warn("no input units")
