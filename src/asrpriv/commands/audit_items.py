"""``asrpriv audit-items``: the items of a leakage audit (paper 004 §4.3) from Kaldi text."""

from __future__ import annotations

import click

from asrpriv.commands.options import WholeNumber, common_options, info


@click.command("audit-items")
@click.option("--text", "text_path", required=True, metavar="TEXT", help="Kaldi text (utt_id word ...).")
@click.option("--utt2spk", required=True, metavar="FILE", help="utterance -> speaker (Kaldi utt2spk).")
@click.option("--id-regex", default="^(ES|IS|TS)", show_default=True, metavar="RE",
              help="Only utterances whose id matches RE (AMI: the scenario meetings).")
@click.option("--speakers", type=WholeNumber(min=0), default=0, show_default=True,
              help="At most this many speakers, half women half men where possible (0 = all).")
@click.option("--subsets", type=WholeNumber(min=1), default=4, show_default=True,
              help="Contiguous subsets (items) per speaker, cut by words.")
@click.option("--max-words", type=WholeNumber(min=0), default=0, show_default=True,
              help="Words per item at most: its first utterances (0 = the whole subset).")
@click.option("--min-words", type=WholeNumber(min=0), default=100, show_default=True,
              help="A speaker needs SUBSETS x this many words.")
@click.option("-o", "--output-dir", "output_dir", required=True, metavar="DIR",
              help="Writes DIR/speakers, utt2item, items.tsv (client = item), items.txt, labels.tsv "
                   "(item speaker gender meeting).")
@common_options
def audit_items(text_path, utt2spk, id_regex, speakers, subsets, max_words, min_words, output_dir):
    """Cut each speaker's utterances (time order) into SUBSETS items of a leakage audit.

    Item SPEAKER_k holds the utterances of the k-th contiguous part of the speaker's words
    (004's sub-talks); the most talkative speakers with enough words are kept, balanced by
    gender (the first letter of an AMI speaker id). Labels: speaker, gender, and the meeting
    of most of the item's utterances. cluster-weights --labels reads labels.tsv.
    """
    from asrpriv.audit.subsets import AuditItemsSettings, audit_items as run

    items = run(AuditItemsSettings(text=text_path, utt2spk=utt2spk, output_dir=output_dir,
                                   id_regex=id_regex, speakers=speakers, subsets=subsets,
                                   max_words=max_words, min_words=min_words))
    info(f"audit-items: {len(items.speakers)} speaker(s), {len(items.labels)} item(s), "
         f"{len(items.utt2item)} utterance(s)")
