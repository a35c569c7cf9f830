"""``asrpriv add-noise``: the Laplace mechanism on counts (paper 000, Eq. 8-9)."""

from __future__ import annotations

import click

from asrpriv.options import common_options, info, output_option, seed_option, seeded_warning, warn


@click.command("add-noise")
@click.argument("input_path", metavar="[COUNTS]", default="-")
@click.option("--epsilon", type=str, required=True,
              help="Privacy parameter epsilon (> 0) of this release; pure DP (delta = 0).")
@click.option("--vocab", "vocab_path", metavar="FILE", required=True,
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
def add_noise(input_path, epsilon, vocab_path, sensitivity, no_clamp, seed, allow_seeded,
              debug_private, output):
    """Add discrete Laplace noise calibrated to the recorded contribution bound.

    Scale = sensitivity / epsilon, sensitivity = the per-unit L1 bound max_l1 that
    count-unigrams enforced (add/remove-one-unit adjacency). Noise is exact discrete Laplace
    on the counts' grid (Canonne, Kamath & Steinke 2020), not floating-point inverse-CDF noise
    (Mironov 2012). Each run is one release appended to the input's privacy history
    (#privacy_history); #epsilon is its total: noising twice adds up.
    """
    from asrpriv.io.counts import read_counts, read_wordlist, write_counts
    from asrpriv.io.output import open_output
    from asrpriv.privacy.counts_mechanism import exact_fraction, laplace_counts
    from asrpriv.privacy.randomness import noise_rng
    from asrpriv.unigram.meta import refuse_seeded

    eps = exact_fraction(epsilon, "--epsilon")
    sens = exact_fraction(sensitivity, "--sensitivity") if sensitivity is not None else None
    if seed is not None:
        seeded_warning(f"--seed {seed}")
    meta, counts = read_counts(input_path)
    refuse_seeded(input_path if input_path != "-" else "<stdin>", meta, allow_seeded)
    vocab = read_wordlist(vocab_path)
    new_meta, noisy, report = laplace_counts(meta, counts, vocab, eps, noise_rng(seed), sens,
                                             clamp=not no_clamp, seeded=seed is not None)
    with open_output(output) as stream:
        write_counts(stream, new_meta, noisy)
    if report.sensitivity_source == "override" and "max_l1" not in meta:
        warn("--sensitivity on counts that record no bound: the guarantee rests on your claim "
             "that one unit changes the counts by at most that much in L1")
    if debug_private and report.dropped_words:
        info(f"add-noise: dropped {report.dropped_words} input word(s) outside the vocabulary "
             f"({report.dropped_mass:g} pseudo-counts)")
    info(f"add-noise: Laplace scale {report.scale:g} (sensitivity {float(report.sensitivity):g} "
         f"from {report.sensitivity_source}, epsilon {float(eps):g}); epsilon spent "
         f"{new_meta['epsilon']}")
