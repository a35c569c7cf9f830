"""``asrpriv add-noise``: the Laplace mechanism on counts (paper 000, Eq. 8-9), or the Gaussian
mechanism on one model delta (local DP of one client's update, paper 001 Sec. 2.4)."""

from __future__ import annotations

import click

from asrpriv.commands.options import (FiniteFloat, WholeNumber, common_options, info, output_option,
                                    seed_option, seeded_warning, warn)


@click.command("add-noise")
@click.argument("input_paths", metavar="[COUNTS | DELTA]...", nargs=-1)
@click.option("--mechanism", type=click.Choice(["laplace", "gaussian"]), default="laplace",
              show_default=True,
              help="laplace: counts (needs --epsilon, --vocab). gaussian: one model delta file "
                   "(needs --noise-multiplier; --clip or the delta's recorded clip_l2).")
@click.option("--epsilon", type=str, default=None,
              help="Laplace: privacy parameter epsilon (> 0) of this release; pure DP (delta = 0).")
@click.option("--noise-multiplier", type=FiniteFloat(), default=None,
              help="Gaussian: noise std / L2 sensitivity (z); std = z * C per coordinate.")
@click.option("--clip", type=FiniteFloat(), default=None,
              help="Gaussian: clip the delta to this L2 norm C first (default: the bound the "
                   "delta records, clip_l2).")
@click.option("--vocab", "vocab_path", metavar="FILE", default=None,
              help="The public vocabulary: a word list or a counts file (its words). Every word "
                   "gets noise, zero counts included, so output keys never depend on the data.")
@click.option("--sensitivity", type=str, default=None,
              help="Override the L1 sensitivity instead of reading the enforced bound (max_l1) "
                   "from the metadata; recorded as an override.")
@click.option("--no-clamp", is_flag=True, help="Keep negative noisy counts (default: clamp to 0).")
@seed_option("Seed the noise (tests only: seeded noise is NOT private). The output is marked "
             "#seeded=1 and later steps refuse it unless --allow-seeded-test-noise. Default: "
             "the OS's secure random source.")
@click.option("--allow-seeded-test-noise", "allow_seeded", is_flag=True,
              help="Tests only: accept input counts that carry seeded (not private) noise.")
@click.option("--debug-private-stats", "debug_private", is_flag=True,
              help="Print un-noised statistics of the private input on stderr (laplace: how "
                   "many input words fell outside the vocabulary, and their mass; gaussian: the "
                   "delta's L2 norm before clipping). Not private: debugging only.")
@click.option("--by-client", "by_client", metavar="DIR", default=None,
              help="Many inputs (each one client's or item's counts or delta), one independent "
                   "release of each, written to DIR under the input's file name, in one process "
                   "(DIR appears whole or not at all).")
@click.option("--noise-draw", type=WholeNumber(min=0, max=99), default=0, metavar="D",
              show_default=True,
              help="With --seed and --by-client: the i-th input (1-based) is noised with "
                   "seed(SEED, i, D) of asrpriv.federated.seeds.")
@output_option
@common_options
def add_noise(input_paths, mechanism, epsilon, noise_multiplier, clip, vocab_path, sensitivity,
              no_clamp, seed, allow_seeded, debug_private, by_client, noise_draw, output):
    """Add discrete Laplace noise calibrated to the recorded contribution bound.

    Scale = sensitivity / epsilon, sensitivity = the per-unit L1 bound max_l1 that
    count-unigrams enforced (add/remove-one-unit adjacency). Noise is exact discrete Laplace
    on the counts' grid (Canonne, Kamath & Steinke 2020), not floating-point inverse-CDF noise
    (Mironov 2012). Each run is one release appended to the input's privacy history
    (#privacy_history); #epsilon is its total: noising twice adds up.

    --mechanism gaussian on a delta file: clip the whole delta to L2 norm C, add N(0, (z C)^2)
    to every coordinate (local DP of one client's update, add/remove-one-client adjacency,
    no sampling), append the release to the delta's privacy_history. The delta's weight (its
    word count) is carried as it is, unprotected. Noise: os.urandom through Box-Muller in
    float64 (floating-point caveats in asrpriv.federated.gaussian).

    --by-client DIR FILE...: one release of each FILE (each one client's or item's counts or
    delta; noise drawn afresh for each) into DIR/<file name>, in one process.
    """
    from asrpriv.federated.noise_step import AddNoiseSettings, add_noise as run
    from asrpriv.progress import Progress

    single = input_paths[0] if len(input_paths) == 1 and by_client is None else "-"
    many = tuple(input_paths) if by_client is not None or len(input_paths) > 1 else ()
    result = run(AddNoiseSettings(input=single, inputs=many, by_client=by_client,
                                  noise_draw=noise_draw, mechanism=mechanism, epsilon=epsilon,
                                  vocab=vocab_path, sensitivity=sensitivity, clamp=not no_clamp,
                                  noise_multiplier=noise_multiplier, clip=clip, seed=seed,
                                  allow_seeded=allow_seeded, debug_private=debug_private,
                                  output=output), seeded_warning=seeded_warning,
                 progress=lambda total: Progress("files", total=total))
    for line in result.warnings:
        warn(line)
    for line in result.notes:
        info(line)
