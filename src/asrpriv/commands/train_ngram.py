"""``asrpriv train-ngram``: train a back-off n-gram LM (modified Kneser-Ney) and write ARPA."""

from __future__ import annotations

import click

from asrpriv.commands.options import FiniteFloat, WholeNumber, common_options, info, output_option


@click.command("train-ngram")
@click.argument("text", default="-", metavar="[TEXT]")
@click.option("-n", "--order", type=WholeNumber(1, 9), default=3, show_default=True,
              help="N-gram order.")
@click.option("--ids", is_flag=True,
              help="TEXT is Kaldi text: the first token of each line is an utterance id.")
@click.option("--vocab", "vocab_path", metavar="FILE", default=None,
              help="Closed vocabulary (words, one per line): other words become <unk>; "
                   "listed words that never occur get unigrams too.")
@click.option("--discount-fallback", is_flag=True,
              help="When the text is too small to estimate an order's discounts, use "
                   "D1,D2,D3+ = 0.5,1,1.5 (lmplz's fallback) instead of failing.")
@click.option("--classes", "classes_out", metavar="FILE", default=None,
              help="Train a class LM: write its membership file here (SRILM -classes format, "
                   "'CLASS p word', p = P(word|CLASS) from counts) and the ARPA over class tokens "
                   "(<PER>, ...) to -o. Members come from --spans (Kaldi text, --ids implied).")
@click.option("--spans", "spans_path", metavar="FILE", multiple=True,
              help="With --classes: entity spans of TEXT (the TSV of examples/data/ami/ne/); "
                   "repeat it for a TEXT that is several texts one after the other.")
@click.option("--class-names", default="PER,LOC,ORG,TIME,NUM", show_default=True, metavar="C1,C2,...",
              help="With --classes: the entity classes that become LM classes.")
@click.option("--member-share", type=FiniteFloat(0.0, 1.0, min_open=True), default=0.5,
              show_default=True,
              help="With --classes: a word joins class C when at least this share of its "
                   "occurrences lie in spans of C (then all its occurrences count as C).")
@click.option("--precision", type=WholeNumber(1, 17), default=7, show_default=True,
              help="Digits after the point of the log10 numbers in the ARPA file.")
@click.option("--public", is_flag=True,
              help="Declare TEXT public (a background corpus): the ARPA then records no private "
                   "data. Without it the ARPA carries a '#private_raw' header and privacy-report "
                   "calls it NOT private; you assert that the text is public.")
@output_option
@common_options
def train_ngram(text: str, order: int, ids: bool, vocab_path: str | None, discount_fallback: bool,
                classes_out: str | None, spans_path: tuple[str, ...], class_names: str,
                member_share: float, precision: int, output: str, public: bool = False) -> None:
    """Train an interpolated modified Kneser-Ney LM on TEXT and write it as ARPA (log10).

    One sentence per line (TEXT '-' = stdin; .gz is read transparently). Sentences are framed
    with <s> and </s>; <s> gets log10 probability -99. The estimate follows KenLM's lmplz:
    discounts D1, D2, D3+ per order from count-of-counts (Chen & Goodman Eq. 26), continuation
    counts for lower orders, unigrams interpolated with the uniform distribution, so <unk>
    gets the uniform share of the back-off mass. The model is normalized: back-off weights
    are the interpolation weights.

    With --classes (paper 003 §2.2): a class LM with deterministic word classes. Words that
    lie mostly inside --spans of a class become its members; every occurrence of a member is
    replaced by the class token, the ARPA is trained on that text, and P(w|c) is the
    member's share of its class's count. Score it with perplexity/rescore-nbest --classes:
    P(w|h) = P(c(w)|c(h)) P(w|c(w)).
    """
    from asrpriv.ngram.trainer import TrainSettings, train_ngram as run

    result = run(TrainSettings(text=text, order=order, ids=ids, vocab=vocab_path,
                               discount_fallback=discount_fallback, classes_out=classes_out,
                               spans=list(spans_path) or None, class_names=class_names,
                               member_share=member_share, precision=precision, output=output,
                               public=public))
    for line in result.notes():
        info(line)
