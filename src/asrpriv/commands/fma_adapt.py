"""``asrpriv fma-adapt``: marginal adaptation factors (paper 000, Eq. 1-2)."""

from __future__ import annotations

import click

from asrpriv.options import FiniteFloat, common_options, output_option


@click.command("fma-adapt")
@click.option("--background", "background_path", metavar="COUNTS", required=True,
              help="Background unigram counts u (from count-unigrams --text on a corpus).")
@click.option("--global", "global_path", metavar="COUNTS", default=None,
              help="Aggregated counts of all clients (qbar).")
@click.option("--personal", "personal_path", metavar="COUNTS", default=None,
              help="This client's counts (q).")
@click.option("--alpha", type=FiniteFloat(), default=0.5, show_default=True, help="Weight of qbar in g (000 Eq. 2).")
@click.option("--beta", type=FiniteFloat(), default=0.25, show_default=True, help="Weight of q in g (000 Eq. 2).")
@click.option("--lambda", "lam", type=FiniteFloat(), default=1.0, show_default=True,
              help="Exponent of the factor (g/u)^lambda (000 Eq. 1).")
@click.option("--smoothing", type=FiniteFloat(), default=0.0, show_default=True,
              help="Additive smoothing (pseudo-counts per word) of qbar and q over the background "
                   "vocabulary (000 Eq. 4 'Smoothing').")
@click.option("--allow-seeded-test-noise", "allow_seeded", is_flag=True,
              help="Tests only: accept counts that carry seeded (not private) noise.")
@output_option
@common_options
def fma_adapt(background_path, global_path, personal_path, alpha, beta, lam, smoothing,
              allow_seeded, output):
    """Write 'word<TAB>log_factor' = lambda * (ln g(w) - ln u(w)) (natural log) for every word
    of the background vocabulary, g = (1-alpha-beta) u + alpha qbar + beta q.

    The rescorer applies the factors to the neural LM, normalized or not (rescore-nbest).
    The factors carry the privacy history of all their inputs (#privacy_history).
    """
    from asrpriv import __version__
    from asrpriv.io.counts import read_counts
    from asrpriv.io.factors import write_factors
    from asrpriv.io.output import open_output
    from asrpriv.unigram.fma import FmaSettings, adaptation_factors

    from asrpriv.privacy.history import History
    from asrpriv.unigram.meta import history_of, refuse_seeded, with_history

    settings = FmaSettings(alpha, beta, lam, smoothing)
    settings.validate(global_path is not None, personal_path is not None)
    histories = []

    def read(path, allow_empty):
        meta, counts = read_counts(path, allow_empty=allow_empty)
        refuse_seeded(path if path != "-" else "<stdin>", meta, allow_seeded)
        histories.append(history_of(meta))
        return counts

    background = read(background_path, False)
    global_counts = read(global_path, True) if global_path else None
    personal = read(personal_path, True) if personal_path else None
    factors = adaptation_factors(background, global_counts, personal, settings)
    meta = {"format": "asrpriv-factors/2", "alpha": f"{alpha:g}", "beta": f"{beta:g}",
            "lambda": f"{lam:g}", "smoothing": f"{smoothing:g}", "log_base": "e",
            "version": __version__}
    meta = with_history(meta, History.combine(histories, disjoint=False))
    with open_output(output) as stream:
        write_factors(stream, meta, factors)
