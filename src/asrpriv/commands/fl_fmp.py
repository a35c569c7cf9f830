"""``asrpriv fl-fmp``: FMP's rounds (paper 000) on Flower's simulation engine (Ray).

The client and server run the same steps as ``bin/fmp-experiment``'s rounds (package
``asrpriv_flower.fmp``, installed with ``pip install 'asrpriv[flower]'``); flwr is imported
inside the command only.
"""

from __future__ import annotations

import click

from asrpriv.commands.options import FiniteFloat, common_options



@click.command("fl-fmp")
@click.option("--nbest", required=True, metavar="TSV",
              help="The clients' N-best lists (a 'client' column), in time order per client.")
@click.option("--nnlm", required=True, metavar="MODEL", help="The neural LM (rescore-nbest --nnlm).")
@click.option("--weights", "weights_path", required=True, metavar="FILE",
              help="Score weights (rescore-nbest --weights, e.g. from tune-weights).")
@click.option("--background", required=True, metavar="COUNTS",
              help="Public background unigram counts u (fma-adapt --background; add-noise --vocab).")
@click.option("--run-dir", required=True, metavar="DIR",
              help="New or empty: clients/C/ (its parts, cache, factors, rescored lists), "
                   "round-t/ (counts, report.json), qbar-t.counts, hyp.txt.")
@click.option("--rounds", type=click.IntRange(min=1), required=True,
              help="T: the lists are split in T+1 parts; T count/aggregate rounds.")
@click.option("--sigma", type=FiniteFloat(min=0.0, min_open=True), default=5.0, show_default=True,
              help="Rank kernel width (count-unigrams --sigma).")
@click.option("--alpha", type=FiniteFloat(0.0, 1.0), default=0.5, show_default=True, help="Global weight.")
@click.option("--beta", type=FiniteFloat(0.0, 1.0), default=0.25, show_default=True, help="Personal weight.")
@click.option("--lambda", "lam", type=FiniteFloat(min=0.0), default=1.0, show_default=True,
              help="Factor exponent.")
@click.option("--epsilon", type=FiniteFloat(min=0.0, min_open=True), default=None,
              help="DP: each round's new counts released by add-noise --epsilon over the "
                   "background vocabulary; clients bound each utterance to --max-l1.")
@click.option("--max-l1", type=FiniteFloat(min=0.0, min_open=True), default=15.0, show_default=True,
              help="DP: per-utterance L1 bound (count-unigrams --unit utterance --max-l1).")
@click.option("--noise-seed", type=int, default=None,
              help="Seed the noise (round t: NOISE_SEED*1000+t). NOT private: tests only.")
@click.option("--allow-seeded-test-noise", "allow_seeded", is_flag=True,
              help="Accept seeded noise (tests only).")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="CPUs given to Ray (one client at a time per CPU).")
@click.option("--round-timeout", type=FiniteFloat(min=0.0, min_open=True), default=None,
              metavar="SECONDS", help="Drop (and record) clients that have not replied by then.")
@common_options
def fl_fmp(nbest, nnlm, weights_path, background, run_dir, rounds, sigma, alpha, beta, lam, epsilon,
           max_l1, noise_seed, allow_seeded, workers, round_timeout):
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

    from asrpriv.commands.flower_common import require_flower, stderr_talk
    from asrpriv.commands.options import is_verbose, seeded_warning

    require_flower("fl-fmp")
    from asrpriv_flower.fmp import FmpSettings, simulate_fmp

    talk = stderr_talk()

    if noise_seed is not None and epsilon:
        seeded_warning(f"--noise-seed {noise_seed}")
    settings = FmpSettings(nbest=nbest, nnlm=nnlm, weights=weights_path, background=background,
                           run_dir=run_dir, rounds=rounds, sigma=sigma, alpha=alpha, beta=beta,
                           lam=lam, epsilon=epsilon, max_l1=max_l1, noise_seed=noise_seed,
                           allow_seeded=allow_seeded, round_timeout=round_timeout)
    reports = simulate_fmp(settings, workers=workers, talk=talk, verbose=is_verbose())
    dropped = sum(len(r["dropped"]) for r in reports)
    talk(f"fl-fmp: {len(reports)} round(s)" + (f", {dropped} client round(s) dropped" if dropped else ""))
    click.echo(os.path.join(run_dir, "hyp.txt"))
