"""What every results report says the same way: which data, how long, which interval.

The data sentence: every WER in examples/results rests on AMI text spoken by the flite
synthesizer and decoded by pocketsphinx (examples/data/README.md). A report names its data from
DATA_DIR/SOURCE.txt (its first line), so a report made on other data never claims to be AMI.
"""

from __future__ import annotations

import glob
import json
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


RUNTIME_FILE = "runtime.tsv"   # OUT/runtime.tsv: one 'seconds<TAB>start<TAB>command' line per invocation


def run_time(seconds: int | float, out: str, artefacts: str) -> str:
    """The run-time sentence of a recipe's report when OUT has no runtime.tsv (a run made before
    the recipes kept it, or a report made by hand): SECONDS, this invocation's wall time.

    ARTEFACTS is a glob (relative to OUT) of files that each mark one computed artefact (e.g.
    'runs/*/run.key'); those older than this invocation's start were reused from a cache made by
    an earlier run, and then the sentence says so instead of passing SECONDS off as the cost of
    the computation. With runtime.tsv, :func:`runtime_paragraph` is the one sentence builder.
    """
    seconds = int(seconds)
    text = f"Run time {seconds} s = {hms(seconds)} (this invocation, measured by the recipe)"
    start = time.time() - seconds - 2   # this invocation's start, with 2 s of slack
    files = [p for p in glob.glob(os.path.join(out, artefacts), recursive=True) if os.path.isfile(p)]
    reused = [p for p in files if os.path.getmtime(p) < start]
    if files and reused:
        text += (f"; {len(reused)} of {len(files)} artefacts were reused from the cache of an earlier "
                 "invocation, so this is NOT the cost of the computation (see that run's log)")
    return text


def save_figure(fig, path: str, data: str = "", dpi: int = 110) -> None:
    """Save a report's figure to PATH with the data named in a caption line at its foot (when
    DATA is given), then close it."""
    import matplotlib.pyplot as plt

    if data:
        fig.text(0.01, 0.005, f"Data: {data}.", fontsize=7)
        fig.tight_layout(rect=(0, 0.04, 1, 1))
    else:
        fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def read_json(path: str, missing_ok: bool = False) -> dict | None:
    """A step's JSON report at PATH; with MISSING_OK, None where the file does not exist (a row
    or run that was not made)."""
    if missing_ok and not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def interval(low: float, high: float, digits: int = 2, signed: bool = False) -> str:
    """'[low, high]' rounded to DIGITS decimals (with signed, '+' before positive bounds): the
    one way every report writes a 95% interval, so the tests' INTERVAL pattern finds it."""
    sign = "+" if signed else ""
    return f"[{low:{sign}.{digits}f}, {high:{sign}.{digits}f}]"


def with_interval(value: float, low: float, high: float, digits: int = 2, signed: bool = False) -> str:
    """'24.52 [22.18, 26.79]': a value and its interval (signed: a difference, '+0.12 [-0.10, +0.31]')."""
    sign = "+" if signed else ""
    return f"{value:{sign}.{digits}f} {interval(low, high, digits, signed)}"


def ci(report: dict) -> str:
    """'[22.18, 26.79]': the WER interval of a score-wer --bootstrap report ('' without one)."""
    bounds = wer_interval(report)
    return interval(*bounds) if bounds else ""


def diff_ci(boot: dict) -> str:
    """'+0.12 [-0.10, +0.31]': the paired WER difference of a score-wer --bootstrap --compare
    report's ``bootstrap`` block, in points, with its interval."""
    return with_interval(boot["diff"], boot["diff_low"], boot["diff_high"], signed=True)


def fmt_eps(value: float) -> str:
    """Epsilon rounded once, to 4 significant digits (privacy-report's own text precision)."""
    return f"{value:.4g}"


def read_runtime(out: str) -> list[tuple[int, int | None, str]]:
    """The parts of OUT/runtime.tsv (recipe_runtime in bin/lib/recipe.sh): one line per invocation,
    ``seconds<TAB>start (epoch seconds)<TAB>command`` (or ``seconds<TAB>command``, e.g. a part
    added by hand); lines that do not start with a number are skipped."""
    path = os.path.join(out, RUNTIME_FILE)
    parts: list[tuple[int, int | None, str]] = []
    if not os.path.exists(path):
        return parts
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            try:
                seconds = int(float(fields[0]))
            except ValueError:
                continue
            start = None
            if len(fields) >= 3:
                start = _epoch(fields[1])
            parts.append((seconds, start, fields[-1] if len(fields) > 1 else ""))
    return parts


def _epoch(started: str) -> int | None:
    """A part's start: epoch seconds, or an ISO 8601 UTC time ('2026-11-27T13:25:40Z')."""
    try:
        return int(float(started))
    except ValueError:
        pass
    from datetime import datetime

    try:
        return int(datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return None


def hms(seconds: int) -> str:
    """'1 h 2 min 3 s' / '2 min 3 s' / '3 s'."""
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return (f"{h} h {m} min {s} s" if h else f"{m} min {s} s" if m else f"{s} s")


def runtime_paragraph(out: str, seconds: int | float, artefacts: str, command: str = "") -> str:
    """The command(s) and the run time of a recipe's results, from OUT/runtime.tsv.

    Every invocation of the recipe on OUT appended its wall time and its exact command; the
    run time is their SUM (a rerun that reuses cached artefacts is one more part, never the run
    time on its own). Artefacts (glob ARTEFACTS under OUT) older than the first recorded part
    mean earlier invocations that runtime.tsv does not hold: the sum is then a lower bound.
    Without runtime.tsv: COMMAND and the sentence of :func:`run_time`.
    """
    parts = read_runtime(out)
    # '(earlier invocations ...: not timed)': recipe_runtime_begin's marker, written when OUT
    # already held artefacts the first time the recipe kept runtime.tsv
    untimed = any(p[2].startswith("(") for p in parts)
    parts = [p for p in parts if not p[2].startswith("(")]
    if not parts:
        made = f"Made by `{command}`. " if command else ""
        return made + run_time(seconds, out, artefacts) + "." + code_sentence(out)
    total = sum(p[0] for p in parts)
    starts = [p[1] for p in parts if p[1] is not None]
    files = [p for p in glob.glob(os.path.join(out, artefacts), recursive=True) if os.path.isfile(p)]
    unrecorded = untimed or bool(starts and files and min(os.path.getmtime(p) for p in files) < min(starts) - 2)
    if len(parts) == 1:
        text = (f"Made by `{parts[0][2]}`. Run time {total} s = {hms(total)} (one invocation, measured by the "
                "recipe; OUT/runtime.tsv)")
    elif len({p[2] for p in parts}) == 1:
        text = (f"Made by `{parts[0][2]}`, in {len(parts)} invocations, each reusing what the earlier ones had "
                f"cached: " + " + ".join(f"{p[0]} s" for p in parts)
                + f". Run time {total} s = {hms(total)}, the sum of the {len(parts)} parts (OUT/runtime.tsv)")
    else:
        listed = "; ".join(
            f"({i}) `{cmd}`: {secs} s" + (f", started {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(t0))}"
                                          if t0 is not None else "")
            for i, (secs, t0, cmd) in enumerate(parts, 1))
        text = (f"Made in {len(parts)} invocations, each reusing what the earlier ones had cached: {listed}. "
                f"Run time {total} s = {hms(total)}, the sum of the {len(parts)} parts (OUT/runtime.tsv)")
    if unrecorded:
        text += ("; some artefacts predate the first recorded invocation: earlier invocation(s), made before "
                 "the recipe kept OUT/runtime.tsv, are not counted, so this total is a LOWER BOUND (see their "
                 "logs; a part can be added to runtime.tsv as 'seconds<TAB>start<TAB>command')")
    return text + "." + code_sentence(out)


# ------------------------------------------------------------------ which code made a results file
CODE_FILE = "code.tsv"
#: environment knobs of the recipes that change where or how fast a run goes, not its results
HARMLESS_KNOBS = frozenset({"OMP_NUM_THREADS", "PYTHON", "ASRPRIV_DEVICE", "JOBS", "MKL_NUM_THREADS",
                            "ROW_JOBS", "WORKERS"})


def read_code(out: str) -> list[tuple[str, str]]:
    """The code of every invocation on OUT (OUT/code.tsv, written by bin/lib/recipe.sh):
    ``[(commit, state), ...]`` in order."""
    path = os.path.join(out, CODE_FILE)
    found: list[tuple[str, str]] = []
    if not os.path.exists(path):
        return found
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 3:
                found.append((fields[1], fields[2]))
    return found


def _tree(state: str) -> str:
    return {"clean": "clean tree", "modified": "tree with uncommitted changes in src/ or bin/"}.get(
        state, "tree state unknown")


def code_sentence(out: str) -> str:
    """' Code: commit 1a2b3c4d5e6f (clean tree).': the commit(s) of the code that made OUT's
    results, from OUT/code.tsv (one line per invocation, bin/lib/recipe.sh); '' without that
    file (a run made before the recipes recorded it: nothing is claimed)."""
    parts = read_code(out)
    if not parts:
        return ""
    distinct = list(dict.fromkeys(parts))
    if len(distinct) == 1:
        commit, state = distinct[0]
        return f" Code: commit {commit[:12]} ({_tree(state)})."
    listed = "; ".join(f"commit {c[:12]} ({_tree(s)})" for c, s in distinct)
    return f" Code: the {len(parts)} invocations ran {len(distinct)} versions: {listed}."


def command_knobs(commands) -> list[tuple[str, str]]:
    """Every ``VAR=value`` setting before ``bin/`` in recipe commands, as ``(VAR, value)`` in
    order (shell quoting undone)."""
    import re
    import shlex

    found: list[tuple[str, str]] = []
    for command in commands:
        head = command.split("bin/", 1)[0]
        try:
            words = shlex.split(head)
        except ValueError:
            words = head.split()
        for word in words:
            m = re.match(r"^([A-Z][A-Z0-9_]*)=(.*)$", word)
            if m:
                found.append((m.group(1), m.group(2)))
    return found


def changed_knobs(commands) -> list[str]:
    """The ``VAR=value`` settings before ``bin/`` in recipe commands that change results
    (everything but :data:`HARMLESS_KNOBS`), in order, each once."""
    found: list[str] = []
    for name, value in command_knobs(commands):
        word = f"{name}={value}"
        if name not in HARMLESS_KNOBS and word not in found:
            found.append(word)
    return found


def mode_label(mode: str, commands) -> str:
    """The results file's mode sentence: "full" only where the recipe's full defaults ran
    unchanged; otherwise it says **Not the full defaults** and lists what differs."""
    if mode != "full":
        return f"Mode: {mode}."
    knobs = changed_knobs(commands)
    if not knobs:
        return "Mode: full (the recipe's full defaults, unchanged)."
    return ("**Not the full defaults**: mode full with " + ", ".join(f"`{k}`" for k in knobs)
            + ".")


def part_commands(out: str, command: str = "") -> list[str]:
    """The commands of every invocation on OUT (OUT/runtime.tsv), or ``[command]``."""
    parts = [p[2] for p in read_runtime(out) if not p[2].startswith("(")]
    return parts or ([command] if command else [])


# ------------------------------------------------------------------ WER cells (score-wer --format json)
# A WER is written with its 95% bootstrap interval, "24.52 [22.18, 26.79]"; a difference
# WER(A) - WER(B) with its paired bootstrap interval, "+0.21 [-0.10, +0.50]"; a DP setting by the
# mean over its noise draws (:func:`mean_of_draws`).

def wer_interval(report: dict) -> tuple[float, float] | None:
    """The bootstrap interval of a score-wer report's WER (score-wer --bootstrap), or None."""
    boot = report.get("bootstrap") or {}
    if boot.get("wer_low") is None:
        return None
    return boot["wer_low"], boot["wer_high"]


def fmt_wer(report: dict) -> str:
    """'24.52 [22.18, 26.79]': the WER and its bootstrap interval (the WER alone without one)."""
    bounds = wer_interval(report)
    return with_interval(report["wer"], *bounds) if bounds else f"{report['wer']:.2f}"


def fmt_diff(report: dict) -> str | None:
    """'+0.21 [-0.10, +0.50]': WER(A) - WER(B) in points and its paired bootstrap interval
    (score-wer --compare B --bootstrap N), or None without them."""
    boot = report.get("bootstrap") or {}
    return None if boot.get("diff") is None else diff_ci(boot)


def fmt_mapsswe(report: dict) -> str | None:
    """'p = 0.0838' or 'p = 2.6e-05 *' (* = significant at the report's alpha), or None without
    --compare."""
    comp = report.get("compare")
    if not comp:
        return None
    return f"p = {comp['p_value']:.3g}" + (" *" if comp.get("significant") else "")


def mean_of_draws(reports: list[dict]) -> dict:
    """What a DP setting's row reports of its noise draws (one score-wer report each).

    Returns a dict: ``n`` draws; ``wers`` (each draw's WER, in order); ``wer`` their mean;
    ``low``/``high`` the union of the draws' bootstrap intervals (the lowest lower and the highest
    upper bound: it covers the noise as well as the sampling of utterances; None without
    intervals); with --compare in every draw: ``diff`` the mean paired difference and
    ``diff_low``/``diff_high`` the union of its intervals (None when a draw lacks them);
    ``compared`` (draws with a MAPSSWE test), ``significant`` (of those, significant) and
    ``p_min``/``p_max`` (None without tests).
    """
    if not reports:
        raise ValueError("mean_of_draws: no draw")
    wers = [r["wer"] for r in reports]
    cis = [wer_interval(r) for r in reports]
    s: dict = {"n": len(reports), "wers": wers, "wer": sum(wers) / len(wers), "low": None, "high": None,
               "diff": None, "diff_low": None, "diff_high": None}
    if all(ci is not None for ci in cis):
        s["low"], s["high"] = min(ci[0] for ci in cis), max(ci[1] for ci in cis)
    boots = [r.get("bootstrap") or {} for r in reports]
    if all(b.get("diff") is not None for b in boots):
        s["diff"] = sum(b["diff"] for b in boots) / len(boots)
        s["diff_low"], s["diff_high"] = min(b["diff_low"] for b in boots), max(b["diff_high"] for b in boots)
    comps = [r["compare"] for r in reports if r.get("compare")]
    s["compared"], s["significant"] = len(comps), sum(1 for c in comps if c.get("significant"))
    s["p_min"] = min(c["p_value"] for c in comps) if comps else None
    s["p_max"] = max(c["p_value"] for c in comps) if comps else None
    return s
