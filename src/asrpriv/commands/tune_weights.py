"""``asrpriv tune-weights``: grid-search lm_weight, nnlm_weight and word_penalty on a dev set."""

from __future__ import annotations

import click

from asrpriv.commands.options import common_options, output_option

HELP = """Pick rescoring weights on a dev set: the lowest WER of the 1-best.

Reads an N-best TSV written by rescore-nbest (its score columns: am_score or the
first-pass score, lm_score/ngram_score, nnlm_score; no LM is run here) and the
references (Kaldi text), tries every point of the grid

\b
  score = acoustic + lm_weight * ((1 - w) * lm + w * nnlm) + word_penalty * n_words

(the same formula and column choices as rescore-nbest) and writes a weights file:
#key=value lines with lm_weight, nnlm_weight, word_penalty, then the WER reached, the
first-pass WER and the grid. Apply it to another set with
`rescore-nbest --weights FILE` (add --reuse-scores to re-rank an already scored TSV
without running the LMs again). Tune on dev, report on test: tuning on the test set
itself inflates results.

\b
Grids: START:STOP:STEP (STOP included), a,b,c, or one value. Without an nnlm_score
column w is fixed at 0; without lm_score/ngram_score, at 1. Ties go to the first grid
point (smallest lm_weight, then w, then word_penalty). WER counts sclite-optimal
word errors as score-wer does.
"""


@click.command("tune-weights", help=HELP)
@click.argument("nbest", default="-", metavar="[RESCORED.tsv]")
@click.option("-r", "--ref", "ref_path", required=True, metavar="TEXT",
              help="References, Kaldi text (utt_id word ...).")
@click.option("--lm-weights", default="0:20:0.5", show_default=True,
              help="Grid of lm_weight.")
@click.option("--nnlm-weights", default="0:1:0.1", show_default=True,
              help="Grid of w (share of the NNLM score), within [0, 1].")
@click.option("--word-penalties", default="-10:10:0.5", show_default=True,
              help="Grid of word_penalty (nats per word).")
@output_option
@common_options
def tune_weights(nbest, ref_path, lm_weights, nnlm_weights, word_penalties, output) -> None:
    from asrpriv.commands.options import info, warn
    from asrpriv.rescore.tune import TuneSettings, tune_weights as run

    outcome = run(TuneSettings(nbest=nbest, ref=ref_path, lm_weights=lm_weights,
                               nnlm_weights=nnlm_weights, word_penalties=word_penalties,
                               output=output), warn=warn)
    info(outcome.summary())
    if outcome.edge:
        warn(outcome.edge_warning())
