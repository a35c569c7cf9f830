"""``asrpriv select-nbest``: rows, clients, 1-best text or references of an N-best TSV."""

from __future__ import annotations

import click

from asrpriv.commands.options import WholeNumber, common_options, output_option


@click.command("select-nbest")
@click.argument("input_path", metavar="[NBEST]", default="-")
@click.option("--clients", default=None, metavar="LIST",
              help="Keep only these clients (comma- or space-separated).")
@click.option("--exclude-clients", default=None, metavar="LIST", help="Drop these clients.")
@click.option("--max-per-client", type=WholeNumber(min=1), default=None,
              help="Keep only each client's first N utterances (file order).")
@click.option("--top", type=WholeNumber(min=1), default=None,
              help="Keep only the first N hypotheses of each utterance (by rank).")
@click.option("--best", is_flag=True,
              help="Write Kaldi text (utt_id text) of each utterance's best hypothesis (rank 1, "
                   "else the first row), for score-wer.")
@click.option("--references", "ref_path", metavar="REF", default=None,
              help="Write the lines of the Kaldi text REF of the selected utterances (REF order).")
@click.option("--reference-rows", "rows_path", metavar="REF", default=None,
              help="Write an N-best TSV (utt_id client rank text) holding each selected "
                   "utterance's reference from REF as its only hypothesis (REF order).")
@click.option("--list-clients", is_flag=True,
              help="Write the selected utterances' distinct clients, sorted, one per line.")
@click.option("--every", type=WholeNumber(min=1), default=None, metavar="K",
              help="With --list-clients: only the 1st, (K+1)th, (2K+1)th... client (e.g. every "
                   "4th meeting tunes, the others evaluate).")
@click.option("--others", is_flag=True, help="With --every: the clients it leaves out.")
@click.option("--part", type=WholeNumber(min=1), default=None, metavar="I",
              help="With --list-clients and --parts K: then only part I of K contiguous parts "
                   "of the list (of n: clients floor((I-1)n/K)+1 .. floor(In/K); K = 2: halves).")
@click.option("--parts", type=WholeNumber(min=1), default=None, metavar="K",
              help="With --part: the number of parts.")
@click.option("--first", type=WholeNumber(min=1), default=None, metavar="N",
              help="With --list-clients: then only the first N clients (all when fewer).")
@click.option("--utt2client", default=None, metavar="MAP",
              help="With --list-clients: list the clients of this Kaldi map (utt_id client, e.g. "
                   "utt2spk: speakers) instead of the client column.")
@click.option("--out-format", type=click.Choice(["text", "kaldi"]), default="text",
              show_default=True,
              help="With --best or --references: kaldi = -o is a Kaldi wspecifier (ark,t:FILE, "
                   "'ark:| gzip -c > hyp.gz', ark,scp:A.ark,A.scp) written as a Kaldi table.")
@click.option("--words", "words", metavar="words.txt", default=None,
              help="With --out-format kaldi: write word ids of this symbol table (binary "
                   "int32 vectors unless ark,t:).")
@output_option
@common_options
def select_nbest(input_path, clients, exclude_clients, max_per_client, top, best, ref_path,
                 rows_path, list_clients, every, others, part, parts, first, utt2client, out_format,
                 words, output):
    """Select from an N-best TSV (columns found by name): rows of some clients (default: an
    N-best TSV with the input's header), or, of the selected utterances, the 1-best text
    (--best), the references (--references), reference rows (--reference-rows) or the
    clients (--list-clients).

    \b
    Examples:
      asrpriv select-nbest --list-clients --every 4 dev.tsv         # tuning meetings
      asrpriv select-nbest --list-clients --part 1 --parts 2 adapt.tsv   # the first half
      asrpriv select-nbest --clients "ES2011b ES2011c" --max-per-client 40 dev.tsv -o part.tsv
      asrpriv select-nbest --best rescored.tsv -o hyp.txt
      asrpriv select-nbest --references ref.txt part.tsv -o part.ref
    """
    from asrpriv.io.select import SelectNbestSettings, select_nbest as run

    run(SelectNbestSettings(input=input_path, clients=clients, exclude_clients=exclude_clients,
                            max_per_client=max_per_client, top=top, best=best,
                            references=ref_path, reference_rows=rows_path,
                            list_clients=list_clients, every=every, others=others,
                            part=part, parts=parts, first=first,
                            utt2client=utt2client, output=output, out_format=out_format,
                            words=words))
