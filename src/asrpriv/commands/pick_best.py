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
    from asrpriv.commands.options import info, warn
    from asrpriv.io.select import PickSettings, pick_best as run

    result = run(PickSettings(candidates=candidates, key=key, name=name, output=output))
    info(result.summary())
    if result.edge:
        warn(result.edge_warning())
