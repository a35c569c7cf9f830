"""``asrpriv interpolate``: EM interpolation weights on held-out text; static ARPA mixtures."""

from __future__ import annotations

import click

from asrpriv.commands.options import FiniteFloat, WholeNumber, common_options

HELP = """Linear interpolation of LMs: estimate the weights, or write a static mixture.

\b
Estimate (--heldout TEXT): every --lm (ARPA/kenlm n-gram or asrpriv NNLM model file) scores
every token of TEXT once; EM then finds the weights that maximize the held-out likelihood
of the dynamic interpolation P(w|h) = sum_k w_k P_k(w|h) (paper 003 Eq. 3), as SRILM's
compute-best-mix does: w_k <- mean over tokens of w_k P_k / sum_j w_j P_j, from uniform
weights, until no weight moves by more than --tol. Prints one JSON object: weights (one per
--lm, in order), perplexity (held-out, of the final weights), iterations, converged, tokens,
oovs, oov_rate, srilm_ppl/srilm_ppl1, and each LM's own perplexity. With -o FILE the static
mixture with the estimated weights is written too.

\b
Mix (--weights W1,W2,... and -o MIX.arpa): one back-off ARPA with SRILM -mix-lm semantics:
the union of the LMs' n-grams, each listed n-gram with sum_k w_k P_k(w|h) (through each LM's
own back-off), back-off weights recomputed so that every context normalizes. It equals the
dynamic interpolation on every listed n-gram, not on backed-off ones (SRILM's approximation
too). ARPA inputs only.

\b
OOVs (--oov): 'unk' (default) scores a word outside an LM's vocabulary with that LM's <unk>,
as perplexity's ppl does (the held-out perplexity then equals perplexity --weights' ppl);
'exclude' leaves out words outside every LM's vocabulary (SRILM without -unk).
"""


@click.command("interpolate", help=HELP)
@click.option("--classes", "class_files", multiple=True, metavar="FILE",
              help="With --heldout: membership files of class LMs (train-ngram --classes), one "
                   "per --lm in order, '-' for other LMs.")
@click.option("--lm", "lm_paths", required=True, multiple=True, metavar="FILE",
              help="An LM: ARPA (.arpa, .arpa.gz), kenlm binary, or asrpriv NNLM model file. Repeat.")
@click.option("--heldout", default=None, metavar="TEXT",
              help="Held-out text to estimate the weights on ('-' = stdin).")
@click.option("--ids", is_flag=True, help="The held-out text is Kaldi text (first field = utterance id).")
@click.option("--public-heldout", is_flag=True,
              help="Declare the --heldout text public: without it the weights (and a mixture "
                   "written with them) are NOT private, since they are fitted on that text.")
@click.option("--weights", "weights_text", default=None, metavar="W1,W2,...",
              help="Fixed weights for the static mixture (one per --lm, >= 0, summing to 1; "
                   "@REPORT.json: the weights of an earlier --heldout JSON report).")
@click.option("--init", "init_text", default=None, metavar="W1,W2,...",
              help="EM starting weights (default: uniform).")
@click.option("--tol", type=FiniteFloat(min=0.0, min_open=True), default=1e-6, show_default=True,
              help="EM stops when no weight changes by more than this in one step.")
@click.option("--max-iter", type=WholeNumber(min=1), default=10000, show_default=True,
              help="At most this many EM steps.")
@click.option("--oov", "oov_policy", type=click.Choice(["unk", "exclude"]), default="unk",
              show_default=True, help="Held-out OOV words: scored as each LM's <unk>, or left out.")
@click.option("--precision", type=WholeNumber(1, 17), default=7, show_default=True,
              help="Digits after the point of the log10 numbers in the mixed ARPA.")
@click.option("--batch-size", type=WholeNumber(min=1), default=64, show_default=True,
              help="Sentences per batch (neural LMs).")
@click.option("--threads", type=WholeNumber(min=0), default=0, show_default=True,
              help="CPU threads for torch (0 = OMP_NUM_THREADS if set, else min(CPUs, 4)).")
@click.option("-o", "--output", "output", default=None, metavar="FILE",
              help="The static mixture (ARPA), written atomically ('-' = stdout; mix mode only).")
@click.option("--allow-seeded-test-noise", "allow_seeded", is_flag=True,
              help="Tests only: accept LMs/factors made with seeded (not private) noise.")
@common_options
def interpolate(class_files, lm_paths, heldout, ids, public_heldout, weights_text, init_text, tol,
                max_iter, oov_policy, precision, batch_size, threads, output, allow_seeded=False):
    import json

    from asrpriv.commands.options import info, warn
    from asrpriv.mixture.steps import InterpolateSettings, interpolate as run

    run(InterpolateSettings(lm_paths=lm_paths, class_files=class_files, heldout=heldout, ids=ids,
                            weights=weights_text, init=init_text, tol=tol, max_iter=max_iter,
                            oov_policy=oov_policy, precision=precision, batch_size=batch_size,
                            threads=threads, output=output, allow_seeded=allow_seeded,
                            public_heldout=public_heldout),
        info=info, warn=warn, on_report=lambda report: click.echo(json.dumps(report, sort_keys=True)))
