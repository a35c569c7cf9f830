"""``asrpriv pick-best``: the setting with the lowest WER (or perplexity) among JSON reports."""

from __future__ import annotations

import click

from asrpriv.commands.options import common_options, output_option


@click.command("pick-best")
@click.argument("candidates", nargs=-1, required=True, metavar="LABEL=REPORT...")
@click.option("--key", default="wer", show_default=True,
              help="The number compared, lowest wins: wer (score-wer --format json), ppl "
                   "(perplexity --json), ...")
@click.option("--name", default="setting", show_default=True,
              help="What the labels are (e.g. lambda), for the messages.")
@output_option
@common_options
def pick_best(candidates, key, name, output):
    """Write the LABEL whose REPORT has the lowest KEY (ties: the first given).

    Give the candidates in grid order: when the best is the first or the last of two or
    more, a warning says it lies on the edge of the grid (widen the grid: the optimum may
    lie beyond it). Each candidate's value is said on stderr.

    \b
    Example:
      asrpriv pick-best --name lambda 0.25=l0.25/wer.json 0.5=l0.5/wer.json 1=l1/wer.json
    """
    from asrpriv.errors import AsrprivError
    from asrpriv.io.output import open_output
    from asrpriv.io.select import pick_lowest
    from asrpriv.commands.options import info, warn

    pairs = []
    for arg in candidates:
        label, sep, path = arg.partition("=")
        if not sep or not label or not path:
            raise AsrprivError(f"expected LABEL=REPORT, got {arg!r}")
        pairs.append((label, path))
    best, values, edge = pick_lowest(pairs, key)
    info(f"pick-best: {name} " + ", ".join(f"{label}: {key} {v:.6g}" for (label, _), v in zip(pairs, values))
         + f"; best {best}")
    if edge:
        warn(f"best {name} {best} on the edge of the grid ({' '.join(label for label, _ in pairs)}): "
             "consider widening it")
    with open_output(output) as out:
        out.write(f"{best}\n")
