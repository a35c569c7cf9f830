"""What every results report says the same way: which data, how long, which interval.

The data sentence: every WER in examples/results rests on AMI text spoken by the flite
synthesizer and decoded by pocketsphinx (examples/data/README.md). A report names its data from
DATA_DIR/SOURCE.txt (its first line), so a report made on other data never claims to be AMI.
"""

from __future__ import annotations

import glob
import os
import time

# the one sentence that names the bundled AMI set (examples/data/ami/SOURCE.txt holds it too)
DATA_NAME = "AMI text synthesized by flite, decoded by pocketsphinx 5.1.1 (synthetic speech)"
# what that implies for comparisons with the papers (examples/data/README.md has the facts)
DATA_IMPLIES = ("Clean synthetic acoustics, one flite voice per speaker, no overlap or far-field "
                "noise, and a bigram first pass (the N-best scores come from pocketsphinx's generic "
                "en-us bigram LM): WER levels and the size of LM gains are not comparable with the "
                "papers' recorded speech and stronger first passes; compare directions only.")
SOURCE_FILE = "SOURCE.txt"


def data_name(data_dir: str | None) -> str:
    """The name of the data in DATA_DIR: the first line of DATA_DIR/SOURCE.txt.

    Without the file (or without a DATA_DIR) the name says that the origin is not recorded,
    never a guess.
    """
    if not data_dir:
        return "data not named (the report was not given its DATA_DIR)"
    path = os.path.join(data_dir, SOURCE_FILE)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            first = f.readline().strip()
        if first:
            return first
    return f"the N-best lists in {data_dir} (origin not recorded: no {SOURCE_FILE})"


def data_paragraph(data_dir: str | None) -> str:
    """'Data: NAME. IMPLICATIONS' -- the implications only for the bundled synthetic AMI set."""
    name = data_name(data_dir)
    text = f"**Data: {name}.**"
    if name == DATA_NAME:
        text += " " + DATA_IMPLIES
    return text


RUNTIME_FILE = "runtime.tsv"   # OUT/runtime.tsv: one 'seconds<TAB>command' line per invocation


def read_runtime(out: str) -> list[tuple[int, str]]:
    """The invocations recorded in OUT/runtime.tsv, oldest first: (seconds, command).

    A recipe appends one line per invocation (bin/lib/recipe.sh: recipe_runtime_record), so a
    run split into parts, each resuming from the cached artefacts of the earlier ones, is timed
    as the sum of its parts. Lines that are not 'seconds<TAB>command' are skipped.
    """
    path = os.path.join(out, RUNTIME_FILE)
    parts: list[tuple[int, str]] = []
    if not os.path.exists(path):
        return parts
    with open(path, encoding="utf-8") as f:
        for line in f:
            seconds, tab, command = line.rstrip("\n").partition("\t")
            if tab and seconds.strip().isdigit():
                parts.append((int(seconds), command.strip()))
    return parts


def _duration(seconds: int) -> str:
    return f"{seconds:,} s = {seconds // 60} min {seconds % 60} s"


def run_time(seconds: int | float, out: str, artefacts: str, started: float | None = None) -> str:
    """The run-time sentence of a recipe's report.

    With OUT/runtime.tsv (the recipe appends 'seconds<TAB>command' per invocation, this one
    last) the sentence lists every invocation into OUT and their summed time: the cost of a run
    made in parts. A line whose command starts with '(' marks invocations made before the file
    was kept (their time is unknown: the sum is then a lower bound).

    Without it: SECONDS is this invocation's wall time. ARTEFACTS is a glob (relative to OUT) of
    files that each mark one computed artefact (e.g. 'runs/*/run.key'); those older than this
    invocation's start were reused from a cache made by an earlier run, and then the sentence
    says so instead of passing SECONDS off as the cost of the computation.
    """
    seconds = int(seconds)
    parts = read_runtime(out)
    untimed = [c for _s, c in parts if c.startswith("(")]
    timed = [(s, c) for s, c in parts if not c.startswith("(")]
    if len(timed) > 1 or (timed and untimed):
        total = sum(s for s, _c in timed)
        listed = "; ".join(f"part {k}: {s:,} s `{c}`" for k, (s, c) in enumerate(timed, 1))
        text = (f"Run time {_duration(total)} in all: the sum of the {len(timed)} invocations into "
                f"this OUT_DIR ({RUNTIME_FILE}; each later part resumed from the cached artefacts of "
                f"the earlier ones, measured by the recipe): {listed}")
        if untimed:
            text += ("; plus earlier invocations made before the recipe kept runtime.tsv, whose time "
                     "is not known, so this sum is a lower bound")
        return text
    if timed:
        seconds, command = timed[0]
        text = f"Run time {_duration(seconds)} (`{command}`, measured by the recipe)"
    else:
        text = f"Run time {_duration(seconds)} (this invocation, measured by the recipe)"
    start = (time.time() if started is None else started) - seconds - 2
    files = [p for p in glob.glob(os.path.join(out, artefacts)) if os.path.isfile(p)]
    reused = [p for p in files if os.path.getmtime(p) < start]
    if (files and reused) or untimed:
        text += (f"; {len(reused)} of {len(files)} artefacts were reused from the cache of an earlier "
                 "invocation, so this is NOT the cost of the computation (see that run's log)")
    return text


def fmt_eps(value: float) -> str:
    """Epsilon rounded once, to 4 significant digits (privacy-report's own text precision)."""
    return f"{value:.4g}"
