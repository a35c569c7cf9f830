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
@click.option("--classes", "classes_out", metavar="FILE", default=None,
              help="Train a class LM: write its membership file here (SRILM -classes format, "
                   "'CLASS p word', p = P(word|CLASS) from counts) and the ARPA over class tokens "
                   "(<PER>, ...) to -o. Members come from --spans (Kaldi text, --ids implied).")
@click.option("--spans", "spans_path", metavar="FILE", default=None,
              help="With --classes: entity spans of TEXT (the TSV of examples/data/ami/ne/).")
@click.option("--class-names", default="PER,LOC,ORG,TIME,NUM", show_default=True, metavar="C1,C2,...",
              help="With --classes: the entity classes that become LM classes.")
@click.option("--member-share", type=click.FloatRange(0.0, 1.0, min_open=True), default=0.5,
              show_default=True,
              help="With --classes: a word joins class C when at least this share of its "
                   "occurrences lie in spans of C (then all its occurrences count as C).")
@click.option("--precision", type=click.IntRange(1, 17), default=7, show_default=True,
              help="Digits after the point of the log10 numbers in the ARPA file.")
@click.option("--public", is_flag=True,
              help="Declare TEXT public (a background corpus): the ARPA then records no private "
                   "data. Without it the ARPA carries a '#private_raw' header and privacy-report "
                   "calls it NOT private; you assert that the text is public.")
@output_option
@common_options
def train_ngram(text: str, order: int, ids: bool, vocab_path: str | None, discount_fallback: bool,
                classes_out: str | None, spans_path: str | None, class_names: str,
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
    import time

    from asrpriv.errors import AsrprivError, InputError
    from asrpriv.ngram.counting import EmptyTextError, read_sentences, read_vocab
    from asrpriv.ngram.kneser_ney import DiscountError
    from asrpriv.ngram.trainer import train

    start = time.perf_counter()
    vocab = read_vocab(vocab_path) if vocab_path is not None else None
    sentences = read_sentences(text, ids=ids)
    class_map = None
    if (classes_out is None) != (spans_path is None):
        raise AsrprivError("--classes FILE and --spans FILE go together")
    if classes_out is not None:
        if vocab is not None:
            raise AsrprivError("--vocab and --classes together are not supported")
        from asrpriv.io.kaldi import iter_text
        from asrpriv.io.output import check_writable
        from asrpriv.ngram.classes import membership_from_spans
        from asrpriv.sanitize.spans import read_spans

        check_writable(classes_out, "--classes")
        spans_by_utt = read_spans(spans_path)
        utts = [(utt, words) for _lineno, utt, words in iter_text(text)]
        names = [c.strip() for c in class_names.split(",") if c.strip()]
        class_map, _counts = membership_from_spans(utts, spans_by_utt, names, member_share)
        sentences = (class_map.map_words(words) for _utt, words in utts if words)
    try:
        model = train(sentences, order, vocab=vocab, discount_fallback=discount_fallback)
    except DiscountError as err:
        raise AsrprivError(f"{err}; try --discount-fallback") from None
    except EmptyTextError:
        raise InputError(text, None, "empty input: expected text, one sentence per line") from None
    from asrpriv.io.output import open_output

    from asrpriv.provenance import Inputs, write_arpa_header

    inputs = Inputs()
    inputs.add_text(text, public)
    with open_output(output) as out:
        write_arpa_header(out, "train-ngram", inputs.state())
        model.write(out, precision)
    if class_map is not None:
        with open_output(classes_out) as out:
            class_map.write(out)
        info("train-ngram: classes " + ", ".join(
            f"{c} {len(rows)} words" for c, rows in sorted(class_map.classes().items())))
    counts = model.counts
    info(f"train-ngram: {counts.sentences} sentences, {counts.tokens} words"
         + (f" ({counts.oov_tokens} mapped to <unk>)" if vocab is not None else "")
         + f"; n-grams {' '.join(str(c) for c in model.ngram_counts())}; "
         + "discounts " + "; ".join(
             f"{n}: " + ",".join(f"{d:.3f}" for d in est.discounts) + (" (fallback)" if est.fallback else "")
             for n, est in enumerate(model.orders, 1))
         + f"; {time.perf_counter() - start:.1f} s")
