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


def run_time(seconds: int | float, out: str, artefacts: str, started: float | None = None) -> str:
    """The run-time sentence of a recipe's report.

    SECONDS is this invocation's wall time. ARTEFACTS is a glob (relative to OUT) of files that
    each mark one computed artefact (e.g. 'runs/*/run.key'); those older than this invocation's
    start were reused from a cache made by an earlier run, and then the sentence says so instead
    of passing SECONDS off as the cost of the computation.
    """
    seconds = int(seconds)
    start = (time.time() if started is None else started) - seconds - 2
    files = [p for p in glob.glob(os.path.join(out, artefacts)) if os.path.isfile(p)]
    reused = [p for p in files if os.path.getmtime(p) < start]
    text = f"Run time {seconds} s = {seconds // 60} min {seconds % 60} s (this invocation, measured by the recipe)"
    if files and reused:
        text += (f"; {len(reused)} of {len(files)} artefacts were reused from the cache of an earlier "
                 "invocation, so this is NOT the cost of the computation (see that run's log)")
    return text


def fmt_duration(seconds: int | float) -> str:
    """'7384 s = 2 h 3 min 4 s' (minutes and seconds only under an hour)."""
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{seconds} s = " + (f"{h} h {m} min {s} s" if h else f"{m} min {s} s")


def read_runtime(path: str | None) -> list[dict]:
    """The invocations recorded in a recipe's OUT/runtime.tsv ('seconds<TAB>started<TAB>command'
    lines after a header, one per invocation, appended by recipe.sh's runtime_record)."""
    if not path or not os.path.exists(path):
        return []
    parts = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t", 2)
            if len(fields) == 3 and fields[0].isdigit():
                parts.append({"seconds": int(fields[0]), "started": fields[1], "command": fields[2]})
    return parts


def _epoch(started: str) -> float | None:
    from datetime import datetime

    try:
        return datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def made_by(parts: list[dict], out: str, artefacts: str = "**/*.key") -> str:
    """The command(s) and run time of a result made by one or several invocations of its recipe.

    PARTS are :func:`read_runtime`'s lines: one invocation gives 'Made by `CMD`' and its time;
    several (a rerun that reused what earlier ones left in the cache) are listed, each with its
    time, and the run time is their sum. ARTEFACTS (a recursive glob relative to OUT, the
    artefacts' key files by default) finds artefacts older than the first recorded invocation:
    made by an invocation that recorded no time, so the sum leaves it out, and the text says so.
    """
    total = sum(p["seconds"] for p in parts)
    if len(parts) == 1:
        p = parts[0]
        text = (f"Made by `{p['command']}` (started {p['started']}). Run time {fmt_duration(total)} "
                "(measured by the recipe).")
    else:
        text = (f"Made in {len(parts)} invocations, each reusing what the earlier ones left in the "
                "cache (a reused artefact is computed once, by the invocation that made it):\n\n" +
                "\n".join(f"{i}. `{p['command']}` (started {p['started']}): {fmt_duration(p['seconds'])}"
                          for i, p in enumerate(parts, 1)) +
                f"\n\nRun time, summed over the {len(parts)} invocations: {fmt_duration(total)} "
                "(each measured by the recipe).")
    starts = [t for t in (_epoch(p["started"]) for p in parts) if t is not None]
    if starts:
        first = min(starts)
        files = [p for p in glob.glob(os.path.join(out, artefacts), recursive=True) if os.path.isfile(p)]
        older = sorted(p for p in files if os.path.getmtime(p) < first - 2)
        if older:
            names = ", ".join(f"`{os.path.relpath(p, out)}`" for p in older[:3])
            text += (f" {len(older)} of {len(files)} artefacts (e.g. {names}) are older than the first "
                     "recorded invocation: an invocation that recorded no run time made them, and the "
                     "sum leaves its time out.")
    return text


def fmt_eps(value: float) -> str:
    """Epsilon rounded once, to 4 significant digits (privacy-report's own text precision)."""
    return f"{value:.4g}"
