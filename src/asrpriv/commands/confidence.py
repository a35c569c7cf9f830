"""``asrpriv confidence``: word confidences of N-best lists, calibration, and confidence metrics."""

from __future__ import annotations

import click

from asrpriv.commands.options import FiniteFloat, common_options, info, output_option, warn
# the first-pass weights that rescore-nbest and tune-weights use (combine imports no numpy)
from asrpriv.rescore.combine import DEFAULT_LM_WEIGHT as _LM_WEIGHT
from asrpriv.rescore.combine import DEFAULT_WORD_PENALTY as _WORD_PENALTY


@click.command("confidence")
@click.argument("input_path", metavar="[NBEST]", default="-")
@click.option("--scale", type=FiniteFloat(), default=0.15, show_default=True,
              help="S: hypothesis posteriors are softmax(S * total) within each utterance "
                   "(the acoustic-scale knob; totals in nats). Tuned on the AMI adapt split "
                   "(README 'Confidence').")
@click.option("--total", type=click.Choice(["auto", "score", "am-lm", "rank"]), default="auto",
              show_default=True,
              help="The total T_h: the 'score' column; am-lm = am_score + LM_WEIGHT*lm_score + "
                   "WORD_PENALTY*n_words; rank = the rank prior -(rank-1) (P geometric in the "
                   "rank, for lists without scores); auto = score if present, else am-lm if "
                   "am_score is present, else an error.")
@click.option("--lm-weight", type=FiniteFloat(), default=_LM_WEIGHT, show_default=True,
              help="LM weight of the am-lm total (the bundled AMI first pass: 6.5).")
@click.option("--word-penalty", type=FiniteFloat(), default=_WORD_PENALTY, show_default=True,
              help="Per-word penalty of the am-lm total, nats (AMI first pass: ln 0.65).")
@click.option("--reference", "ref_path", default=None, metavar="REF",
              help="Kaldi text of the references: measure NCE, ECE and AUC of the rank-1 "
                   "words (stderr summary; --report for JSON). Every utterance needs one.")
@click.option("--report", "report_path", default=None, metavar="FILE",
              help="Write the metrics and settings as JSON to FILE (atomically); needs "
                   "--reference.")
@click.option("--calibration", "cal_path", default=None, metavar="FILE",
              help="Apply a calibration map (a file from --fit-calibration) to every "
                   "confidence written; metrics are reported raw and calibrated.")
@click.option("--fit-calibration", "fit_path", default=None, metavar="FILE",
              help="Fit an isotonic map of word correctness on the raw rank-1 confidences "
                   "(needs --reference), write it to FILE (JSON breakpoints) and apply it to "
                   "this output (calibrated metrics are then in-sample).")
@output_option
@common_options
def confidence(input_path, scale, total, lm_weight, word_penalty, ref_path, report_path, cal_path,
               fit_path, output):
    """Add a 'confidence' column to an N-best TSV: one float in [0, 1] per word of 'text'.

    Hypothesis posteriors P(h) = softmax over the utterance's hypotheses of S * T_h. The
    confidence of a word of a hypothesis is the summed posterior of the hypotheses that
    contain the same word at the aligned position (each pair of hypotheses aligned by
    Levenshtein; a hypothesis always agrees with itself). Every row gets its confidences;
    the rank-1 row's are the 1-best word confidences that finetune-lm --confidence reads.
    An existing confidence column is replaced in place; other columns are carried through.

    Metrics (rank-1 words against --reference; correct = matched in sclite's alignment):
    NCE exactly as sclite computes it (log2, confidences clipped to [1e-7, 1-1e-7]), ECE
    with 10 equal-width bins weighted by count, ROC AUC with correct words positive.

    Words on which every hypothesis agrees get confidence 1 (an N-best list has no mass
    outside itself); calibrate (--fit-calibration on data with references, --calibration
    elsewhere) to get probabilities. Example:

    \b
      asrpriv confidence --reference adapt/ref.txt --fit-calibration cal.json \\
          adapt/nbest.tsv > /dev/null
      asrpriv confidence --calibration cal.json client.tsv \\
        | asrpriv finetune-lm --init lm.pt --train - --recipe client-001 --confidence token
    """
    from asrpriv.confidence.step import ConfidenceSettings, confidence as run
    from asrpriv.progress import Progress

    with Progress("utt") as progress:
        outcome = run(ConfidenceSettings(input=input_path, scale=scale, total=total,
                                         lm_weight=lm_weight, word_penalty=word_penalty,
                                         reference=ref_path, report=report_path,
                                         calibration=cal_path, fit_calibration=fit_path,
                                         output=output), warn=warn, progress=progress)
    for line in outcome.notes():
        info(line)
