"""``asrpriv fl-fmp``: FMP's rounds (paper 000) on Flower's simulation engine (Ray).

The client and server run the same library round as ``asrpriv fmp-rounds`` (package
``asrpriv_flower.fmp``, installed with ``pip install 'asrpriv[flower]'``); flwr is imported
inside the command only.
"""

from __future__ import annotations

import click

from asrpriv.commands.fmp_options import fmp_run_options
from asrpriv.commands.options import FiniteFloat, WholeNumber, common_options


@click.command("fl-fmp")
@fmp_run_options(
    run_dir_help="New or empty: clients/C/ (its parts, cache, factors, rescored lists), "
                 "round-t/ (counts, report.json), qbar-t.counts, hyp.txt.",
    epsilon_help="DP: each round's new counts released by add-noise --epsilon over the "
                 "background vocabulary; clients bound each utterance to --max-l1.")
@click.option("--workers", type=WholeNumber(min=1), default=1, show_default=True,
              help="CPUs given to Ray (one client at a time per CPU).")
@click.option("--round-timeout", type=FiniteFloat(min=0.0, min_open=True), default=None,
              metavar="SECONDS", help="Drop (and record) clients that have not replied by then.")
@common_options
def fl_fmp(fmp, workers, round_timeout):
    """Run federated marginal personalization (paper 000) on Flower's simulation engine.

    One virtual client per client of --nbest. Round t = 0..T: each client computes its
    factors from the global counts it received and its own cache (fma-adapt), rescores its
    round-t utterances (rescore-nbest), and (t < T) counts them (count-unigrams), adds them
    to its cache (aggregate) and sends the cache, or with --epsilon its new counts; the
    server sums them (aggregate), with --epsilon adds Laplace noise over the background
    vocabulary (add-noise) and accumulates (aggregate --disjoint). The same steps and files
    as bin/fmp-experiment's rounds. Prints RUN/hyp.txt (every utterance's best hypothesis).

    \b
    Example:
      asrpriv fl-fmp --nbest eval.tsv --nnlm nnlm.pt --weights weights.txt \\
          --background u.counts --rounds 3 --epsilon 1 --run-dir runs/fmp1 --workers 2
    """
    import os

    from asrpriv.commands.flower_common import stderr_talk
    from asrpriv.commands.options import is_verbose
    from asrpriv_flower.fmp import FmpSettings, fmp_summary, simulate_fmp

    talk = stderr_talk()
    reports = simulate_fmp(FmpSettings(fmp=fmp, round_timeout=round_timeout), workers=workers,
                           talk=talk, verbose=is_verbose())
    talk(fmp_summary(reports))
    click.echo(os.path.join(fmp.run_dir, "hyp.txt"))
