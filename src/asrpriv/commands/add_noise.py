"""``asrpriv add-noise``: the Laplace mechanism on counts (paper 000, Eq. 8-9), or the Gaussian
mechanism on one model delta (local DP of one client's update, paper 001 Sec. 2.4)."""

from __future__ import annotations

import click

from asrpriv.errors import AsrprivError
from asrpriv.options import common_options, info, output_option, seed_option, seeded_warning, warn


@click.command("add-noise")
@click.argument("input_path", metavar="[COUNTS | DELTA]", default="-")
@click.option("--mechanism", type=click.Choice(["laplace", "gaussian"]), default="laplace",
              show_default=True,
              help="laplace: counts (needs --epsilon, --vocab). gaussian: one model delta file "
                   "(needs --noise-multiplier; --clip or the delta's recorded clip_l2).")
@click.option("--epsilon", type=str, default=None,
              help="Laplace: privacy parameter epsilon (> 0) of this release; pure DP (delta = 0).")
@click.option("--noise-multiplier", type=float, default=None,
              help="Gaussian: noise std / L2 sensitivity (z); std = z * C per coordinate.")
@click.option("--clip", type=float, default=None,
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
              help="Print un-noised statistics of the private input on stderr (how many input "
                   "words fell outside the vocabulary, and their mass). Not private: debugging only.")
@output_option
@common_options
def add_noise(input_path, mechanism, epsilon, noise_multiplier, clip, vocab_path, sensitivity,
              no_clamp, seed, allow_seeded, debug_private, output):
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
    """
    if mechanism == "gaussian":
        if epsilon is not None or vocab_path is not None or sensitivity is not None or no_clamp:
            raise AsrprivError("--epsilon, --vocab, --sensitivity and --no-clamp are for "
                               "--mechanism laplace")
        if noise_multiplier is None:
            raise AsrprivError("--mechanism gaussian needs --noise-multiplier Z")
        if output == "-":
            raise AsrprivError("--mechanism gaussian: give the noisy delta as -o FILE")
        if seed is not None:
            seeded_warning(f"--seed {seed}")
        from asrpriv.federated.local_noise import noise_delta_file

        norm, used_clip = noise_delta_file(input_path, output, noise_multiplier, clip, seed,
                                           allow_seeded)
        info(f"add-noise: delta L2 norm {norm:.4g} clipped to {used_clip:g}; Gaussian noise std "
             f"{noise_multiplier * used_clip:.4g} per coordinate (z {noise_multiplier:g})")
        return
    if noise_multiplier is not None or clip is not None:
        raise AsrprivError("--noise-multiplier and --clip are for --mechanism gaussian")
    if epsilon is None or vocab_path is None:
        raise AsrprivError("--mechanism laplace needs --epsilon and --vocab")
    from asrpriv.unigram.noise import exact_fraction, release_counts_file

    eps = exact_fraction(epsilon, "--epsilon")
    sens = exact_fraction(sensitivity, "--sensitivity") if sensitivity is not None else None
    if seed is not None:
        seeded_warning(f"--seed {seed}")
    new_meta, meta, report = release_counts_file(input_path, output, vocab_path, eps, seed, sens,
                                                 clamp=not no_clamp, allow_seeded=allow_seeded)
    if report.sensitivity_source == "override" and "max_l1" not in meta:
        warn("--sensitivity on counts that record no bound: the guarantee rests on your claim "
             "that one unit changes the counts by at most that much in L1")
    if debug_private and report.dropped_words:
        info(f"add-noise: dropped {report.dropped_words} input word(s) outside the vocabulary "
             f"({report.dropped_mass:g} pseudo-counts)")
    info(f"add-noise: Laplace scale {report.scale:g} (sensitivity {float(report.sensitivity):g} "
         f"from {report.sensitivity_source}, epsilon {float(eps):g}); epsilon spent "
         f"{new_meta.get('epsilon', 'none: seeded noise is not private')}")
