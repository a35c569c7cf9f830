"""The privacy-utility frontier of bin/privacy-frontier: WER against epsilon for three methods.

    python -m asrpriv.reports.frontier report [--data DATA_DIR] [--seconds S] [--settings TEXT] OUT

`report` reads OUT/points/METHOD/SETTING/dN/wer.json (asrpriv score-wer --format json --bootstrap
--compare: WER in percent, 95% bootstrap percentile intervals over utterances), OUT/privacy/zZ.json
(asrpriv privacy-report --json) and OUT/points/reference/NAME/wer.json, and writes
OUT/frontier.tsv (columns `method unit epsilon delta wer wer_lo wer_hi draws`, one row per method
and epsilon, epsilon `inf` for the non-private version), OUT/frontier.md and OUT/frontier.png.

Methods and SETTING directories:
  dp-fmp      FMP with beta = 0 on Laplace-noised counts (paper 000's DP-FMP), SETTING eps<E> or inf;
              unit: one utterance of the evaluation clients (their N-best is what is counted);
  dp-fedadam  FedAdam fine-tuning of the NNLM with client-level Gaussian DP (paper 001), SETTING
              z<Z> or inf; epsilon from privacy-report at OUT/privacy/z<Z>.json (PLD, also RDP);
              unit: one client (an adaptation meeting);
  fma-ngram   FMA of the background 3-gram (paper 003 Eq. 1) on Laplace-noised unigram counts of
              the adaptation 1-best, SETTING eps<E> or inf; unit: one adaptation utterance.
A DP row's WER is the mean over its noise draws; its interval is the union of the draws' 95%
bootstrap intervals (lowest lower bound, highest upper bound), so it covers both the noise and the
sampling of utterances. The recipe's client lists come from `select-nbest --list-clients` and
q N from `sample-clients --expected` (steps, not this report).
"""

from __future__ import annotations

import argparse
import csv
import glob
import math
import os
import statistics
import sys

from asrpriv.errors import AsrprivError
from asrpriv.reports.common import data_name, data_paragraph, diff_ci, fmt_eps, read_json, runtime_paragraph, with_interval

COLUMNS = ["method", "unit", "epsilon", "delta", "wer", "wer_lo", "wer_hi", "draws"]
METHODS = {
    "dp-fmp": ("utterance", "DP-FMP (Laplace counts, beta = 0; paper 000)",
               "one utterance of an evaluation client (its N-best counts), add/remove"),
    "dp-fedadam": ("client", "DP-FedAdam NNLM fine-tuning (Gaussian; paper 001)",
                   "one client = one adaptation meeting (all its utterances), add/remove"),
    "fma-ngram": ("utterance", "FMA of the 3-gram on noisy counts (Laplace; paper 003 Eq. 1)",
                  "one adaptation utterance (its 1-best counts), add/remove"),
}
BASELINE = {"dp-fmp": "nnlm", "dp-fedadam": "nnlm", "fma-ngram": "ngram"}
REFERENCE = {"firstpass": "first-pass 1-best (no second pass)",
             "nnlm": "unadapted NNLM rescoring (the NNLM methods' starting point)",
             "ngram": "unadapted background 3-gram rescoring (FMA's starting point)"}
COLOURS = {"dp-fmp": "tab:blue", "dp-fedadam": "tab:red", "fma-ngram": "tab:green"}
MARKERS = {"utterance": "o", "client": "s"}
# the non-private lines: one dash pattern per method (two may coincide); points of methods at the
# same epsilon are spread apart on the x-axis by these factors
DASHES = {"dp-fmp": (0, (6, 3)), "dp-fedadam": (0, (2, 2)), "fma-ngram": (0, (8, 2, 2, 2))}
SPREAD = {"dp-fmp": 0.94, "dp-fedadam": 1.0, "fma-ngram": 1.06}


def _load(path: str) -> dict:
    return read_json(path)


def _interval(report: dict) -> tuple[float, float]:
    boot = report.get("bootstrap") or {}
    return boot.get("wer_low", math.nan), boot.get("wer_high", math.nan)


def collect(out: str, delta: float) -> list[dict]:
    """One point per method and setting: mean WER over draws, the union of their intervals."""
    points = []
    for method in METHODS:
        for setting_dir in sorted(glob.glob(os.path.join(out, "points", method, "*"))):
            setting = os.path.basename(setting_dir)
            draws = [_load(p) for p in sorted(glob.glob(os.path.join(setting_dir, "d*", "wer.json")))]
            if not draws:
                continue
            point = {"method": method, "unit": METHODS[method][0], "setting": setting, "reports": draws}
            if setting == "inf":
                point.update(epsilon=math.inf, delta=0.0, z=None)
            elif setting.startswith("z"):
                acc = _load(os.path.join(out, "privacy", f"{setting}.json"))
                point.update(epsilon=acc["epsilon_pld"], epsilon_rdp=acc["epsilon_rdp"], delta=acc.get("delta", delta),
                             z=float(setting[1:]))
            else:
                point.update(epsilon=float(setting[3:]), delta=0.0, z=None)
            wers = [d["wer"] for d in draws]
            lows, highs = zip(*(_interval(d) for d in draws))
            point.update(wer=statistics.mean(wers), wer_lo=min(lows), wer_hi=max(highs), draws=len(draws),
                         wer_min=min(wers), wer_max=max(wers))
            points.append(point)
    points.sort(key=lambda p: (list(METHODS).index(p["method"]), -p["epsilon"]))
    return points


def _num(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.6g}"


def write_tsv(path: str, points: list[dict]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(COLUMNS)
        for p in points:
            w.writerow([p["method"], p["unit"], _num(p["epsilon"]), _num(p["delta"]), f"{p['wer']:.4f}",
                        f"{p['wer_lo']:.4f}", f"{p['wer_hi']:.4f}", p["draws"]])
    os.replace(tmp, path)


def _compare_cell(p: dict, baseline: str) -> str:
    """Each draw against BASELINE: the paired bootstrap interval of the difference, MAPSSWE."""
    cells = []
    for r in p["reports"]:
        boot = r.get("bootstrap") or {}
        comp = r.get("compare") or {}
        if boot.get("diff") is None:
            continue
        cell = diff_ci(boot)
        if comp:
            cell += f" p={comp['p_value']:.2g}" + (" *" if comp.get("significant") else "")
        cells.append(cell)
    return (f"vs {baseline}: " + "; ".join(cells)) if cells else "–"


def markdown(out: str, points: list[dict], refs: dict, data: str | None, seconds: int, settings: str,
             command: str) -> str:
    any_ref = next(iter(refs.values()), None) or (points[0]["reports"][0] if points else {})
    L = ["# Privacy-utility frontier: WER against epsilon for three private personalization methods", "",
         data_paragraph(data), ""]
    L += [runtime_paragraph(out, seconds, "points/*/*/d*/hyp.txt", command), ""]
    L += [f"Same evaluation set and first pass for every point: the dev N-best lists of the evaluation "
          f"clients ({any_ref.get('sentences', '?')} utterances, {any_ref.get('ref_words', '?')} reference "
          "words; the tuning clients, which chose the rescoring weights, are excluded). WER: percent; "
          "interval: 95% bootstrap percentile interval over utterances (score-wer --bootstrap); a DP row is "
          "the mean over its noise draws, its interval the union of the draws' intervals (the lowest lower "
          "and the highest upper bound), so it covers the noise as well as the utterances.", "",
          "**Units of privacy differ**: the DP-FedAdam points protect a whole client (one adaptation meeting, "
          "all its utterances) at (epsilon, delta); the Laplace points protect one utterance at (epsilon, 0). "
          "An utterance-level epsilon is a much weaker promise to a speaker with many utterances than the "
          "same client-level epsilon: points of different units are not comparable without saying so. The "
          "methods also protect different data: DP-FMP the evaluation clients' own N-best lists (online "
          "personalization), the other two the adaptation meetings' 1-best (adapt/).", ""]
    if settings:
        L += [f"Settings: {settings}", ""]
    L += ["## Reference rows (no adaptation)", "", "| system | WER % [95% CI] |", "|---|---|"]
    for name, label in REFERENCE.items():
        r = refs.get(name)
        if r:
            lo, hi = _interval(r)
            L.append(f"| {label} | {with_interval(r['wer'], lo, hi)} |")
    L += ["", "## The frontier", "",
          "| method | unit of privacy | epsilon | delta | noise | WER % [95% CI] | draws (WER range) | "
          "difference in WER points [95% paired bootstrap CI], MAPSSWE p (* = significant at 0.05), per draw |",
          "|---|---|---|---|---|---|---|---|"]
    for p in points:
        method = p["method"]
        if p["setting"] == "inf":
            eps, noise = "inf (non-private)", "none"
            base = REFERENCE[BASELINE[method]].split(" (")[0]
        else:
            base = f"{METHODS[method][1].split(' (')[0]}, non-private"
            if p["z"] is not None:
                eps = f"{fmt_eps(p['epsilon'])} (PLD; RDP {fmt_eps(p['epsilon_rdp'])})"
                noise = f"Gaussian z = {p['z']:g}"
            else:
                eps, noise = fmt_eps(p["epsilon"]), "discrete Laplace"
        rng = f"{p['draws']} ({p['wer_min']:.2f}-{p['wer_max']:.2f})" if p["draws"] > 1 else "1"
        L.append(f"| {METHODS[method][1]} | {p['unit']} | {eps} | {_num(p['delta'])} | {noise} | "
                 f"{with_interval(p['wer'], p['wer_lo'], p['wer_hi'])} | {rng} | {_compare_cell(p, base)} |")
    L += ["", "Units: " + "; ".join(f"{METHODS[m][1]}: {METHODS[m][2]}" for m in METHODS) + ".", "",
          "Each DP row is compared with its own method's non-private row; each non-private row with its "
          "method's unadapted starting point (reference rows above). `frontier.tsv` holds the same points "
          "(epsilon = PLD epsilon for DP-FedAdam); `frontier.png` plots them.", ""]
    return "\n".join(L)


def plot(path: str, points: list[dict], data: str | None) -> None:
    """WER against epsilon (log x); one colour per method, one marker per unit of privacy.

    The non-private version of each method is a horizontal line in its colour, its interval two
    thin dotted lines (no filled bands, so nothing blends); the legend sits below the axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 6.5))
    finite = [p["epsilon"] for p in points if not math.isinf(p["epsilon"])]
    for method, (unit, label, _) in METHODS.items():
        colour = COLOURS[method]
        mine = [p for p in points if p["method"] == method and not math.isinf(p["epsilon"])]
        if mine:
            xs = [p["epsilon"] * SPREAD[method] for p in mine]
            ys = [p["wer"] for p in mine]
            err = [[p["wer"] - p["wer_lo"] for p in mine], [p["wer_hi"] - p["wer"] for p in mine]]
            ax.errorbar(xs, ys, yerr=err, fmt=MARKERS[unit] + "-", color=colour, capsize=3,
                        label=f"{label}; unit: {unit}; mean of draws, 95% CI")
        inf = next((p for p in points if p["method"] == method and math.isinf(p["epsilon"])), None)
        if inf is not None:
            ax.axhline(inf["wer"], color=colour, ls=DASHES[method], lw=1.2,
                       label=f"{label.split(' (')[0]}, non-private (dotted: 95% CI)")
            for edge in (inf["wer_lo"], inf["wer_hi"]):
                ax.axhline(edge, color=colour, ls=":", lw=0.7)
    ax.set_xscale("log")
    if finite:
        ax.set_xlim(min(finite) / 1.5, max(finite) * 1.5)
    ax.set_xlabel("epsilon (log scale; unit of privacy per method, see legend; delta 0 for Laplace, "
                  "privacy-report PLD delta for Gaussian)", fontsize=8)
    ax.set_ylabel("WER % on the evaluation clients")
    ax.set_title("Privacy-utility frontier (same dev set and first pass)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
    fig.text(0.01, 0.01, f"Data: {data_name(data)}. Client-level and utterance-level epsilons are not "
             "comparable. Methods at the same epsilon are drawn 6% apart on the x-axis.", fontsize=7, wrap=True)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    os.replace(tmp, path)


def report(out: str, data: str | None, seconds: int, settings: str, command: str, delta: float) -> int:
    points = collect(out, delta)
    if not points:
        print(f"frontier-report: {out}/points: no scored point (wer.json)", file=sys.stderr)
        return 2
    refs = {n: _load(p) for n in REFERENCE
            if os.path.exists(p := os.path.join(out, "points", "reference", n, "wer.json"))}
    write_tsv(os.path.join(out, "frontier.tsv"), points)
    text = markdown(out, points, refs, data, seconds, settings, command)
    tmp = os.path.join(out, "frontier.md.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, os.path.join(out, "frontier.md"))
    try:
        plot(os.path.join(out, "frontier.png"), points, data)
    except ImportError:
        print("frontier-report: matplotlib not installed; no plot", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m asrpriv.reports.frontier")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("report", help="frontier.tsv, frontier.md and frontier.png from OUT/points")
    r.add_argument("out")
    r.add_argument("--data", default=None)
    r.add_argument("--seconds", type=int, default=0)
    r.add_argument("--settings", default="")
    r.add_argument("--command", default="")
    r.add_argument("--delta", type=float, default=1e-5)
    a = ap.parse_args(argv)
    try:
        return report(a.out, a.data, a.seconds, a.settings, a.command, a.delta)
    except (ValueError, OSError, AsrprivError) as err:
        print(f"frontier-report: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
