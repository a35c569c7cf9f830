"""``asrpriv interpolate``: EM interpolation weights on held-out text; static ARPA mixtures."""

from __future__ import annotations

import click

from asrpriv.options import common_options

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
@click.option("--weights", "weights_text", default=None, metavar="W1,W2,...",
              help="Fixed weights for the static mixture (one per --lm, >= 0, summing to 1; "
                   "@REPORT.json: the weights of an earlier --heldout JSON report).")
@click.option("--init", "init_text", default=None, metavar="W1,W2,...",
              help="EM starting weights (default: uniform).")
@click.option("--tol", type=click.FloatRange(min=0.0, min_open=True), default=1e-6, show_default=True,
              help="EM stops when no weight changes by more than this in one step.")
@click.option("--max-iter", type=click.IntRange(min=1), default=10000, show_default=True,
              help="At most this many EM steps.")
@click.option("--oov", "oov_policy", type=click.Choice(["unk", "exclude"]), default="unk",
              show_default=True, help="Held-out OOV words: scored as each LM's <unk>, or left out.")
@click.option("--precision", type=click.IntRange(1, 17), default=7, show_default=True,
              help="Digits after the point of the log10 numbers in the mixed ARPA.")
@click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True,
              help="Sentences per batch (neural LMs).")
@click.option("--threads", type=click.IntRange(min=0), default=0, show_default=True,
              help="CPU threads for torch (0 = OMP_NUM_THREADS if set, else min(CPUs, 4)).")
@click.option("-o", "--output", "output", default=None, metavar="FILE",
              help="The static mixture (ARPA), written atomically ('-' = stdout; mix mode only).")
@click.option("--allow-seeded-test-noise", "allow_seeded", is_flag=True,
              help="Tests only: accept LMs/factors made with seeded (not private) noise.")
@common_options
def interpolate(class_files, lm_paths, heldout, ids, weights_text, init_text, tol, max_iter, oov_policy, precision,
                batch_size, threads, output, allow_seeded=False):
    from asrpriv.errors import AsrprivError
    from asrpriv.mixture.weights import parse_weights

    if len(lm_paths) < 2:
        raise AsrprivError("give at least two --lm")
    if heldout is None and weights_text is None:
        raise AsrprivError("give --heldout TEXT (estimate weights) or --weights W1,W2,... with -o "
                           "(write the static mixture)")
    if heldout is not None and weights_text is not None:
        raise AsrprivError("give --heldout (estimate weights) or --weights (fixed), not both; "
                           "'perplexity --lm .. --weights ..' scores fixed weights, --init starts EM")
    if heldout is not None and output == "-":
        raise AsrprivError("with --heldout, stdout carries the JSON report: give -o a file name")
    if heldout is None and class_files:
        raise AsrprivError("a class LM cannot join a static ARPA mixture (its words are classes): "
                           "estimate weights with --heldout, score with perplexity --weights")
    from asrpriv.provenance import check_read_files

    check_read_files(lm_paths, allow_seeded)
    if heldout is None:
        weights = parse_weights(weights_text, len(lm_paths))
        _write_mixture(lm_paths, weights, output or "-", precision)
        return
    init = parse_weights(init_text, len(lm_paths), "--init") if init_text else None
    result = _estimate(lm_paths, class_files, heldout, ids, init, tol, max_iter, oov_policy, batch_size, threads)
    import json

    click.echo(json.dumps(result, sort_keys=True))
    if output:
        _write_mixture(lm_paths, result["weights"], output, precision)


def _write_mixture(lm_paths, weights, output, precision) -> None:
    from asrpriv.io.output import open_output
    from asrpriv.ngram.mix import mix_models
    from asrpriv.ngram.packed import read_packed
    from asrpriv.options import info

    from asrpriv.provenance import Inputs, write_arpa_header

    inputs = Inputs(allow_seeded=True)  # seeded LMs were refused (or allowed) above
    for path in lm_paths:  # even at weight 0 an LM's vocabulary joins the mixture's
        inputs.add_arpa(path)
    models = [read_packed(p) for p in lm_paths]
    mixed = mix_models(models, weights)
    with open_output(output) as out:
        write_arpa_header(out, "interpolate", inputs.state())
        mixed.write(out, precision)
    info(f"interpolate: static mixture of {len(models)} LMs, weights "
         f"{','.join(f'{w:g}' for w in weights)}: n-grams {mixed.counts()}")


def _estimate(lm_paths, class_files, heldout, ids, init, tol, max_iter, oov_policy, batch_size, threads) -> dict:
    import time

    import numpy as np

    from asrpriv.errors import AsrprivError, InputError, display_name
    from asrpriv.mixture import report
    from asrpriv.mixture.em import estimate_weights, mix_logprobs
    from asrpriv.mixture.streams import compute_streams, load_lm
    from asrpriv.nnlm.data import read_corpus
    from asrpriv.options import info, warn

    from asrpriv.mixture.streams import pair_classes

    lms = [load_lm(p, classes=c, batch_size=batch_size)  # fail fast, before stdin
           for p, c in zip(lm_paths, pair_classes(lm_paths, class_files))]
    if any(lm.kind == "nnlm" for lm in lms):
        import torch

        from asrpriv.nnlm.finetune import choose_threads

        torch.set_num_threads(choose_threads(threads))
    sentences = read_corpus(heldout, ids=ids).sentences
    if not sentences:
        raise InputError(heldout, None, "empty input: expected held-out sentences")
    start = time.perf_counter()
    logp, oov_each = compute_streams(lms, sentences)
    t_streams = time.perf_counter() - start
    oov = oov_each.all(axis=0)
    partly = int((oov_each.any(axis=0) & ~oov).sum())
    if partly:
        warn(f"{partly} held-out tokens are outside some LMs' vocabularies but not all: those LMs "
             "score them as <unk>, which favours an LM with a small vocabulary (--oov exclude "
             "leaves out only words outside every vocabulary)")
    use = ~oov if oov_policy == "exclude" else np.ones(oov.shape, dtype=bool)
    dead = use & ~np.isfinite(logp).any(axis=0)
    use &= ~dead
    if not use.any():
        raise AsrprivError(f"{display_name(heldout)}: no held-out token to estimate weights on")
    start = time.perf_counter()
    fit = estimate_weights(logp[:, use], init=init, tol=tol, max_iter=max_iter)
    t_em = time.perf_counter() - start
    if not fit.converged:
        warn(f"EM stopped after {max_iter} steps without converging to --tol {tol:g}")
    words = sum(len(s) for s in sentences)
    summary = report.summarize(mix_logprobs(logp, fit.weights), oov, words, len(sentences))
    tokens = int(use.sum())
    perplexity = float(np.exp(-fit.ln_mix.sum() / tokens))
    info(f"interpolate: streams {t_streams:.2f} s, EM {t_em:.3f} s ({fit.iterations} steps) "
         f"on {tokens} tokens")
    alone = [float(np.exp(-logp[k, use].sum() / tokens)) for k in range(len(lms))]
    return {
        "weights": [float(w) for w in fit.weights],
        "perplexity": perplexity,
        "lms": [lm.name for lm in lms], "lm_types": [lm.kind for lm in lms],
        "component_perplexities": alone,
        "heldout": display_name(heldout),
        "iterations": fit.iterations, "converged": fit.converged, "tolerance": tol,
        "tokens": tokens, "words": words, "sentences": len(sentences),
        "oovs": summary["oovs"], "oov_rate": summary["oov_rate"], "oov_policy": oov_policy,
        "oov_tokens_with_partial_coverage": partly, "zeroprob_tokens": int(dead.sum()),
        "srilm_ppl": summary["srilm_ppl"], "srilm_ppl1": summary["srilm_ppl1"],
        "log_base": "e",
        "conventions": "perplexity = exp(-sum ln P_mix / tokens) over the EM tokens: words and </s>, "
                       + ("OOVs scored as each LM's <unk>" if oov_policy == "unk"
                          else "words outside every LM's vocabulary left out"),
        "seconds": {"streams": round(t_streams, 4), "em": round(t_em, 4)},
    }
