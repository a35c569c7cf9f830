"""``asrpriv select-text``: lines, a sample, the word count or the vocabulary of (Kaldi) text, or
its split by whole meetings."""

from __future__ import annotations

import click

from asrpriv.commands.options import (FiniteFloat, WholeNumber, common_options, output_option,
                                      seed_option)


@click.command("select-text")
@click.argument("input_path", metavar="[TEXT]", default="-")
@click.option("--out-format", type=click.Choice(["text", "kaldi"]), default="text",
              show_default=True,
              help="kaldi: -o is a Kaldi wspecifier (ark,t:FILE, ark,t:-, 'ark:| gzip -c > "
                   "text.gz', ark,scp:A.ark,A.scp) and the lines are written as a Kaldi table.")
@click.option("--words", "words", metavar="words.txt", default=None,
              help="Symbol table: a Kaldi table input holds word ids (e.g. ark:words.ark); "
                   "with --out-format kaldi, write word ids (binary int32 vectors unless ark,t:).")
@click.option("--ids/--no-ids", default=True, show_default=True,
              help="Kaldi text: the first field of a line is the utterance id, not a word.")
@click.option("--id-regex", metavar="RE", default=None,
              help="Keep lines whose id matches RE (Python re.search; anchor with ^).")
@click.option("--exclude-id-regex", metavar="RE", default=None,
              help="Drop lines whose id matches RE.")
@click.option("--max-words-per-line", type=WholeNumber(min=0), default=None, metavar="N",
              help="Keep lines of at most N words (after the id with --ids), e.g. the short "
                   "utterances of a reference; applied with the id filters, before --every.")
@click.option("--every", type=WholeNumber(min=1), default=None, metavar="K",
              help="Keep lines K, 2K, 3K... (numbered after the id filters), e.g. a held-out slice.")
@click.option("--drop-every", type=WholeNumber(min=1), default=None, metavar="K",
              help="Drop lines K, 2K, 3K... instead (the rest of that slice).")
@click.option("--max-words", type=WholeNumber(min=1), default=None, metavar="N",
              help="Then keep about N words, lines taken evenly: every k-th line, "
                   "k = ceil(W / N), W = the words of the selected lines (or of --words-of).")
@click.option("--words-of", metavar="FILE", default=None,
              help="With --max-words: W = the words of FILE (cut two files alike).")
@click.option("--spread", is_flag=True,
              help="With --max-words: keep line i when floor(i r) > floor((i-1) r), r = N / W, "
                   "instead of every k-th line.")
@click.option("--count-words", is_flag=True, help="Write the number of words of the selection.")
@click.option("--vocab", is_flag=True,
              help="Write the selection's distinct words, sorted (code-point order), one per line.")
@click.option("--classes", "membership", metavar="FILE", default=None,
              help="Replace every member word by its class token (<CLASS>) of this membership "
                   "file (train-ngram --classes).")
@click.option("--split-dir", metavar="DIR", default=None,
              help="Instead of selecting: split the text by whole meetings (ids MEETING_N) into "
                   "DIR, an existing folder: train, heldout and adaptF (.txt and _ne.tsv) and "
                   "split.json (paper 003's sets; needs --spans, --heldout-share, "
                   "--adapt-shares, --seed).")
@click.option("--spans", metavar="NE.tsv", default=None,
              help="With --split-dir: the span TSV whose rows follow their lines.")
@click.option("--heldout-share", type=FiniteFloat(), default=None, metavar="P",
              help="With --split-dir: hold out P% of all words (scenario meetings ES/IS/TS).")
@click.option("--adapt-shares", metavar="'F ...'", default=None,
              help="With --split-dir: nested adaptation sets of F% of T's words each "
                   "(scenario meetings, disjoint from T), e.g. '12 15 20'.")
@seed_option("With --split-dir: the seed of the meetings' shuffle (a repeatable split).")
@output_option
@common_options
def select_text(input_path, out_format, words, ids, id_regex, exclude_id_regex, max_words_per_line, every, drop_every,
                max_words, words_of, spread, count_words, vocab, membership, split_dir, spans, heldout_share,
                adapt_shares, seed, output):
    """Select lines of text (default: Kaldi text, 'utt_id word ...'), in file order.

    TEXT may be a file, '-', a Kaldi table (ark,t:-, 'ark:gunzip -c text.gz |', scp:FILE)
    or a lhotse supervision/cut manifest (.jsonl.gz; its supervisions' text).

    Filters apply in the order of the options below; the output is the selected lines, or
    their word count (--count-words), vocabulary (--vocab) or class-mapped text (--classes).
    With --split-dir the text is split by whole meetings into a folder instead (no filters).

    \b
    Examples:
      asrpriv select-text --id-regex '^(EN|IB|IN)' train_text -o background.txt
      asrpriv select-text --drop-every 20 all.txt | asrpriv select-text --max-words 240000 -
      asrpriv select-text --count-words train.txt
      asrpriv select-text --max-words-per-line 4 eval.ref -o short.ref
      asrpriv select-text --split-dir split --spans ne/train_ne.tsv --heldout-share 5 \\
        --adapt-shares '12 15 20' --seed 17 train_text
    """
    from asrpriv.io.select import SelectTextSettings, select_text as run

    run(SelectTextSettings(input=input_path, ids=ids, id_regex=id_regex,
                           exclude_id_regex=exclude_id_regex,
                           max_words_per_line=max_words_per_line, every=every,
                           drop_every=drop_every, max_words=max_words, words_of=words_of,
                           spread=spread, count_words=count_words, vocab=vocab,
                           classes=membership, output=output, out_format=out_format,
                           words=words, split_dir=split_dir, spans=spans,
                           heldout_share=heldout_share, adapt_shares=adapt_shares, seed=seed))
