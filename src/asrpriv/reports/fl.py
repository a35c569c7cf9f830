#!/usr/bin/env python3
"""Results tables (Markdown) and a plot for bin/fl-finetune-experiment (wrapper: bin/fl-report).

    python -m asrpriv.reports.fl [--data DATA_DIR] --mode M --rate Q ... OUT

Reads OUT/runs/*/wer.json (asrpriv score-wer --format json, with MAPSSWE against the pre-trained
NNLM and bootstrap intervals), OUT/runs/*/ppl.json (asrpriv perplexity --json: natural-log
totals, ppl = exp(-logprob / tokens)), OUT/privacy/*.json (asrpriv privacy-report --json) and
OUT/data/adapt.confidence.json, and writes OUT/results.md and OUT/fl_wer.png. Paper 001's
numbers (its *conversation* set, Tables 2, 4, 5) are printed beside ours for orientation only:
a different recognizer, data, NNLM and scale.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics

from asrpriv.reports.common import data_name, data_paragraph, fmt_eps, run_time

# paper 001: (PPL, WER %) on the conversation evaluation set
PAPER_T2 = {"nonnlm": (None, 8.07), "pretrained": (109.4, 7.96), "server-all": (31.3, 7.79),
            "fl-none": (32.0, 7.79), "fl-hard": (31.2, 7.76), "fl-utterance": (30.8, 7.77),
            "fl-token": (30.3, 7.75)}
PAPER_T4 = {"scratch-server-none": (34.7, 7.81), "scratch-fl-none": (35.8, 7.85),
            "scratch-fl-token": (34.5, 7.82)}
# Table 5: z -> (printed epsilon at delta 1e-5, {mode: (PPL, WER)}); z from its Sec. 3.4
PAPER_T5 = {"0.2": (248.6, {"none": (46.1, 7.88), "token": (45.9, 7.85)}),
            "0.5": (14.2, {"none": (50.4, 7.91), "token": (50.4, 7.89)}),
            "1.5": (0.9, {"none": (56.7, 7.92), "token": (56.3, 7.93)})}
LABELS = {"nonnlm": "No NNLM (first-pass 1-best)", "pretrained": "Pre-trained NNLM (no adaptation)",
          "server-all": "Server fine-tuned (all 1-best)", "fl-none": "FL fine-tuned (all utts)",
          "fl-hard": "FL fine-tuned (hard threshold)", "fl-utterance": "FL fine-tuned (utt weighted)",
          "fl-token": "FL fine-tuned (token weighted)",
          "scratch-server-none": "Server trained from scratch (all 1-best)",
          "scratch-fl-none": "FL trained from scratch (all utts)",
          "scratch-fl-token": "FL trained from scratch (token weighted)",
          "oracle-server-all": "Oracle: server fine-tuned on the references",
          "oracle-fl-none": "Oracle: FL fine-tuned on the references"}
MODE_LABEL = {"none": "all utts", "token": "token weighted", "utterance": "utt weighted", "hard": "hard threshold"}


def load(path: str) -> dict | None:
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def rel(ours: float, base: float) -> str:
    return f"{100.0 * (ours - base) / base:+.1f}%"


def sig(report: dict | None) -> str:
    comp = (report or {}).get("compare")
    if not comp:
        return "–"
    mark = "yes" if comp["significant"] else "no"
    return f"{mark} (Z={comp['z']:.2f}, p={comp['p_value']:.3f})"


def ci(report: dict) -> str:
    b = report.get("bootstrap")
    return f"[{b['wer_low']:.2f}, {b['wer_high']:.2f}]" if b else ""


def paper_cell(pair, base_wer=None) -> tuple[str, str]:
    if pair is None:
        return "–", "–"
    ppl, wer = pair
    w = f"{wer:.2f}" + (f" ({rel(wer, base_wer)})" if base_wer and wer != base_wer else "")
    return ("–" if ppl is None else f"{ppl:.1f}"), w


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="fl-report")
    ap.add_argument("--data", default=None, help="DATA_DIR of the run (named from its SOURCE.txt)")
    for opt in ("mode", "rate", "rounds", "clients", "server-lr", "clip", "dp-z", "dp-modes", "draws", "fl-modes",
                "scratch-modes", "hard-threshold", "delta", "nnlm-args", "noise-seeded", "seconds"):
        ap.add_argument("--" + opt, default="")
    ap.add_argument("out")
    a = ap.parse_args(argv)
    out = a.out
    runs = {os.path.basename(os.path.dirname(p)): p for p in glob.glob(os.path.join(out, "runs", "*", "wer.json"))}
    wer = {n: load(p) for n, p in runs.items()}
    ppl = {n: load(os.path.join(out, "runs", n, "ppl.json")) for n in runs}
    base = wer.get("pretrained")
    base_wer = base["wer"] if base else None
    L: list[str] = []
    L.append("# Federated NNLM fine-tuning with confidences (paper 001)\n")
    L.append(data_paragraph(a.data) + "\n")
    L.append("Made by `bin/fl-finetune-experiment` (mode: %s; %s). **Not the paper's setting**: paper 001 used an "
             "in-house video recognizer (CTC + 5-gram), 5-best lists, a character-aware LSTM NNLM, 166K adaptation "
             "utterances over ~10K Zipf-distributed devices and 1,000 rounds of 100 clients; here a synthetic-speech first pass "
             "(20-best, 2M-bigram LM), %s adaptation meetings as clients, q = %s, T = %s rounds, "
             "FedAdam lr %s, NNLM `%s`. The paper's numbers (its *conversation* set) are beside ours for orientation; "
             "compare directions and relative sizes, not values.\n"
             % (a.mode, run_time(int(a.seconds or 0), out, "**/*.key"), a.clients, a.rate, a.rounds, a.server_lr, a.nnlm_args))
    if base:
        L.append(f"Evaluation: {base['sentences']} dev utterances, {base['ref_words']} reference words (one word = "
                 f"{100.0 / base['ref_words']:.3f} WER points); weights tuned per row on the held-out tuning meetings. "
                 "WER intervals: 95% bootstrap over utterances. Every *rel.* and MAPSSWE cell compares with the "
                 "**pre-trained NNLM** row (ours with ours, the paper's with the paper's).\n")
    conf = load(os.path.join(out, "data", "adapt.confidence.json"))
    if conf:
        L.append("Adaptation confidences (rank-1 words of the adapt split, calibration fitted on the tuning meetings): "
                 + ", ".join(f"{k} = {v:.3f}" if isinstance(v, float) else f"{k} = {v}"
                             for k, v in _flat_metrics(conf).items()) + "\n")

    def table(title: str, names: list[str], paper: dict) -> None:
        L.append(f"## {title}\n")
        L.append("| Model | PPL | WER | 95% CI | rel. vs pre-trained | MAPSSWE vs pre-trained | paper PPL | paper WER (rel. vs its pre-trained) |")
        L.append("|---|---|---|---|---|---|---|---|")
        for n in names:
            r = wer.get(n)
            pp, pw = paper_cell(paper.get(n), PAPER_T2["pretrained"][1])
            if r is None:
                L.append(f"| {LABELS.get(n, n)} | – | not run | | | | {pp} | {pw} |")
                continue
            p = ppl.get(n)
            relc = rel(r["wer"], base_wer) if base_wer and n != "pretrained" else "–"
            L.append(f"| {LABELS.get(n, n)} | {p['ppl']:.1f} |" if p else f"| {LABELS.get(n, n)} | – |")
            L[-1] += f" {r['wer']:.2f} | {ci(r)} | {relc} | {sig(r) if n != 'pretrained' else '–'} | {pp} | {pw} |"
        L.append("")

    t2 = ["nonnlm", "pretrained", "server-all"] + [f"fl-{m}" for m in a.fl_modes.split()]
    table("Table 2: adaptation on the 1-best with confidences", t2, PAPER_T2)
    t4 = (["scratch-server-none"] if a.scratch_modes.split() else []) + [f"scratch-fl-{m}" for m in a.scratch_modes.split()]
    if t4:
        table("Table 4: without pre-training", t4, PAPER_T4)

    # Table 5: DP rows
    L.append("## Table 5: client-level DP (clip C = %s, Gaussian noise z C on the clipped sum, fixed denominator q N)\n" % a.clip)
    L.append(f"epsilon at delta = {a.delta} for this run's q = {a.rate} and T = {a.rounds} (privacy-report: dp-accounting "
             "RDP with default orders, PLD at discretization 1e-4); *paper setting* = the same accountants at 001's "
             "q = 0.01, T = 1000. PPL and WER: mean over the noise draws (min-max); MAPSSWE: draws significantly "
             "different from the pre-trained NNLM." + (" **Noise seeded (NOISE_SEED): not private.**" if a.noise_seeded else "") + "\n")
    L.append("| Model | z | eps RDP (this run) | eps PLD (this run) | eps RDP / PLD (paper setting) | paper eps | draws "
             "| PPL | WER | rel. vs pre-trained | MAPSSWE sig. | paper PPL | paper WER |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    dp_points = []
    history_eps: list[str] = []
    for mode in a.dp_modes.split():
        for z in a.dp_z.split():
            names = sorted(n for n in wer if n.startswith(f"dp-{mode}-z{z}-d"))
            ours = load(os.path.join(out, "privacy", f"z{z}.json")) or {}
            theirs = load(os.path.join(out, "privacy", f"paper-z{z}.json")) or {}
            pe, pm = PAPER_T5.get(z, (None, {}))
            pp, pw = pm.get(mode, (None, None)) if pm else (None, None)
            e = lambda d, k: fmt_eps(d[k]) if k in d else "–"  # noqa: E731
            if not names:
                L.append(f"| FL ({MODE_LABEL.get(mode, mode)}) | {z} | {e(ours, 'epsilon_rdp')} | {e(ours, 'epsilon_pld')} "
                         f"| {e(theirs, 'epsilon_rdp')} / {e(theirs, 'epsilon_pld')} | {pe or '–'} | 0 | – | not run | | | | |")
                continue
            hist = [_history_epsilon(out, n) for n in names]
            hist = [h for h in hist if h]
            ws = [wer[n]["wer"] for n in names]
            ps = [ppl[n]["ppl"] for n in names if ppl.get(n)]
            nsig = sum(1 for n in names if (wer[n].get("compare") or {}).get("significant"))
            for n in names:
                dp_points.append((f"DP {MODE_LABEL.get(mode, mode)} z={z}", wer[n]))
            mw = statistics.mean(ws)
            L.append(f"| FL ({MODE_LABEL.get(mode, mode)}) | {z} | {e(ours, 'epsilon_rdp')} | {e(ours, 'epsilon_pld')} "
                     f"| {e(theirs, 'epsilon_rdp')} / {e(theirs, 'epsilon_pld')} | {pe or '–'} | {len(names)} "
                     f"| {statistics.mean(ps):.1f} ({min(ps):.1f}-{max(ps):.1f}) | {mw:.2f} ({min(ws):.2f}-{max(ws):.2f}) "
                     f"| {rel(mw, base_wer) if base_wer else '–'} | {nsig} of {len(names)} "
                     f"| {pp if pp else '–'} | {pw if pw else '–'} |")
            if hist and any(h != hist[0] for h in hist):
                L.append(f"| (the models' own histories disagree: {sorted(set(hist))}) |||||||||||||")
            elif hist:
                history_eps.append(f"z = {z}, {MODE_LABEL.get(mode, mode)}: {hist[0]}")
    L.append("")
    if history_eps:
        L.append("Each DP model's own privacy history (`privacy-report MODEL`: the Gaussian releases that aggregate "
                 "recorded, one per round that had clients), epsilon RDP / PLD: " + "; ".join(history_eps) + ".\n")
    oracle = [n for n in ("oracle-server-all", "oracle-fl-none") if n in wer]
    if oracle:
        table("Oracle: adaptation on the references of the adaptation split (the ceiling)", oracle, {})
    L.append("## Files\n")
    L.append("`runs/ROW/` (weights.txt, hyp.txt, wer.json, ppl.json), `models/ROW.pt`, `fl/ROW/` (sampled cohorts, "
             "FedAdam state), `privacy/` (privacy-report JSON and each DP model's own history), `data/`; every "
             "artefact has a `.key` file with the settings it was made from.\n")
    with open(os.path.join(out, "results.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(L))
    plot(out, wer, [n for n in t2 + t4 + oracle if n in wer], dp_points, data_name(a.data))
    return 0


def _history_epsilon(out: str, name: str) -> str | None:
    """'RDP / PLD' from the last line of `privacy-report MODEL` ('total at delta D: epsilon X (RDP), Y (PLD)').

    The numbers are shown as privacy-report printed them (4 significant digits), not rounded a
    second time: the table's epsilons are rounded once to the same precision (fmt_eps), so one
    epsilon reads the same in both places (14.25, not 14.3 in one and 14.2 in the other)."""
    import re

    path = os.path.join(out, "privacy", f"{name}.history.txt")
    if not os.path.exists(path):
        return None
    m = re.search(r"epsilon ([0-9.eE+-]+) \(RDP\), ([0-9.eE+-]+) \(PLD\)", open(path, encoding="utf-8").read())
    return f"{m.group(1)} / {m.group(2)}" if m else None


def _flat_metrics(conf: dict) -> dict:
    """The headline numbers of a `confidence --report` JSON: words, % correct, NCE/ECE/AUC raw and calibrated."""
    found: dict = {}
    raw = conf.get("raw") or {}
    if "words" in raw:
        found["words"] = raw["words"]
        found["correct"] = f"{100.0 * raw['p_correct']:.1f}%"
    for part in ("raw", "calibrated"):
        for k in ("nce", "ece", "auc"):
            if k in (conf.get(part) or {}):
                found[f"{k.upper()} {part}"] = conf[part][k]
    return found


def plot(out: str, wer: dict, names: list[str], dp_points: list, data: str = "") -> None:
    """Left: WER with its bootstrap interval; right: WER minus the pre-trained NNLM's, with the paired
    bootstrap interval of the difference (score-wer --compare --bootstrap). DP rows: one point per draw."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [(LABELS.get(n, n), wer[n], "tab:gray" if n in ("nonnlm", "pretrained") else "tab:blue") for n in names]
    draws: dict = {}
    for label, r in dp_points:
        draws[label] = draws.get(label, 0) + 1
        rows.append((f"{label} (draw {draws[label]})", r, "tab:red"))
    if not rows:
        return
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.35 * len(rows) + 1.8), sharey=True)
    ys = list(range(len(rows)))[::-1]
    for y, (_, r, c) in zip(ys, rows):
        b = r.get("bootstrap") or {}
        m = r["wer"]
        axes[0].errorbar([m], [y], xerr=[[m - b.get("wer_low", m)], [b.get("wer_high", m) - m]], fmt="o", color=c, capsize=3)
        if b.get("diff") is not None:
            d = b["diff"]
            axes[1].errorbar([d], [y], xerr=[[d - b["diff_low"]], [b["diff_high"] - d]], fmt="o", color=c, capsize=3)
    axes[0].set_yticks(ys)
    axes[0].set_yticklabels([label for label, _, _ in rows], fontsize=8)
    lows = [(r.get("bootstrap") or {}).get("wer_low", r["wer"]) for _, r, _ in rows]
    highs = [(r.get("bootstrap") or {}).get("wer_high", r["wer"]) for _, r, _ in rows]
    span = max(max(highs) - min(lows), 4.0)      # never zoom in below a 4-point WER window
    centre = (max(highs) + min(lows)) / 2
    axes[0].set_xlim(centre - span / 2 - 0.5, centre + span / 2 + 0.5)
    if "pretrained" in wer:
        axes[0].axvline(wer["pretrained"]["wer"], color="tab:gray", ls="--", lw=0.8)
        ref_words = wer["pretrained"]["ref_words"]
        axes[1].set_xlim(-2.0, 2.0)
        axes[1].set_title(f"one word = {100.0 / ref_words:.2f} points", fontsize=8)
    axes[1].axvline(0.0, color="tab:gray", ls="--", lw=0.8)
    axes[0].set_xlabel("dev WER % (95% bootstrap interval)")
    axes[1].set_xlabel("WER minus pre-trained NNLM (paired 95% interval)")
    if data:
        fig.text(0.01, 0.005, f"Data: {data}.", fontsize=7)
        fig.tight_layout(rect=(0, 0.04, 1, 1))
    else:
        fig.tight_layout()
    fig.savefig(os.path.join(out, "fl_wer.png"), dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
