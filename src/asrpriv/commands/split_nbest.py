"""``asrpriv split-nbest``: cut an N-best TSV into per-client time-ordered parts (FL rounds)."""

from __future__ import annotations

import click

from asrpriv.commands.options import WholeNumber, common_options, info


@click.command("split-nbest")
@click.argument("input_path", metavar="[NBEST]", default="-")
@click.option("--parts", type=WholeNumber(min=1), default=1, show_default=True,
              help="Split each client's utterances, in file (time) order, into this many "
                   "contiguous parts of near-equal size (T+1 groups for T FL rounds).")
@click.option("--clients", default=None, metavar="LIST",
              help="Keep only these clients (comma- or space-separated).")
@click.option("--exclude-clients", default=None, metavar="LIST", help="Drop these clients.")
@click.option("--max-per-client", type=WholeNumber(min=1), default=None,
              help="Keep only each client's first N utterances.")
@click.option("--utt2client", metavar="FILE", default=None,
              help="Map utterance id -> client (default: the 'client' column).")
@click.option("-o", "--output-dir", "output_dir", required=True, metavar="DIR",
              help="Write DIR/part-0.tsv ... DIR/part-(K-1).tsv, each an N-best TSV with the "
                   "input's header; written atomically. With --parts 1, '-', /dev/stdout, "
                   "/dev/fd/N or >(cmd) receive the one part as a TSV stream.")
@common_options
def split_nbest(input_path, parts, clients, exclude_clients, max_per_client, utt2client, output_dir):
    """Split an N-best TSV by client into time-ordered parts.

    Part k holds, for every client, the k-th of its utterances cut into --parts contiguous
    pieces (the first pieces get one more utterance when sizes differ), as in the FMP paper's
    simulation (000 Sec. 3.2): group t is what each client sees in FL round t.
    """
    from asrpriv.rescore.split import SplitSettings, split_nbest as run

    result = run(SplitSettings(input=input_path, parts=parts, output_dir=output_dir,
                               clients=clients, exclude_clients=exclude_clients,
                               max_per_client=max_per_client, utt2client=utt2client))
    info(result.summary())
