"""``asrpriv fmp-rounds``: FMP's T rounds (paper 000, Algorithm 1) for every client, in one process."""

from __future__ import annotations

import click

from asrpriv.commands.fmp_options import fmp_run_options
from asrpriv.commands.options import common_options


@click.command("fmp-rounds")
@fmp_run_options(
    run_dir_help="New or empty: groups/part-t.tsv, rescored-t.tsv, new-t/, cache-t/, "
                 "qbar-t.counts (noisy-new-t.counts with --epsilon), factors-t/, hyp.txt.",
    epsilon_help="DP: each round's new counts released by add-noise --epsilon over the "
                 "background vocabulary; each utterance bounded to --max-l1.")
@common_options
def fmp_rounds(fmp):
    """Run federated marginal personalization (paper 000) for every client, in one process.

    Round t = 0..T: every client rescores its group t with the factors of round t-1
    (rescore-nbest), and (t < T) counts it (count-unigrams --by-client) into its running
    cache (aggregate); the server sums the caches into qbar (aggregate; with --epsilon: the
    round's new counts, add-noise, aggregate --disjoint); each client makes its factors
    (fma-adapt). The same library round as 'fl-fmp' (Flower), and the same files as those
    steps run one by one. Prints RUN/hyp.txt (every utterance's best hypothesis).

    \b
    Example:
      asrpriv fmp-rounds --nbest eval.tsv --nnlm nnlm.pt --weights weights.txt \\
          --background u.counts --rounds 2 --run-dir runs/fmp2
    """
    from asrpriv.commands.options import info
    from asrpriv.federated.fmp import fmp_rounds as run

    click.echo(run(fmp, talk=info).hyp)
