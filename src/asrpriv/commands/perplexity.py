"""``asrpriv perplexity``: perplexity of neural / n-gram LMs, alone or dynamically interpolated."""

from __future__ import annotations

import click

from asrpriv.options import common_options, output_option


#: above this OOV rate perplexity gets a warning that it does not compare across vocabularies
HIGH_OOV_RATE = 0.10


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
@click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True,
              help="Sentences per batch (neural LMs).")
@click.option("--threads", type=click.IntRange(min=0), default=0, show_default=True,
              help="CPU threads for torch (0 = OMP_NUM_THREADS if set, else min(CPUs, 4)).")
@click.option("--max-words", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Neural LMs: refuse (FILE:LINE) a sentence longer than this many words.")
@output_option
@click.option("--allow-seeded-test-noise", "allow_seeded", is_flag=True,
              help="Tests only: accept LMs/factors made with seeded (not private) noise.")
@common_options
def perplexity(text, lm_paths, class_files, weights_text, per_word, ids, as_json, batch_size, threads,
               max_words, output, allow_seeded=False):
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
    import json

    from asrpriv.errors import InputError, display_name
    from asrpriv.io.output import open_output
    from asrpriv.mixture.weights import parse_weights
    from asrpriv.options import warn

    from asrpriv.provenance import check_read_files

    check_read_files(lm_paths, allow_seeded)
    weights = parse_weights(weights_text, len(lm_paths))
    from asrpriv.mixture import report
    from asrpriv.mixture.em import mix_logprobs
    from asrpriv.mixture.streams import compute_streams, load_lm
    from asrpriv.nnlm.data import read_corpus

    from asrpriv.mixture.streams import pair_classes

    lms = [load_lm(p, classes=c, batch_size=batch_size)  # before stdin: fail fast
           for p, c in zip(lm_paths, pair_classes(lm_paths, class_files))]
    if any(lm.kind == "nnlm" for lm in lms):
        import torch

        from asrpriv.nnlm.finetune import choose_threads

        torch.set_num_threads(choose_threads(threads))
    neural = any(lm.kind == "nnlm" for lm in lms)
    corpus = read_corpus(text, ids=ids, max_words=max_words if neural else None)
    for note in corpus.notes:
        warn(f"{display_name(text)}: {note}")
    sentences = corpus.sentences
    if not sentences:
        raise InputError(text, None, "empty input: expected sentences")
    logp, oov_each = compute_streams(lms, sentences)
    words = sum(len(s) for s in sentences)
    if len(lms) == 1:
        ln_p, oov = logp[0], oov_each[0]
    else:
        ln_p = mix_logprobs(logp, weights)
        oov = oov_each.all(axis=0)
        partly = int((oov_each.any(axis=0) & ~oov).sum())
        if partly:
            warn(f"{partly} tokens are outside some LMs' vocabularies but not all: those LMs score "
                 "them as <unk> (vocabularies differ, so per-LM perplexities do not compare)")
    summary = report.summarize(ln_p, oov, words, len(sentences))
    if summary["oov_rate"] > HIGH_OOV_RATE:
        warn(f"{100 * summary['oov_rate']:.1f}% of the words are outside the vocabulary (scored "
             "as <unk>): this perplexity does not compare with an LM of a larger vocabulary "
             "(see srilm_ppl, which leaves OOVs out, and the oov_rate)")
    if len(lms) == 1:
        summary = {"lm": display_name(lm_paths[0]), "text": display_name(text),
                   "lm_type": lms[0].kind, **summary}
    else:
        components = []
        for k, lm in enumerate(lms):
            alone = report.summarize(logp[k], oov_each[k], words, len(sentences))
            components.append({"lm": lm.name, "lm_type": lm.kind, "weight": weights[k],
                               **{key: alone[key] for key in ("ppl", "logprob", "oovs", "srilm_ppl")}})
        summary = {"lm": [lm.name for lm in lms], "weights": weights, "text": display_name(text),
                   "lm_type": "mixture", "components": components, **summary}
    if per_word:
        with open_output(per_word) as stream:
            report.write_per_word(stream, sentences, corpus.ids, ln_p, oov,
                                  logp if len(lms) > 1 else None)
    with open_output(output) as out:
        if as_json:
            out.write(json.dumps(summary, sort_keys=True) + "\n")
        else:
            out.write(report.format_line(summary, display_name(text)) + "\n")
