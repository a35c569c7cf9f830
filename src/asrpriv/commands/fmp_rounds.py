"""``asrpriv fmp-rounds``: FMP's T rounds (paper 000, Algorithm 1) for every client, in one process."""

from __future__ import annotations

import click

from asrpriv.commands.options import FiniteFloat, common_options


@click.command("fmp-rounds")
@click.option("--nbest", required=True, metavar="TSV",
              help="The clients' N-best lists (a 'client' column), in time order per client.")
@click.option("--nnlm", required=True, metavar="MODEL", help="The neural LM (rescore-nbest --nnlm).")
@click.option("--weights", "weights_path", required=True, metavar="FILE",
              help="Score weights (rescore-nbest --weights, e.g. from tune-weights).")
@click.option("--background", required=True, metavar="COUNTS",
              help="Public background unigram counts u (fma-adapt --background; add-noise --vocab).")
@click.option("--run-dir", required=True, metavar="DIR",
              help="New or empty: groups/part-t.tsv, rescored-t.tsv, new-t/, cache-t/, "
                   "qbar-t.counts (noisy-new-t.counts with --epsilon), factors-t/, hyp.txt.")
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
                   "background vocabulary; each utterance bounded to --max-l1.")
@click.option("--max-l1", type=FiniteFloat(min=0.0, min_open=True), default=15.0, show_default=True,
              help="DP: per-utterance L1 bound (count-unigrams --unit utterance --max-l1).")
@click.option("--noise-seed", type=int, default=None,
              help="Seed the noise (round t: NOISE_SEED*1000+t). NOT private: tests only.")
@click.option("--allow-seeded-test-noise", "allow_seeded", is_flag=True,
              help="Accept seeded noise (tests only).")
@common_options
def fmp_rounds(nbest, nnlm, weights_path, background, run_dir, rounds, sigma, alpha, beta, lam,
               epsilon, max_l1, noise_seed, allow_seeded):
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
    from asrpriv.federated.fmp import FmpSettings, run_rounds
    from asrpriv.commands.options import info, seeded_warning

    if noise_seed is not None and epsilon:
        seeded_warning(f"--noise-seed {noise_seed}")
    settings = FmpSettings(sigma=sigma, alpha=alpha, beta=beta, lam=lam, epsilon=epsilon,
                           max_l1=max_l1, noise_seed=noise_seed, allow_seeded=allow_seeded)
    hyp = run_rounds(nbest, nnlm, weights_path, background, run_dir, rounds, settings, talk=info)
    click.echo(hyp)
