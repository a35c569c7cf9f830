"""``asrpriv perplexity``: perplexity of a neural (our model file) or n-gram (ARPA/kenlm) LM on text."""

from __future__ import annotations

import click

from asrpriv.options import common_options, output_option, warn


@click.command("perplexity")
@click.argument("text", default="-", metavar="[TEXT]")
@click.option("--lm", "lm_path", required=True, metavar="FILE",
              help="An asrpriv model file (finetune-lm), or an ARPA (.arpa, .arpa.gz) / kenlm binary LM.")
@click.option("--ids", is_flag=True, help="TEXT is Kaldi text (first field = utterance id).")
@click.option("--json", "as_json", is_flag=True, help="Write one JSON object instead of one line.")
@click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True,
              help="Sentences per batch (neural LMs).")
@click.option("--threads", type=click.IntRange(min=0), default=0, show_default=True,
              help="CPU threads for torch (0 = OMP_NUM_THREADS if set, else min(CPUs, 4)).")
@click.option("--max-words", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Neural LMs: refuse (FILE:LINE) a sentence longer than this many words.")
@output_option
@common_options
def perplexity(text, lm_path, ids, as_json, batch_size, threads, max_words, output):
    """Perplexity of an LM on TEXT (one sentence a line; stdin by default).

    Neural and n-gram LMs use the same conventions, so their numbers compare: each sentence's
    </s> is predicted and counted, <s> is context only, OOV words are scored as <unk> and
    counted (reported as oovs). ppl = exp(-logprob / (words + sentences)); logprob is the
    natural-log total (kenlm's log10 scores are converted). Blank lines of plain text are not
    sentences; an N-best TSV input is scored on its rank-1 rows.
    """
    import json
    import os

    from asrpriv.errors import InputError, display_name
    from asrpriv.io.output import open_output
    from asrpriv.nnlm import perplexity as ppl
    from asrpriv.nnlm.data import read_corpus
    from asrpriv.nnlm.modelfile import is_model_file

    if not os.path.exists(lm_path):
        raise InputError(lm_path, None, "no such file")
    neural = is_model_file(lm_path)
    if not neural:
        lm = ppl.load_kenlm(lm_path)  # before reading stdin: a bad LM fails fast
    corpus = read_corpus(text, ids=ids, max_words=max_words if neural else None)
    for note in corpus.notes:
        warn(f"{display_name(text)}: {note}")
    sentences = corpus.sentences
    if not sentences:
        raise InputError(text, None, "empty input: expected sentences")
    if neural:
        import torch

        from asrpriv.nnlm.finetune import choose_threads
        from asrpriv.nnlm.modelfile import load_model

        torch.set_num_threads(choose_threads(threads))
        model, vocab, _config = load_model(lm_path)
        summary = ppl.nnlm_perplexity(model, vocab, sentences, batch_size=batch_size)
    else:
        summary = ppl.kenlm_perplexity(lm, sentences)
    summary = {"lm": display_name(lm_path), "text": display_name(text), **summary}
    with open_output(output) as out:
        if as_json:
            out.write(json.dumps(summary, sort_keys=True) + "\n")
        else:
            out.write(ppl.format_line(summary, display_name(text)) + "\n")
