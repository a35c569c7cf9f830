#!/usr/bin/env python3
"""Results tables (Markdown) and plots for bin/fmp-experiment (wrapper: bin/fmp-report).

    python -m asrpriv.reports.fmp [--data DATA_DIR] --t-sweep T --rounds ... OUT

Reads OUT/runs/*/wer.json (from `asrpriv score-wer --format json --bootstrap N [--compare REF]`)
and writes OUT/results.md, OUT/wer_vs_rounds.png and OUT/wer_vs_epsilon.png. WERs are percent;
"pts" are percentage points of WER; every relative change and significance cell names the
system it is measured against. Confidence intervals are bootstrap percentile intervals over
utterances (asrpriv.wer.bootstrap); significance is the MAPSSWE test (NIST sc_stats) at 0.05.

The paper's numbers are paper 000 (Federated Marginal Personalization), AMI column of
Table 2 (rounds), Table 3 (sigma, alpha/beta) and Table 4 (DP), copied here. They come from a
different first-pass recognizer, AMI split and LMs: compare directions and relative changes only.
"""

from __future__ import annotations

import argparse
import os
import sys

from asrpriv.reports.common import ci as common_ci, data_name, data_paragraph, mean_of_draws, read_json, runtime_paragraph

# paper 000, Table 2 (AMI Meeting): baseline (T=0) and FMP after T rounds, WER %
PAPER_T = {0: 32.83, 1: 31.44, 2: 31.34, 5: 31.27, 10: 31.24}
# paper 000, Table 3 (AMI Meeting, T=10): alpha=0.5, beta=0.25 with bandwidth sigma; ablations at sigma=5
PAPER_SIGMA = {"0.1": 31.02, "1": 30.96, "5": 31.24, "10": 31.38, "100": 31.42}
PAPER_AB = {"a0-b0.75": 31.56, "a0.75-b0": 31.31}
# paper 000, Table 4 (AMI Meeting, T=10, sigma=0.1): no DP ("none") and (epsilon, 0)-DP
PAPER_EPS = {"none": 31.02, "2": 31.09, "1": 31.17, "0.5": 31.26, "0.1": 31.59}
PAPER_T_SWEEP = 10   # the T of the paper's Tables 3 and 4
PAPER_NOTE = ("The paper column is paper 000 (Tables 2-4, AMI column), copied into asrpriv.reports.fmp: recorded "
              "AMI speech, a different first-pass recognizer, AMI split, LMs and vocabulary (their baseline is "
              "32.83%). Only the direction and the relative size of changes are "
              "comparable; its relative changes are against the paper's own baseline (or its no-DP "
              "row).")
AXIS_NOTE = ("y-axis of the WER panels: the span of the plotted 95% intervals plus a margin of a "
             "quarter of that span on each side (not from 0), so an interval's height is always a "
             "visible share of the axis")


def load(out: str, name: str) -> dict | None:
    return read_json(os.path.join(out, "runs", name, "wer.json"), missing_ok=True)


def fmt_num(value: str) -> str:
    """A number from a weights file, rounded to 4 significant digits (0.30000000000000004 -> 0.3)."""
    try:
        return f"{float(value):.4g}"
    except ValueError:
        return value


def weights(out: str, name: str) -> str:
    """The interpolation weights that tune-weights chose, as 'key = value' pairs."""
    path = os.path.join(out, "runs", name, "weights.txt")
    if not os.path.exists(path):
        return "(no weights file)"
    with open(path, encoding="utf-8") as f:
        items = dict(line[1:].strip().split("=", 1) for line in f if line.startswith("#") and "=" in line)
    return ", ".join(f"{k} = {fmt_num(items[k])}" for k in ("lm_weight", "nnlm_weight", "word_penalty") if k in items)


def rel(ours: float, base: float) -> str:
    return f"{100.0 * (ours - base) / base:+.1f}%"


def ci(report: dict) -> str:
    """' [22.18, 26.79]' (common.ci after a space), '' without a bootstrap."""
    text = common_ci(report)
    return f" {text}" if text else ""


def paper(value: float | None, base: float | None = None, base_name: str = "paper's baseline") -> str:
    if value is None:
        return "–"
    return f"{value:.2f}" + (f" ({rel(value, base)} vs {base_name} {base:.2f})" if base else "")


def change(report: dict, base: float, base_name: str) -> str:
    """Relative change and the bootstrap interval of the difference, against BASE_NAME."""
    text = f"{rel(report['wer'], base)} vs {base_name}"
    boot = report.get("bootstrap") or {}
    if boot.get("diff") is not None:
        text += f"; diff {boot['diff']:+.2f} pts [{boot['diff_low']:+.2f}, {boot['diff_high']:+.2f}]"
    return text


def sig(report: dict, base_name: str) -> str:
    comp = report.get("compare")
    if not comp:
        return ""
    mark = "yes" if comp["significant"] else "no"
    return f"{mark} vs {base_name} (Z={comp['z']:.2f}, p={comp['p_value']:.3f}, {comp['segments']} seg.)"


def row(label: str, report: dict | None, base: float | None, base_name: str, paper_cell: str) -> str:
    if report is None:
        return f"| {label} | – | – | – | {paper_cell} |"
    cell = change(report, base, base_name) if base is not None else f"(the reference: {base_name})"
    return f"| {label} | {report['wer']:.2f}{ci(report)} | {cell} | {sig(report, base_name)} | {paper_cell} |"


def dp_row(label: str, draws: list[dict], base: float | None, base_name: str, paper_cell: str) -> str:
    """A DP row: the mean WER over noise draws, the draws' spread, significance per draw."""
    if not draws:
        return f"| {label} | – | – | – | {paper_cell} |"
    s = mean_of_draws(draws)
    wers, mean = s["wers"], s["wer"]
    low, high = (s["low"], s["high"]) if s["low"] is not None else (min(wers), max(wers))
    spread = f" [{low:.2f}, {high:.2f}]" + (f" (draws {min(wers):.2f}–{max(wers):.2f})" if len(wers) > 1 else "")
    cell = f"{rel(mean, base)} vs {base_name} (mean of {len(wers)} draws)" if base else ""
    if cell and s["diff"] is not None:
        # the draws' paired differences: their mean, and the union of their 95% intervals
        cell += (f"; diff {s['diff']:+.2f} pts [{s['diff_low']:+.2f}, {s['diff_high']:+.2f}] "
                 "(union of the draws' intervals)")
    sig_cell = (f"{s['significant']} of {s['compared']} draws significant vs {base_name} (p "
                f"{s['p_min']:.3f}–{s['p_max']:.3f})") if s["compared"] else ""
    return f"| {label} | {mean:.2f}{spread} | {cell} | {sig_cell} | {paper_cell} |"


def draws_of(out: str, T: int, eps: str, n: int) -> list[dict]:
    return [r for r in (load(out, f"fmp-T{T}-dp{eps}-draw{d}") for d in range(1, n + 1)) if r is not None]


def sweep_label(T: int) -> str:
    """The T of Tables 3 and 4: ours, and the paper's when it differs (its columns are T = 10)."""
    return f"T={T}" if T == PAPER_T_SWEEP else f"ours T={T}; paper 000's column T={PAPER_T_SWEEP}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="fmp-report")
    ap.add_argument("out")
    ap.add_argument("--data", default=None, help="DATA_DIR of the run (named from its SOURCE.txt)")
    ap.add_argument("--reduced", default="0")
    ap.add_argument("--t-sweep", type=int, required=True)
    ap.add_argument("--rounds", required=True)
    ap.add_argument("--sigmas", required=True)
    ap.add_argument("--epsilons", required=True)
    ap.add_argument("--draws", type=int, default=1)
    ap.add_argument("--dp-sigma", required=True)
    ap.add_argument("--dp-max-l1", required=True)
    ap.add_argument("--dp-beta", default="0")
    ap.add_argument("--lambda", dest="lam", required=True)
    ap.add_argument("--tune-clients", required=True)
    ap.add_argument("--eval-clients", required=True)
    ap.add_argument("--seconds", type=int, default=0)
    args = ap.parse_args(argv)
    out = args.out
    T = args.t_sweep
    first = load(out, "firstpass")
    base = load(out, "baseline")
    if base is None or first is None:
        print("fmp-report: missing baseline results", file=sys.stderr)
        return 1
    b = base["wer"]
    boot = base.get("bootstrap") or {}
    bl = "NNLM baseline"
    head = ("| system | WER % [95% CI] | change (relative; difference in WER points [95% CI]) | "
            "MAPSSWE significant at 0.05 | paper 000 (AMI, other recognizer) |\n|---|---|---|---|---|")
    lines = [
        "# FMP on the dev N-best lists" + (" (reduced demo run)" if args.reduced == "1" else ""),
        "",
        data_paragraph(args.data),
        "",
        f"Evaluation clients: {args.eval_clients} ({base['sentences']} utterances, {base['ref_words']} "
        f"reference words). Tuning clients (interpolation weights, lambda; excluded from every number "
        f"below): {args.tune_clients}. Chosen there: {weights(out, 'baseline')}, lambda = {args.lam}. "
        f"alpha = 0.5, beta = 0.25, sigma = 5 unless a row says otherwise; factors renormalized "
        "over the NNLM vocabulary.",
        "",
        runtime_paragraph(out, args.seconds, "runs/*/run.key"),
        "",
        f"Intervals: 95% bootstrap percentile intervals over utterances ({boot.get('resamples', '?')} "
        f"resamples, seed {boot.get('seed', '?')}); a difference's interval resamples both systems' "
        f"utterances together. \"{bl}\" is the unadapted NNLM rescoring (second row). One word error "
        f"is {100.0 / base['ref_words']:.3f} WER points here.",
        "",
        PAPER_NOTE,
        "",
        "## Table 2: rounds",
        "",
        head,
        row("first-pass 1-best", first, b, bl, "–"),
        row("NNLM baseline (unadapted)", base, None, bl, paper(PAPER_T[0])),
    ]
    for t in args.rounds.split():
        lines.append(row(f"FMP T={t}", load(out, f"fmp-T{t}"), b, bl, paper(PAPER_T.get(int(t)), PAPER_T[0])))
    lines += ["", f"## Table 3: kernel bandwidth and interpolation weights ({sweep_label(T)})", "", head]
    for s in args.sigmas.split():
        lines.append(row(f"alpha=0.5 beta=0.25 sigma={s}", load(out, f"fmp-T{T}-sigma{s}"), b, bl,
                         paper(PAPER_SIGMA.get(s), PAPER_T[0])))
    lines.append(row("alpha=0 beta=0.75 sigma=5", load(out, f"fmp-T{T}-a0-b0.75"), b, bl,
                     paper(PAPER_AB["a0-b0.75"], PAPER_T[0])))
    lines.append(row("alpha=0.75 beta=0 sigma=5", load(out, f"fmp-T{T}-a0.75-b0"), b, bl,
                     paper(PAPER_AB["a0.75-b0"], PAPER_T[0])))
    no_dp = load(out, f"fmp-T{T}-sigma{args.dp_sigma}-b{args.dp_beta}")
    nd = "FMP no DP"
    lines += ["", f"## Table 4: DP-FMP ({sweep_label(T)}, sigma={args.dp_sigma}, alpha=0.5, beta={args.dp_beta}, "
              "utterance-level (epsilon, 0)-DP)", "",
              f"Each utterance's contribution is clipped to L1 <= {args.dp_max_l1} pseudo-counts by "
              "count-unigrams, so the sensitivity is that bound (the paper's \"1\" assumes each word occurs "
              "once per utterance). Discrete Laplace noise covers the whole background vocabulary and is "
              "added to each round's new counts, so each utterance is in one release. Guarantee: the "
              "sequence of released qbar^t (and the factors and rescorings made from it) is "
              "(epsilon, 0)-DP under add/remove of one utterance, by parallel composition over rounds "
              "(each round a labelled partition; aggregate --disjoint checks the labels and release "
              f"ids). It needs beta = {args.dp_beta}: with beta > 0 a client's exact personal cache "
              "re-ranks its later rounds, so a round's counts would depend on earlier utterances. The "
              "server sums the clients' un-noised counts before adding noise (central DP: a trusted "
              "aggregator); the uploads themselves are not protected. Unit of privacy: one evaluation "
              "utterance. No client sampling: every client takes part in every round, no amplification "
              "by sampling is claimed. Both rows use beta = "
              f"{args.dp_beta}. Each epsilon is run with {args.draws} independent noise draw(s): the "
              f"WER is their mean, with the widest span of their intervals and the draws' range; DP rows are compared with \"{nd}\" (as the "
              "paper's Table 4 does), which is compared with the NNLM baseline.", "", head]
    lines.append(row(f"{nd} (sigma={args.dp_sigma}, beta={args.dp_beta})", no_dp, b, bl, paper(PAPER_EPS["none"])))
    for e in args.epsilons.split():
        lines.append(dp_row(f"FMP, ({e}, 0)-DP", draws_of(out, T, e, args.draws),
                            no_dp["wer"] if no_dp else None, nd,
                            paper(PAPER_EPS.get(e), PAPER_EPS["none"], "paper's no-DP")))
    bin_ = load(out, "baseline-indomain")
    if bin_ is not None:
        ib = "in-domain baseline"
        lines += ["", "## In-domain control: background LM trained on all training meetings", "",
                  f"Weights chosen on the tuning clients for this model: {weights(out, 'baseline-indomain')}.", "",
                  head,
                  row("in-domain baseline (in-domain NNLM, unadapted)", bin_, b, bl, "–"),
                  row(f"FMP T={T} on the in-domain NNLM", load(out, f"indomain-fmp-T{T}"), bin_["wer"], ib, "–")]
    lines += ["", "## Plots", "",
              "`wer_vs_rounds.png`: WER after T rounds (T = 0 is the NNLM baseline) with 95% intervals, "
              "and the relative change against each side's own baseline beside the paper's Table 2. "
              "`wer_vs_epsilon.png`: DP-FMP WER per noise draw (with intervals) and their mean, and the "
              "relative change against the no-DP row beside the paper's Table 4. Filled stars: "
              "MAPSSWE-significant (0.05) against the reference named in the tables. "
              f"The {AXIS_NOTE}.", ""]
    with open(os.path.join(out, "results.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("fmp-report: matplotlib not installed; no plots", file=sys.stderr)
        return 0
    plot_rounds(out, args)
    plot_epsilon(out, args)
    return 0


def _caption(args) -> str:
    return f"Data: {data_name(args.data)}. {AXIS_NOTE}."


# ------------------------------------------------------------------ plots
def _interval(report: dict) -> tuple[float, float]:
    boot = report.get("bootstrap") or {}
    return boot.get("wer_low", report["wer"]), boot.get("wer_high", report["wer"])


def _wer_axis(ax, lows: list[float], highs: list[float]) -> None:
    """Y-limits: the span of the intervals plus a quarter of it on each side (see AXIS_NOTE)."""
    lo, hi = min(lows), max(highs)
    pad = 0.25 * max(hi - lo, 0.5)
    ax.set_ylim(lo - pad, hi + pad)


def _significant(report: dict | None) -> bool:
    return bool(report and (report.get("compare") or {}).get("significant"))


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 6))
    return plt, fig, left, right


def _legend(ax) -> None:
    """The legend below the axes, where it covers no point, error bar or band."""
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)


def _finish(plt, fig, path: str, caption: str) -> None:
    fig.text(0.01, 0.01, caption, fontsize=6.5, wrap=True)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_rounds(out: str, args) -> None:
    """WER vs rounds with bootstrap intervals; relative change vs the paper's Table 2."""
    plt, fig, ax, ax2 = _figure()
    base = load(out, "baseline")
    rounds, reports = [0], [base]
    for t in args.rounds.split():
        r = load(out, f"fmp-T{t}")
        if r is not None:
            rounds.append(int(t))
            reports.append(r)
    wers = [r["wer"] for r in reports]
    lows, highs = zip(*(_interval(r) for r in reports))
    b_lo, b_hi = _interval(base)
    ax.axhspan(b_lo, b_hi, color="tab:red", alpha=0.12, label="NNLM baseline 95% CI")
    ax.errorbar(rounds, wers, yerr=[[w - lo for w, lo in zip(wers, lows)], [hi - w for w, hi in zip(wers, highs)]],
                fmt="o-", color="tab:blue", mfc="white", capsize=3, label="ours: WER, 95% bootstrap CI")
    sig = [(t, w) for t, w, r in zip(rounds, wers, reports) if _significant(r) and t > 0]
    if sig:
        ax.plot(*zip(*sig), "*", color="tab:blue", ms=12, label="significant vs baseline (MAPSSWE)")
    else:
        ax.plot([], [], "*", color="tab:blue", ms=12, label="significant vs baseline: none (MAPSSWE)")
    ax.set_xticks(rounds)
    ax.set_xlabel("FL rounds T (0 = NNLM baseline, unadapted)")
    ax.set_ylabel("WER % (ours)")
    ax.set_title("FMP on our evaluation clients")
    _wer_axis(ax, list(lows) + [b_lo], list(highs) + [b_hi])
    ax.grid(alpha=0.3)
    _legend(ax)
    # right: relative change against each side's own baseline
    b = base["wer"]
    ours = [100.0 * (w - b) / b for w in wers]
    err_lo, err_hi = [0.0], [0.0]
    for r in reports[1:]:
        boot = r.get("bootstrap") or {}
        d = boot.get("diff")
        err_lo.append(100.0 * (d - boot["diff_low"]) / b if d is not None else 0.0)
        err_hi.append(100.0 * (boot["diff_high"] - d) / b if d is not None else 0.0)
    ax2.errorbar(rounds, ours, yerr=[err_lo, err_hi], fmt="o-", color="tab:blue", capsize=3,
                 label="ours (95% CI of the difference)")
    pt = sorted(PAPER_T)
    ax2.plot(pt, [100.0 * (PAPER_T[t] - PAPER_T[0]) / PAPER_T[0] for t in pt], "s--", color="tab:gray",
             label="paper 000, Table 2 (AMI; other recognizer)")
    ax2.axhline(0, color="k", lw=0.8)
    ax2.set_xticks(sorted(set(rounds) | set(pt)))
    ax2.set_xlabel("FL rounds T")
    ax2.set_ylabel("relative WER change vs own baseline, %")
    ax2.set_title("Relative change: ours vs the paper")
    ax2.grid(alpha=0.3)
    _legend(ax2)
    _finish(plt, fig, os.path.join(out, "wer_vs_rounds.png"), _caption(args))


def _eps_axis(ax, eps: list[float]) -> None:
    """Log x-axis with plain tick labels at our and the paper's epsilons."""
    from matplotlib.ticker import FixedLocator, NullLocator

    ticks = sorted(set(eps) | {float(e) for e in PAPER_EPS if e != "none"})
    ax.set_xscale("log")
    ax.set_xlim(min(ticks) / 1.6, max(ticks) * 1.6)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([f"{t:g}" for t in ticks])


def plot_epsilon(out: str, args) -> None:
    """DP-FMP WER per noise draw and their mean vs epsilon; relative change vs the paper's Table 4."""
    plt, fig, ax, ax2 = _figure()
    T = args.t_sweep
    base = load(out, "baseline")
    no_dp = load(out, f"fmp-T{T}-sigma{args.dp_sigma}-b{args.dp_beta}")
    eps, means, lows, highs = [], [], [], []
    first, any_sig = True, False
    for e in args.epsilons.split():
        draws = draws_of(out, T, e, args.draws)
        if not draws:
            continue
        x = float(e)
        eps.append(x)
        means.append(sum(d["wer"] for d in draws) / len(draws))
        for k, d in enumerate(draws):
            xj = x * (1.0 + 0.08 * (k - (len(draws) - 1) / 2.0))   # spread the draws apart
            lo, hi = _interval(d)
            lows.append(lo)
            highs.append(hi)
            ax.errorbar([xj], [d["wer"]], yerr=[[d["wer"] - lo], [hi - d["wer"]]], fmt=".", color="tab:purple",
                        alpha=0.6, capsize=2, label="one noise draw, 95% bootstrap CI" if first else None)
            if _significant(d):
                ax.plot([xj], [d["wer"]], "*", color="tab:purple", ms=12,
                        label=None if any_sig else "draw significant vs no DP (MAPSSWE)")
                any_sig = True
            first = False
    if not any_sig:
        ax.plot([], [], "*", color="tab:purple", ms=12, label="draws significant vs no DP: none (MAPSSWE)")
    ax.plot(eps, means, "o-", color="tab:purple", label=f"DP-FMP, mean of {args.draws} draw(s)")
    # one filled band only (the no-DP row's); the baseline's interval is drawn as its two edges,
    # so two overlapping 95% bands never blend into a third colour
    for report, color, style, name, filled in ((no_dp, "tab:green", "--", "FMP, no DP", True),
                                               (base, "tab:red", ":", "NNLM baseline", False)):
        if report is None:
            continue
        lo, hi = _interval(report)
        if filled:
            ax.axhline(report["wer"], color=color, ls=style, label=f"{name} (shaded band: 95% CI)")
            ax.axhspan(lo, hi, color=color, alpha=0.12)
        else:
            ax.axhline(report["wer"], color=color, ls=style, lw=1.5, label=f"{name} (thin lines: 95% CI)")
            for edge in (lo, hi):
                ax.axhline(edge, color=color, ls=style, lw=0.7)
        lows.append(lo)
        highs.append(hi)
    _eps_axis(ax, eps)
    ax.set_xlabel("epsilon (utterance level, log scale)")
    ax.set_ylabel("WER % (ours)")
    ax.set_title("DP-FMP on our evaluation clients")
    if lows:
        _wer_axis(ax, lows, highs)
    ax.grid(alpha=0.3)
    _legend(ax)
    if no_dp is not None and eps:
        ref = no_dp["wer"]
        first = True
        for e in args.epsilons.split():
            draws = draws_of(out, T, e, args.draws)
            for k, d in enumerate(draws):
                boot = d.get("bootstrap") or {}
                if boot.get("diff") is None:
                    continue
                xj = float(e) * (1.0 + 0.08 * (k - (len(draws) - 1) / 2.0))
                y = 100.0 * boot["diff"] / ref
                ax2.errorbar([xj], [y], yerr=[[y - 100.0 * boot["diff_low"] / ref], [100.0 * boot["diff_high"] / ref - y]],
                             fmt=".", color="tab:purple", alpha=0.6, capsize=2,
                             label="ours, one draw (95% CI of the difference)" if first else None)
                first = False
        ax2.plot(eps, [100.0 * (m - ref) / ref for m in means], "o-", color="tab:purple",
                 label=f"ours, mean of {args.draws} draw(s)")
    pe = sorted(float(e) for e in PAPER_EPS if e != "none")
    ax2.plot(pe, [100.0 * (PAPER_EPS[f"{e:g}"] - PAPER_EPS["none"]) / PAPER_EPS["none"] for e in pe], "s--",
             color="tab:gray", label="paper 000, Table 4 (AMI; other recognizer)")
    ax2.axhline(0, color="k", lw=0.8)
    _eps_axis(ax2, eps)
    ax2.set_xlabel("epsilon (log scale)")
    ax2.set_ylabel("relative WER change vs no-DP FMP, %")
    ax2.set_title("Cost of DP: ours vs the paper")
    ax2.grid(alpha=0.3)
    _legend(ax2)
    _finish(plt, fig, os.path.join(out, "wer_vs_epsilon.png"), _caption(args))


if __name__ == "__main__":
    sys.exit(main())
