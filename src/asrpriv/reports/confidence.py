"""The scale choice and the results table of bin/confidence-experiment, from its JSON reports.

    python -m asrpriv.reports.confidence choose-scale OUT SCALE...
    python -m asrpriv.reports.confidence table OUT BEST SCALE...

Reads ``confidence --report`` files: OUT/scale-S/{adapt-raw,A-cal-on-B,B-cal-on-A}.json for
every scale S and OUT/chosen/{adapt-fit,dev}.json. ``choose-scale`` prints the scale with the
best out-of-sample calibrated NCE (the mean of the two meeting-half folds; ties: the first
given); ``table`` prints the results in Markdown.
"""

from __future__ import annotations

import sys

from asrpriv.reports.common import read_json

FOLDS = ("B-cal-on-A", "A-cal-on-B")


def _load(out: str, name: str) -> dict:
    return read_json(f"{out}/{name}.json")


def out_of_sample_nce(out: str, scale: str) -> float:
    """The mean calibrated NCE of the two folds at ``scale``."""
    return sum(_load(out, f"scale-{scale}/{fold}")["calibrated"]["nce"] for fold in FOLDS) / 2


def choose_scale(out: str, scales: list[str]) -> str:
    """The scale with the highest :func:`out_of_sample_nce` (ties: the first)."""
    return max(scales, key=lambda s: out_of_sample_nce(out, s))


def _f(v) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _row(name: str, m: dict) -> str:
    return (f"| {name} | {m['words']} | {100 * m['p_correct']:.1f} | {_f(m['mean_confidence'])} | "
            f"{_f(m['nce'])} | {_f(m['ece'])} | {_f(m['auc'])} |")


def table(out: str, best: str, scales: list[str]) -> str:
    """OUT/results.md's text: the scale scan, then every set at the chosen scale."""
    f, load = _f, lambda name: _load(out, name)
    lines = ["## Scale scan (adapt; calibrated = fitted on one meeting half, applied to the other)\n",
             "| S | raw NCE | raw ECE | raw AUC | cal. NCE B (fit A) | cal. NCE A (fit B) | cal. ECE B / A | cal. AUC B / A |",
             "|---|---|---|---|---|---|---|---|"]
    for s in scales:
        r = load(f"scale-{s}/adapt-raw")["raw"]
        b = load(f"scale-{s}/B-cal-on-A")["calibrated"]
        a = load(f"scale-{s}/A-cal-on-B")["calibrated"]
        mark = " (chosen)" if s == best else ""
        lines.append(f"| {s}{mark} | {f(r['nce'])} | {f(r['ece'])} | {f(r['auc'])} | {f(b['nce'])} | "
                     f"{f(a['nce'])} | {f(b['ece'])} / {f(a['ece'])} | {f(b['auc'])} / {f(a['auc'])} |")
    lines += [f"\n## At S = {best}\n",
              "| set | rank-1 words | correct % | mean conf. | NCE | ECE | AUC |",
              "|---|---|---|---|---|---|---|",
              _row("adapt, raw", load(f"scale-{best}/adapt-raw")["raw"]),
              _row("adapt half A, raw", load(f"scale-{best}/A-cal-on-B")["raw"]),
              _row("adapt half A, calibrated on B", load(f"scale-{best}/A-cal-on-B")["calibrated"]),
              _row("adapt half B, raw", load(f"scale-{best}/B-cal-on-A")["raw"]),
              _row("adapt half B, calibrated on A", load(f"scale-{best}/B-cal-on-A")["calibrated"]),
              _row("adapt, calibrated on adapt (in-sample)", load("chosen/adapt-fit")["calibrated"]),
              _row("dev, raw", load("chosen/dev")["raw"]),
              _row("dev, calibrated on adapt", load("chosen/dev")["calibrated"])]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) >= 3 and args[0] == "choose-scale":
        print(choose_scale(args[1], args[2:]))
        return 0
    if len(args) >= 4 and args[0] == "table":
        sys.stdout.write(table(args[1], args[2], args[3:]))
        return 0
    print(f"usage: python -m {__name__} choose-scale OUT SCALE... | table OUT BEST SCALE...",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
