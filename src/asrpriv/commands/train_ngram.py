"""``asrpriv train-ngram``: train a back-off n-gram LM (modified Kneser-Ney) and write ARPA."""

from __future__ import annotations

import click

from asrpriv.options import common_options, info, output_option


@click.command("train-ngram")
@click.argument("text", default="-", metavar="[TEXT]")
@click.option("-n", "--order", type=click.IntRange(1, 9), default=3, show_default=True,
              help="N-gram order.")
@click.option("--ids", is_flag=True,
              help="TEXT is Kaldi text: the first token of each line is an utterance id.")
@click.option("--vocab", "vocab_path", metavar="FILE", default=None,
              help="Closed vocabulary (words, one per line): other words become <unk>; "
                   "listed words that never occur get unigrams too.")
@click.option("--discount-fallback", is_flag=True,
              help="When the text is too small to estimate an order's discounts, use "
                   "D1,D2,D3+ = 0.5,1,1.5 (lmplz's fallback) instead of failing.")
@click.option("--precision", type=click.IntRange(1, 17), default=7, show_default=True,
              help="Digits after the point of the log10 numbers in the ARPA file.")
@output_option
@common_options
def train_ngram(text: str, order: int, ids: bool, vocab_path: str | None, discount_fallback: bool,
                precision: int, output: str) -> None:
    """Train an interpolated modified Kneser-Ney LM on TEXT and write it as ARPA (log10).

    One sentence per line (TEXT '-' = stdin; .gz is read transparently). Sentences are framed
    with <s> and </s>; <s> gets log10 probability -99. The estimate follows KenLM's lmplz:
    discounts D1, D2, D3+ per order from count-of-counts (Chen & Goodman Eq. 26), continuation
    counts for lower orders, unigrams interpolated with the uniform distribution, so <unk>
    gets the uniform share of the back-off mass. The model is normalized: back-off weights
    are the interpolation weights.
    """
    import time

    from asrpriv.errors import AsrprivError, InputError
    from asrpriv.ngram.counting import EmptyTextError, read_sentences, read_vocab
    from asrpriv.ngram.kneser_ney import DiscountError
    from asrpriv.ngram.trainer import train

    start = time.perf_counter()
    vocab = read_vocab(vocab_path) if vocab_path is not None else None
    try:
        model = train(read_sentences(text, ids=ids), order, vocab=vocab,
                      discount_fallback=discount_fallback)
    except DiscountError as err:
        raise AsrprivError(f"{err}; try --discount-fallback") from None
    except EmptyTextError:
        raise InputError(text, None, "empty input: expected text, one sentence per line") from None
    from asrpriv.io.output import open_output

    with open_output(output) as out:
        model.write(out, precision)
    counts = model.counts
    info(f"train-ngram: {counts.sentences} sentences, {counts.tokens} words"
         + (f" ({counts.oov_tokens} mapped to <unk>)" if vocab is not None else "")
         + f"; n-grams {' '.join(str(c) for c in model.ngram_counts())}; "
         + "discounts " + "; ".join(
             f"{n}: " + ",".join(f"{d:.3f}" for d in est.discounts) + (" (fallback)" if est.fallback else "")
             for n, est in enumerate(model.orders, 1))
         + f"; {time.perf_counter() - start:.1f} s")
