"""``asrpriv perplexity``: perplexity of neural / n-gram LMs, alone or dynamically interpolated."""

from __future__ import annotations

import click

from asrpriv.commands.options import (FiniteFloat, WholeNumber, common_options, output_option,
                                      seed_option)


from asrpriv.mixture.steps import HIGH_OOV_RATE  # noqa: F401 - its home is the library


@click.command("perplexity")
@click.argument("text", default="-", metavar="[TEXT]")
@click.option("--lm", "lm_paths", required=True, multiple=True, metavar="FILE",
              help="An asrpriv model file (finetune-lm), or an ARPA (.arpa, .arpa.gz) / kenlm binary "
                   "LM. Repeat to score the dynamic interpolation of several LMs (with --weights).")
@click.option("--classes", "class_files", multiple=True, metavar="FILE",
              help="Membership file (train-ngram --classes) of a class LM: --lm is then its class "
                   "ARPA, scored P(w|h) = P(c|h_c) P(w|c). With several --lm give one per LM, in "
                   "order, '-' for a word LM.")
@click.option("--weights", "weights_text", default=None, metavar="W1,W2,...",
              help="Interpolation weights, one per --lm in order, >= 0, summing to 1 "
                   "(paper 003 Eq. 3: P(w|h) = sum_k w_k P_k(w|h), per word). E.g. from interpolate "
                   "(@REPORT.json: the weights of its JSON report).")
@click.option("--per-word", "per_word", default=None, metavar="FILE",
              help="Also write every scored token's log-probability (TSV, natural log; "
                   "docs/FORMATS.md), as SRILM's ngram -debug 2 -ppl does.")
@click.option("--ids", is_flag=True, help="TEXT is Kaldi text (first field = utterance id).")
@click.option("--json", "as_json", is_flag=True, help="Write one JSON object instead of one line.")
@click.option("--batch-size", type=WholeNumber(min=1), default=64, show_default=True,
              help="Sentences per batch (neural LMs).")
@click.option("--threads", type=WholeNumber(min=0), default=0, show_default=True,
              help="CPU threads for torch (0 = OMP_NUM_THREADS if set, else min(CPUs, 4)).")
@click.option("--max-words", type=WholeNumber(min=1), default=1000, show_default=True,
              help="Neural LMs: refuse (FILE:LINE) a sentence longer than this many words.")
@click.option("--bootstrap", "bootstrap_n", type=WholeNumber(min=1), default=None, metavar="N",
              help="Add the perplexity's bootstrap percentile interval from N resamples of the "
                   "sentences (each with its log-probability sum and token count).")
@click.option("--confidence-level", type=FiniteFloat(0.0, 1.0, min_open=True, max_open=True),
              default=0.95, show_default=True, help="Level of the bootstrap interval.")
@seed_option("Seed of the bootstrap resampling (without it, a random seed, printed in the report).")
@output_option
@click.option("--allow-seeded-test-noise", "allow_seeded", is_flag=True,
              help="Tests only: accept LMs/factors made with seeded (not private) noise.")
@common_options
def perplexity(text, lm_paths, class_files, weights_text, per_word, ids, as_json, batch_size, threads,
               max_words, bootstrap_n, confidence_level, seed, output, allow_seeded=False):
    """Perplexity of an LM, or of a dynamic interpolation of LMs, on TEXT (stdin by default).

    Neural and n-gram LMs use the same conventions, so their numbers compare: each sentence's
    </s> is predicted and counted, <s> is context only, OOV words are scored as <unk> (each
    LM's own) and counted (reported as oovs). ppl = exp(-logprob / (words + sentences));
    logprob is the natural-log total (kenlm's log10 scores are converted). Beside it: the OOV
    rate (oovs / words; with several LMs an OOV is a word outside all their vocabularies) and
    SRILM's ppl and ppl1 (OOVs and zero-probability words left out; ppl counts </s> in the
    denominator, ppl1 does not). Blank lines of plain text are not sentences; an N-best TSV
    input is scored on its rank-1 rows.
    """
    from asrpriv.commands.options import warn
    from asrpriv.mixture.steps import PerplexitySettings, perplexity as run

    run(PerplexitySettings(text=text, lm_paths=lm_paths, class_files=class_files,
                           weights=weights_text, per_word=per_word, ids=ids, as_json=as_json,
                           batch_size=batch_size, threads=threads, max_words=max_words,
                           output=output, allow_seeded=allow_seeded, bootstrap=bootstrap_n,
                           confidence_level=confidence_level, seed=seed), warn=warn)
