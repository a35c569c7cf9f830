"""``asrpriv rescore-nbest``: second-pass N-best rescoring with neural/n-gram LMs and FMP factors."""

from __future__ import annotations

import click

from asrpriv.commands.options import FiniteFloat, WholeNumber, common_options, output_option
from asrpriv.io.tokens import HELP as TOKENS_HELP

HELP = """Rescore N-best lists (TSV) with a neural LM and/or an n-gram LM, and re-rank them.

\b
Each hypothesis gets (natural log, higher is better):
  score = acoustic + lm_weight * ((1 - w) * lm + w * nnlm) + word_penalty * n_words
\b
  acoustic  the am_score column; else the first-pass total (first_pass_score, or score);
            else, for lists with ranks only, the rank prior -(rank - 1), one nat per rank
            step (tune --lm-weight against it with tune-weights).
  lm        the --ngram score if given (it replaces the first-pass lm_score), else the
            first-pass lm_score column. Several --ngram with --ngram-weights: their
            dynamic interpolation, sum over words of ln sum_k w_k P_k(w|h).
  nnlm      the --nnlm score. w = --nnlm-weight; without an NNLM score w counts as 0,
            without an n-gram/lm_score as 1.
  LM scores are sentence log-probs: the words and </s>, from <s> (kenlm's log10 x ln 10).

\b
FMP factors (word<TAB>log_factor, natural log; paper 000 Eq. 1) rescale the NNLM:
by default exactly renormalized, ln p'(w|h) = log_softmax(logits + f)[w] over the whole
vocabulary; --unnormalized adds f(w) to ln p(w|h) as the paper does for speed. Words
without a factor get 0; factor words outside the NNLM vocabulary are ignored (counted on
stderr). Factors need --nnlm: with only --ngram they are an error (adapt an n-gram with
fma-adapt instead).

\b
Output: every input column kept; score and rank replaced by the new total and rank
(1 = best), rows re-sorted within each utterance (ties keep the first-pass order);
added when absent: first_pass_rank, first_pass_score (the old score column), nnlm_score,
ngram_score, score, rank. With --best: Kaldi text of each 1-best, for score-wer.

Weights from tune-weights: --weights FILE; options given on the command line win.
"""


@click.command("rescore-nbest", help=HELP)
@click.argument("inputs", nargs=-1, metavar="[NBEST.tsv]...")
@click.option("--nnlm", metavar="MODEL", default=None,
              help="Neural LM model file (from finetune-lm).")
@click.option("--ngram", metavar="LM", multiple=True,
              help="n-gram LM: ARPA (.arpa, .arpa.gz) or KenLM binary. Repeat (with "
                   "--ngram-weights) for their dynamic interpolation, word by word.")
@click.option("--classes", "class_files", multiple=True, metavar="FILE",
              help="Membership file of a class LM (train-ngram --classes): its --ngram is the "
                   "class ARPA, P(w|h) = P(c|h_c) P(w|c). One per --ngram, in order, '-' for a "
                   "word LM.")
@click.option("--ngram-weights", "ngram_weights", default=None, metavar="W1,W2,...",
              help="Weights of several --ngram LMs, in order, >= 0, summing to 1 (e.g. from "
                   "interpolate; @REPORT.json: the weights of its JSON report): ln sum_k w_k "
                   "P_k(w|h) per word (paper 003 Eq. 3).")
@click.option("--mixture-weights", default=None, metavar="W1,...,Wk,WN",
              help="Weights of a linear mixture of the k --ngram LMs and the --nnlm (last), "
                   "e.g. interpolate's EM weights (@REPORT.json: its JSON report): the n-grams "
                   "are interpolated with their weights renormalized to sum 1 and w = WN "
                   "(a log-linear approximation of the linear mixture, paper 003 Eq. 3).")
@click.option("--factors", "factors_file", metavar="FILE", default=None,
              help="FMP factors file applied to every utterance.")
@click.option("--factors-dir", metavar="DIR", default=None,
              help="Directory of <client>.tsv factor files, chosen by the 'client' column.")
@click.option("--missing-factors", type=click.Choice(["error", "ignore"]), default="error",
              show_default=True,
              help="A client without a file in --factors-dir: stop, or score it without factors.")
@click.option("--unnormalized", is_flag=True,
              help="Add the log factor to the word's log-prob without renormalizing (000 §2.1).")
@click.option("--lm-weight", type=FiniteFloat(), default=6.5, show_default=True,
              help="Weight of the LM part (the AMI first pass used 6.5). A rank-only list (no "
                   "am_score/score column) is refused unless this or --weights is given: the "
                   "default is meant for acoustic scores.")
@click.option("--nnlm-weight", "-w", type=FiniteFloat(0.0, 1.0), default=0.5, show_default=True,
              help="w: share of the NNLM score in the LM part (paper: 0.5).")
@click.option("--word-penalty", type=FiniteFloat(), default=-0.431, show_default=True,
              help="Added per word, nats (ln 0.65 = -0.431, the AMI first pass).")
@click.option("--weights", "weights_file", metavar="FILE", default=None,
              help="Weights file from tune-weights (#lm_weight=, #nnlm_weight=, #word_penalty=).")
@click.option("--reuse-scores", is_flag=True,
              help="Use nnlm_score/ngram_score columns already in the input (an earlier "
                   "rescore-nbest output) for the LMs not given: re-rank without rescoring.")
@click.option("--best", is_flag=True, help="Write Kaldi text of each utterance's best hypothesis.")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True,
              help="Where the NNLM runs.")
@click.option("--threads", type=WholeNumber(min=1), default=None,
              help="CPU threads for the NNLM (default: torch's choice).")
@click.option("--precision", type=click.Choice(["fp32", "bf16"]), default="fp32", show_default=True,
              help="NNLM arithmetic: fp32, or bf16 (opt-in: bfloat16 products on CPUs with "
                   "AVX512-BF16/AMX or on a GPU; scores change slightly, see docs/PERFORMANCE.md).")
@click.option("--batch-tokens", type=WholeNumber(min=1), default=4096, show_default=True,
              help="Padded positions per NNLM forward pass (rows x longest row); for a "
                   "Transformer, prefix-tree nodes (each distinct history of an utterance's "
                   "hypotheses is computed once).")
@click.option("--max-words", type=WholeNumber(min=1), default=1000, show_default=True,
              help="With --nnlm: refuse (FILE:LINE) a hypothesis longer than this many words "
                   "(Transformer attention costs memory and time quadratic in its length).")
@click.option("--unk-penalty", type=FiniteFloat(min=0.0), default=0.0, show_default=True, metavar="NATS",
              help="With --nnlm: subtract NATS from the NNLM score per hypothesis word outside its "
                   "vocabulary. Such a word is scored as <unk>, whose probability is the mass of "
                   "every unknown word; ln K spreads it evenly over K candidate words (Kaldi's RNNLM "
                   "rescoring has the same knob). Without it an NNLM whose <unk> was trained up "
                   "(e.g. by adapting on text with new words) prefers hypotheses with OOV words.")
@click.option("--chunk-utts", type=WholeNumber(min=1), default=256, show_default=True,
              help="Utterances read and scored together (bounds memory).")
@click.option("--drop-tokens", "drop_tokens", default=None, metavar="SPEC",
              help=TOKENS_HELP + " Dropped words are neither scored nor counted by the word "
                   "penalty, and are left out of the text written. Default: none.")
@click.option("--allow-seeded-test-noise", "allow_seeded", is_flag=True,
              help="Tests only: accept LMs/factors made with seeded (not private) noise.")
@output_option
@common_options
@click.pass_context
def rescore_nbest(ctx: click.Context, inputs, nnlm, ngram, class_files, ngram_weights, mixture_weights,
                  factors_file, factors_dir,
                  missing_factors,
                  unnormalized, lm_weight, nnlm_weight, word_penalty, weights_file, reuse_scores, best,
                  device, threads, precision, batch_tokens, max_words, unk_penalty, chunk_utts, drop_tokens,
                  output, allow_seeded=False) -> None:
    from click.core import ParameterSource

    from asrpriv.commands.options import info, is_verbose
    from asrpriv.progress import Progress
    from asrpriv.rescore.pipeline import RescoreSettings, rescore_nbest as run

    def given(name: str, value):  # None: not on the command line (--weights or the default)
        return value if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE else None

    settings = RescoreSettings(
        inputs=inputs, nnlm=nnlm, ngram=ngram, class_files=class_files, ngram_weights=ngram_weights,
        factors=factors_file, factors_dir=factors_dir, missing_factors=missing_factors,
        unnormalized=unnormalized, lm_weight=given("lm_weight", lm_weight),
        nnlm_weight=given("nnlm_weight", nnlm_weight),
        word_penalty=given("word_penalty", word_penalty), weights=weights_file,
        reuse_scores=reuse_scores, best=best, device=device, threads=threads,
        batch_tokens=batch_tokens, max_words=max_words, unk_penalty=unk_penalty,
        chunk_utts=chunk_utts, output=output, allow_seeded=allow_seeded,
        drop_tokens=drop_tokens, precision=precision, mixture_weights=mixture_weights)
    with Progress("hyps") as progress:
        result = run(settings, verbose=is_verbose(), progress=progress)
    for line in result.notes(verbose=is_verbose()):
        info(line)
