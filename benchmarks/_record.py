#!/usr/bin/env python3
"""One benchmark record: each benchmark calls :func:`record`; ``make bench`` collects them.

When ``ASRPRIV_BENCH_RESULTS`` names a JSON file (``make bench`` sets it to
``benchmarks/results.json``), :func:`record` adds or replaces the benchmark's entry in it
(atomically: temp file + rename); otherwise it does nothing, so a benchmark run by hand prints
its numbers and leaves the committed record alone.

The file: ``commit``, ``cpu`` (model name), ``cores``, ``load_before`` / ``load_after`` (1, 5 and
15-minute load averages when ``make bench`` started / ended), ``started`` / ``finished`` (UTC)
and ``benchmarks``: ``{name: {ratio, target, met, best, median, repeats, what, script}}``.
``target`` is a string such as ``"<= 2x"`` or ``">= 10x"``; ``met`` is the ratio checked
against it. ``best`` holds the best times (or rates) of the two sides where the benchmark has them.

    python benchmarks/_record.py start benchmarks/results.json    # make bench, before
    python benchmarks/_record.py finish benchmarks/results.json   # make bench, after
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = "ASRPRIV_BENCH_RESULTS"


def target_met(ratio: float, target: str) -> bool | None:
    """``ratio`` against ``"<= 2x"`` / ``">= 10x"`` / ``"< 1 GB"``-style targets (None: unparsed)."""
    text = target.strip().replace("≤", "<=").replace("≥", ">=")
    for op in ("<=", ">=", "<", ">"):
        if text.startswith(op):
            try:
                bound = float(text[len(op):].strip().split()[0].rstrip("x%"))
            except (ValueError, IndexError):
                return None
            return {"<=": ratio <= bound, ">=": ratio >= bound,
                    "<": ratio < bound, ">": ratio > bound}[op]
    return None


def _load(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _save(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def record(name: str, ratio: float, target: str, *, median: float | None = None,
           repeats: int | None = None, best=None, what: str = "", **extra) -> None:
    """Add benchmark ``name``'s result to the record named by ``$ASRPRIV_BENCH_RESULTS`` (if set)."""
    where = os.environ.get(ENV)
    if not where:
        return
    path = Path(where)
    data = _load(path)
    entry = {"ratio": round(float(ratio), 4), "target": target, "met": target_met(ratio, target),
             "best": best, "median": None if median is None else round(float(median), 4),
             "repeats": repeats, "what": what,
             "script": Path(sys.argv[0]).name if sys.argv and sys.argv[0] else None}
    entry.update(extra)
    data.setdefault("benchmarks", {})[name] = entry
    _save(path, data)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return out + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def start(path: Path) -> None:
    """A fresh record: machine, commit, load before.

    The GPU rows (names ending in ``_gpu``, from ``bench_gpu.py``, each naming the machine and
    date it was measured on) are carried over from the old record: a machine without a GPU
    cannot re-measure them, and ``bench_gpu.py`` replaces them where it can."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count()
    carried = {name: entry for name, entry in _load(path).get("benchmarks", {}).items()
               if name.endswith("_gpu") and entry.get("machine")}
    _save(path, {"commit": commit(), "cpu": cpu_model(), "cores": cores,
                 "load_before": [round(x, 2) for x in os.getloadavg()], "load_after": None,
                 "started": _now(), "finished": None, "gpu": None, "benchmarks": carried})


def finish(path: Path) -> None:
    data = _load(path)
    data["load_after"] = [round(x, 2) for x in os.getloadavg()]
    data["finished"] = _now()
    _save(path, data)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("start", "finish"):
        raise SystemExit("usage: _record.py start|finish RESULTS.json")
    (start if sys.argv[1] == "start" else finish)(Path(sys.argv[2]))
