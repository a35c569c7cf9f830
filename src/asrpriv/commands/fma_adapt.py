"""``asrpriv fma-adapt``: marginal adaptation factors (paper 000, Eq. 1-2), or, with ``--arpa``,
an FMA-adapted ARPA model (paper 003 Eq. 1-2, :mod:`asrpriv.ngram.fma`)."""

from __future__ import annotations

import click

from asrpriv.commands.options import FiniteFloat, WholeNumber, common_options, output_option


@click.command("fma-adapt")
@click.option("--arpa", "arpa", metavar="BG.arpa", default=None,
              help="ARPA mode: the background n-gram model (.arpa, .arpa.gz) to adapt; writes an ARPA.")
@click.option("--adapt", "adapt", metavar="COUNTS", default=None,
              help="ARPA mode: the adaptation unigram counts (any count-unigrams/aggregate/add-noise "
                   "output; negative noisy counts are clipped to 0).")
@click.option("--reversed", "reversed_", is_flag=True,
              help="ARPA mode: reversed FMA (003 Eq. 2) instead of the standard one (003 Eq. 1).")
@click.option("--prior", type=FiniteFloat(0.0, 1.0, min_open=True), default=0.1, show_default=True,
              help="ARPA mode: weight lambda of the background marginal in the smoothed adaptation "
                   "marginal P_A(w) = (1-lambda) c(w)/C + lambda P_B(w).")
@click.option("--oov-to-unk", is_flag=True,
              help="ARPA mode: count adaptation words outside the ARPA vocabulary as <unk> (default: "
                   "drop them; in rescoring <unk> stands for every OOV word of a hypothesis).")
@click.option("--precision", type=WholeNumber(1, 17), default=7, show_default=True,
              help="ARPA mode: digits after the point of the log10 numbers written.")
@click.option("--background", "background", metavar="COUNTS", default=None,
              help="Background unigram counts u (from count-unigrams --text on a corpus); required "
                   "in factor mode. ARPA mode: P_B(w) from these counts (add-1/2 smoothed, SRILM "
                   "-base-marginals) instead of the ARPA's unigrams.")
@click.option("--global", "global_counts", metavar="COUNTS", default=None,
              help="Aggregated counts of all clients (qbar).")
@click.option("--personal", "personal", metavar="COUNTS", default=None,
              help="This client's counts (q).")
@click.option("--alpha", type=FiniteFloat(), default=0.5, show_default=True, help="Weight of qbar in g (000 Eq. 2).")
@click.option("--beta", type=FiniteFloat(), default=None,
              help="Factor mode: weight of q in g (000 Eq. 2) [default: 0.25]. ARPA mode: the FMA "
                   "exponent (003 Eq. 1-2, >= 0) [default: 0.5].")
@click.option("--lambda", "lam", type=FiniteFloat(), default=1.0, show_default=True,
              help="Exponent of the factor (g/u)^lambda (000 Eq. 1).")
@click.option("--smoothing", type=FiniteFloat(), default=0.0, show_default=True,
              help="Additive smoothing (pseudo-counts per word) of qbar and q over the background "
                   "vocabulary (000 Eq. 4 'Smoothing').")
@click.option("--allow-seeded-test-noise", "allow_seeded", is_flag=True,
              help="Tests only: accept counts that carry seeded (not private) noise.")
@output_option
@common_options
def fma_adapt(arpa, adapt, reversed_, prior, oov_to_unk, precision, background, global_counts,
              personal, alpha, beta, lam, smoothing, allow_seeded, output):
    """Factor mode (--background, --global/--personal): write 'word<TAB>log_factor' = lambda *
    (ln g(w) - ln u(w)) (natural log) for every word of the background vocabulary,
    g = (1-alpha-beta) u + alpha qbar + beta q. The rescorer applies the factors to the neural
    LM, normalized or not (rescore-nbest).

    \b
    ARPA mode (--arpa BG.arpa --adapt COUNTS --beta B [--reversed]): write the adapted ARPA
      standard: P_A(w|h) = (P_A(w)/P_B(w))^B P_B(w|h) / Z(h)      (003 Eq. 1)
      reversed: P_A(w|h) = (P_B(w|h)/P_B(w))^B P_A(w) / Z(h)      (003 Eq. 2)
    exactly normalized through the back-off structure (Kneser et al. 1997), O(n-grams).
    P_B(w): the ARPA's unigrams (or --background counts); P_A(w): the adaptation counts
    smoothed with --prior; OOV adaptation words dropped (--oov-to-unk: <unk>). kenlm loads it.

    Either output carries the privacy history of all its count inputs (#privacy_history; in
    an ARPA as '#key=value' comment lines before \\data\\, which kenlm skips).
    """
    from asrpriv.ngram.fma_step import FmaAdaptSettings, fma_adapt as run

    run(FmaAdaptSettings(arpa=arpa, adapt=adapt, reversed_=reversed_, prior=prior,
                         oov_to_unk=oov_to_unk, precision=precision, background=background,
                         global_counts=global_counts, personal=personal, alpha=alpha, beta=beta,
                         lam=lam, smoothing=smoothing, allow_seeded=allow_seeded, output=output))
