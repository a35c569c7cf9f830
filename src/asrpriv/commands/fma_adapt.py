"""``asrpriv fma-adapt``: marginal adaptation factors (paper 000, Eq. 1-2), or, with ``--arpa``,
an FMA-adapted ARPA model (paper 003 Eq. 1-2, :mod:`asrpriv.ngram.fma`)."""

from __future__ import annotations

import click

from asrpriv.options import FiniteFloat, common_options, output_option


@click.command("fma-adapt")
@click.option("--arpa", "arpa_path", metavar="BG.arpa", default=None,
              help="ARPA mode: the background n-gram model (.arpa, .arpa.gz) to adapt; writes an ARPA.")
@click.option("--adapt", "adapt_path", metavar="COUNTS", default=None,
              help="ARPA mode: the adaptation unigram counts (any count-unigrams/aggregate/add-noise "
                   "output; negative noisy counts are clipped to 0).")
@click.option("--reversed", "reversed_", is_flag=True,
              help="ARPA mode: reversed FMA (003 Eq. 2) instead of the standard one (003 Eq. 1).")
@click.option("--prior", type=click.FloatRange(0.0, 1.0, min_open=True), default=0.1, show_default=True,
              help="ARPA mode: weight lambda of the background marginal in the smoothed adaptation "
                   "marginal P_A(w) = (1-lambda) c(w)/C + lambda P_B(w).")
@click.option("--oov-to-unk", is_flag=True,
              help="ARPA mode: count adaptation words outside the ARPA vocabulary as <unk> (default: "
                   "drop them; in rescoring <unk> stands for every OOV word of a hypothesis).")
@click.option("--precision", type=click.IntRange(1, 17), default=7, show_default=True,
              help="ARPA mode: digits after the point of the log10 numbers written.")
@click.option("--background", "background_path", metavar="COUNTS", default=None,
              help="Background unigram counts u (from count-unigrams --text on a corpus); required "
                   "in factor mode. ARPA mode: P_B(w) from these counts (add-1/2 smoothed, SRILM "
                   "-base-marginals) instead of the ARPA's unigrams.")
@click.option("--global", "global_path", metavar="COUNTS", default=None,
              help="Aggregated counts of all clients (qbar).")
@click.option("--personal", "personal_path", metavar="COUNTS", default=None,
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
def fma_adapt(arpa_path, adapt_path, reversed_, prior, oov_to_unk, precision, background_path, global_path,
              personal_path, alpha, beta, lam, smoothing, allow_seeded, output):
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
    if arpa_path is not None:
        _adapt_arpa(arpa_path, adapt_path, background_path, global_path, personal_path,
                    0.5 if beta is None else beta, reversed_, prior, oov_to_unk, precision, allow_seeded,
                    output)
        return
    from asrpriv.errors import AsrprivError

    if adapt_path is not None or reversed_:
        raise AsrprivError("--adapt and --reversed need --arpa (ARPA mode)")
    if background_path is None:
        raise AsrprivError("give --background COUNTS (factor mode) or --arpa BG.arpa --adapt COUNTS "
                           "(ARPA mode)")
    beta = 0.25 if beta is None else beta
    from asrpriv.unigram.fma import FmaSettings, write_factors_file

    write_factors_file(background_path, global_path, personal_path,
                       FmaSettings(alpha, beta, lam, smoothing), output, allow_seeded)


def _adapt_arpa(arpa_path, adapt_path, background_path, global_path, personal_path, beta, reversed_,
                prior, oov_to_unk, precision, allow_seeded, output):
    """ARPA mode: the library's adapt_arpa_file (also asrpriv.api.fma_adapt_arpa)."""
    from asrpriv.errors import AsrprivError
    from asrpriv.ngram.fma_file import adapt_arpa_file

    if adapt_path is None:
        raise AsrprivError("--arpa needs --adapt COUNTS (the adaptation unigram)")
    if global_path is not None or personal_path is not None:
        raise AsrprivError("--global/--personal belong to factor mode; with --arpa give --adapt")
    adapt_arpa_file(arpa_path, adapt_path, output, beta=beta, reversed_=reversed_, prior=prior,
                    background_path=background_path, oov_to_unk=oov_to_unk, precision=precision,
                    allow_seeded=allow_seeded)
