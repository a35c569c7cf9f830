"""``asrpriv approx-ngram``: an ARPA n-gram approximation of a neural LM (paper 003 §2.4)."""

from __future__ import annotations

import click

from asrpriv.commands.options import FiniteFloat, WholeNumber, common_options, info, output_option


@click.command("approx-ngram")
@click.argument("text", default="-", metavar="[TEXT]")
@click.option("--nnlm", "model_path", required=True, metavar="MODEL",
              help="Neural LM model file (finetune-lm).")
@click.option("-n", "--order", type=WholeNumber(1, 6), default=3, show_default=True,
              help="N-gram order of the approximation.")
@click.option("--ids", is_flag=True, help="TEXT is Kaldi text (first field = utterance id).")
@click.option("--min-backoff", type=FiniteFloat(0.0, 1.0, max_open=True), default=0.01,
              show_default=True,
              help="Least probability mass each context leaves to back-off (unseen words).")
@click.option("--batch-tokens", type=WholeNumber(min=1), default=4096, show_default=True,
              help="Padded positions per forward pass (as rescore-nbest).")
@click.option("--device", default="cpu", show_default=True, help="torch device (cpu, cuda).")
@click.option("--threads", type=WholeNumber(min=0), default=0, show_default=True,
              help="CPU threads for torch (0 = OMP_NUM_THREADS if set, else min(CPUs, 4)).")
@click.option("--precision", type=WholeNumber(1, 17), default=7, show_default=True,
              help="Digits after the point of the log10 numbers in the ARPA file.")
@click.option("--public", is_flag=True,
              help="Declare TEXT public: the ARPA then records no private "
                   "data. Without it the ARPA carries a '#private_raw' header and privacy-report "
                   "calls it NOT private; you assert that the text is public.")
@click.option("--allow-seeded-test-noise", "allow_seeded", is_flag=True,
              help="Tests only: accept inputs made with seeded (not private) noise.")
@output_option
@common_options
def approx_ngram(text, model_path, order, ids, min_backoff, batch_tokens, device, threads,
                 precision, output, public=False, allow_seeded=False):
    """Write an ARPA n-gram approximating the neural LM MODEL on TEXT (Singh et al. 2017).

    For every token of TEXT (its words and each sentence's </s>) the neural LM's probability
    given the whole sentence so far is assigned to the token's 1..N-gram (histories stop at
    <s>) and averaged per n-gram (probabilities, not logs). Each context's averages are
    normalized and keep max(--min-backoff, 1 - their sum) for back-off; back-off weights make
    each context sum to 1 with the order below (asrpriv/ngram/approx.py gives the formulas).
    The vocabulary is TEXT's words as the model knows them (others are <unk>). kenlm loads
    the output; rescore-nbest/perplexity --lm score it like any ARPA.
    """
    from asrpriv.rescore.approx import ApproxSettings, approx_ngram as run

    result = run(ApproxSettings(text=text, model=model_path, order=order, ids=ids,
                                min_backoff=min_backoff, batch_tokens=batch_tokens, device=device,
                                threads=threads, precision=precision, output=output, public=public,
                                allow_seeded=allow_seeded))
    info(result.summary())
