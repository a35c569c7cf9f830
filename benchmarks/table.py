#!/usr/bin/env python3
"""The benchmark table of docs/PERFORMANCE.md, generated from ``benchmarks/results.json`` (``make bench``).

Prints a Markdown table (one row per recorded benchmark: what it compares, the ratio best-of-N
and the median per pair, the target, and whether it was met; a missed target says so in bold)
under a line naming the machine, the commit and the load before/after. With ``--readme FILE``
the text between ``<!-- bench-table:start -->`` and ``<!-- bench-table:end -->`` in FILE is
replaced by it (atomically). The table lives in ``docs/PERFORMANCE.md`` (``TABLE_FILE``; the
README is a front door and links to it); ``--readme`` keeps its name for the scripts that call it.

    python benchmarks/table.py benchmarks/results.json [--readme docs/PERFORMANCE.md]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

START, END = "<!-- bench-table:start -->", "<!-- bench-table:end -->"
#: the file that holds the generated table (relative to the repository root)
TABLE_FILE = "docs/PERFORMANCE.md"
#: rows the issue asks for that need a machine this record may not have had
GPU_ROWS = {
    "finetune_clients_gpu": "finetune-lm --by-client on a GPU vs the CPU",
    "rescore_nbest_gpu": "rescore-nbest --device cuda vs the CPU",
}


def _load(load) -> str:
    return "?" if not load else " / ".join(f"{x:.2f}" for x in load)


def table(data: dict, scripts: list[str] | None = None) -> str:
    cores = data.get("cores") or 1
    # the load before the run says whether other jobs were running; the load after counts the
    # benchmarks' own processes (the last one uses every core), so it cannot say that
    loads = (data.get("load_before") or [])[:1]
    busy = any(x > 0.5 * cores for x in loads)
    lines = [f"Machine: {data.get('cpu', '?')}, {cores} cores; commit "
             f"`{str(data.get('commit', '?'))[:12]}`; load average (1/5/15 min) "
             f"{_load(data.get('load_before'))} before, {_load(data.get('load_after'))} after (the "
             "benchmarks' own load); "
             f"{data.get('started', '?')} to {data.get('finished') or '?'}."
             + (" **Provisional: the machine was loaded (other jobs ran), so these ratios are "
                "not a quiet machine's.**" if busy else ""), "",
             "| benchmark | compares | ratio (best of N) | median per pair | N | target | met |",
             "|---|---|---|---|---|---|---|"]
    benches = data.get("benchmarks", {})
    for name, e in benches.items():
        met = e.get("met")
        mark = "yes" if met else ("**no: target missed**" if met is False else "–")
        extra = ""
        if "peak_models" in e:
            extra = f"; peak {e['peak_models']:.2f} models ({e.get('peak_target', '')})"
        elif "peak_mb" in e:
            extra = f"; peak RSS {e['peak_mb']:.0f} MB ({e.get('peak_target', '')})"
        if e.get("machine"):   # a row measured on another machine than the record's
            extra += f"; measured on {e['machine']}" + (f", {e['measured']}" if e.get("measured") else "")
        median = "–" if e.get("median") is None else f"{e['median']:.2f}x"
        lines.append(f"| `{e.get('script') or name}` {name} | {e.get('what', '')}{extra} | "
                     f"{e['ratio']:.2f}x | {median} | {e.get('repeats') or 1} | {e['target']} | {mark} |")
    done = {e.get("script") for e in benches.values()}
    for script in scripts or []:
        if script not in done:
            lines.append(f"| `{script}` | not run in this record | – | – | – | – | – |")
    gpu = data.get("gpu")
    for name, what in GPU_ROWS.items():
        if name not in benches:
            lines.append(f"| {name} | {what} | not measured: "
                         f"{'no GPU lent' if not gpu else 'not run'} | – | – | – | – |")
    return "\n".join(lines) + "\n"


def replace_section(readme: Path, text: str) -> None:
    doc = readme.read_text(encoding="utf-8")
    if START not in doc or END not in doc:
        raise SystemExit(f"{readme}: no {START} ... {END} section to replace")
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{START}\n{text}{END}{tail}"
    tmp = readme.with_name(f".{readme.name}.{os.getpid()}.tmp")
    tmp.write_text(new, encoding="utf-8")
    os.replace(tmp, readme)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--readme", type=Path, metavar="FILE",
                    help=f"replace the table section of this file (the table's home: {TABLE_FILE})")
    args = ap.parse_args()
    try:
        data = json.loads(args.results.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise SystemExit(f"{args.results}: {err}")
    scripts = sorted(p.name for p in Path(__file__).resolve().parent.glob("bench_*.py"))
    text = table(data, scripts)
    if args.readme:
        replace_section(args.readme, text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
