#!/usr/bin/env python3
"""Results tables (Markdown) and plots for bin/fmp-experiment (wrapper: bin/fmp-report).

    python -m asrpriv.reports.fmp [--data DATA_DIR] --t-sweep T --rounds ... OUT

Reads OUT/runs/*/wer.json (from `asrpriv score-wer --format json --bootstrap N [--compare REF]`)
and writes OUT/results.md, OUT/wer_vs_rounds.png and OUT/wer_vs_epsilon.png. WERs are percent;
"pts" are percentage points of WER; every relative change and significance cell names the
system it is measured against. Confidence intervals are bootstrap percentile intervals over
utterances (asrpriv.wer.bootstrap); significance is the MAPSSWE test (NIST sc_stats) at 0.05.

Client-level statistics (issue 38): each run is also scored with the evaluation clients as the
resampled unit (score-wer's library entry with ``--bootstrap-unit client``, the clients taken
from the evaluation N-best OUT/data/eval/part-0.tsv; runs/NAME/wer-client.json), giving a
client-level interval beside each utterance-level one and, per table, a per-client table of WER
changes with the exact sign test. Holm-adjusted p-values are taken within each table's family
(its rows' MAPSSWE tests; its per-client table's sign tests). A run whose hypotheses are not in
OUT gets '–' there.

The paper's numbers are paper 000 (Federated Marginal Personalization), AMI column of
Table 2 (rounds), Table 3 (sigma, alpha/beta) and Table 4 (DP), copied here. They come from a
different first-pass recognizer, AMI split and LMs: compare directions and relative changes only.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

from asrpriv.reports.common import (ci as common_ci, data_name, data_paragraph, mean_of_draws, mode_label,
                                    part_commands, read_json, runtime_paragraph)

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


def draw_names(out: str, T: int, eps: str, n: int) -> list[str]:
    """The run names of an epsilon's noise draws that were made (the runs :func:`draws_of` reads)."""
    return [f"fmp-T{T}-dp{eps}-draw{d}" for d in range(1, n + 1) if load(out, f"fmp-T{T}-dp{eps}-draw{d}")]


# ------------------------------------------------------------------ client-level statistics (issue 38)
CLIENT_FILE = "wer-client.json"   # runs/NAME/wer-client.json: NAME scored with clients as the unit
EVAL_REF = os.path.join("data", "eval.ref")
EVAL_NBEST = os.path.join("data", "eval", "part-0.tsv")   # the evaluation N-best: its client column


def client_level(out: str, name: str, ref_name: str | None, resamples: int, seed: int,
                 ref_path: str = EVAL_REF, nbest_path: str = EVAL_NBEST) -> dict | None:
    """runs/NAME scored with the evaluation clients (meetings) as the resampled unit, against
    runs/REF_NAME when given: the report of ``asrpriv score-wer --ref OUT/data/eval.ref --hyp
    runs/NAME/hyp.txt [--compare runs/REF_NAME/hyp.txt] --bootstrap RESAMPLES --seed SEED
    --bootstrap-unit client --utt2client OUT/data/eval/part-0.tsv --format json`` (its library
    entry, :func:`asrpriv.wer.step.score_wer_files`), also written to runs/NAME/wer-client.json.

    Its ``bootstrap`` block resamples clients (a difference's interval pairs both systems on the
    same resampled clients); its ``compare`` block keeps the MAPSSWE test and adds ``units``: each
    client's WER under both systems, how many improve/worsen/tie and the exact sign test.
    None when the run's hypotheses, the evaluation reference or its N-best are not in OUT.
    ``ref_path``/``nbest_path``: where a recipe keeps them, relative to OUT (these defaults are
    bin/fmp-experiment's; bin/fl-finetune-experiment's are data/eval.ref and data/eval.tsv)."""
    from asrpriv.wer.step import ScoreWerSettings, score_wer_files

    hyp = os.path.join(out, "runs", name, "hyp.txt")
    ref = os.path.join(out, ref_path)
    nbest = os.path.join(out, nbest_path)
    other = os.path.join(out, "runs", ref_name, "hyp.txt") if ref_name else None
    if not all(os.path.exists(p) for p in (hyp, ref, nbest) + ((other,) if other else ())):
        return None
    path = os.path.join(out, "runs", name, CLIENT_FILE)
    settings = ScoreWerSettings(ref=ref, hyp=hyp, compare=(other,) if other else (), bootstrap=resamples,
                                seed=seed, bootstrap_unit="client", utt2client=nbest, out_format="json",
                                output=path)
    score_wer_files(settings, warn=lambda message: None)   # its warnings were given when the recipe scored
    return read_json(path)


class Family:
    """Holm's adjustment (:func:`asrpriv.stats.multiple.holm_adjust`) over the tests of one
    table: every p-value added under a key, adjusted together once all are in."""

    def __init__(self) -> None:
        self.p: dict[str, float] = {}
        self._holm: dict[str, float] | None = None

    def add(self, key: str, p: float | None) -> None:
        if p is not None:
            self.p[key] = p
            self._holm = None

    def holm(self, key: str) -> float | None:
        if self._holm is None:
            from asrpriv.stats.multiple import holm_adjust

            keys = list(self.p)
            self._holm = dict(zip(keys, holm_adjust([self.p[k] for k in keys])))
        return self._holm.get(key)

    def __len__(self) -> int:
        return len(self.p)


def _mapsswe_p(report: dict | None) -> float | None:
    comp = (report or {}).get("compare")
    return comp["p_value"] if comp else None


def _sign_p(client: dict | None) -> float | None:
    units = ((client or {}).get("compare") or {}).get("units")
    return units["sign_test_p"] if units else None


def fmt_p(p: float) -> str:
    """A p-value: 3 decimals, '< 0.001' below that; '*' when below 0.05."""
    text = f"{p:.3f}" if p >= 0.001 else "< 0.001"
    return text + (" *" if p < 0.05 else "")


def client_cell(reports: list[dict | None]) -> str:
    """'24.37 [23.06, 25.65]; diff +0.11 [-0.02, +0.27]': the client-level WER interval and the
    paired interval of the difference; for several noise draws their mean and the union of their
    intervals (as :func:`mean_of_draws`); '–' without client-level scores."""
    made = [r for r in reports if r is not None]
    if not made or len(made) < len(reports):
        return "–"
    s = mean_of_draws(made)
    text = f"{s['wer']:.2f}"
    if s["low"] is not None:
        text += f" [{s['low']:.2f}, {s['high']:.2f}]"
    if s["diff"] is not None:
        text += f"; diff {s['diff']:+.2f} [{s['diff_low']:+.2f}, {s['diff_high']:+.2f}]"
    if len(made) > 1:
        text += f" (mean of {len(made)} draws; union of their intervals)"
    return text


def holm_cell(family: Family, keys: list[str]) -> str:
    """The Holm-adjusted MAPSSWE p-value(s) of a row: one value, or the range over its draws."""
    ps = [family.holm(k) for k in keys]
    ps = [p for p in ps if p is not None]
    if not ps:
        return ""
    if len(ps) == 1:
        return fmt_p(ps[0])
    below = sum(1 for p in ps if p < 0.05)
    span = f"{min(ps):.3f}" if f"{min(ps):.3f}" == f"{max(ps):.3f}" else f"{min(ps):.3f}–{max(ps):.3f}"
    return f"{span} ({below} of {len(ps)} draws below 0.05)"


def client_rows(entries: list[tuple[str, str, str, dict | None]], family: Family, clients: list[str]) -> list[str]:
    """The per-client table of a main table: the client-level paired interval of the difference,
    how many clients improve/worsen/tie, the exact sign test and its Holm-adjusted value over the
    table's sign tests (each cell naming the reference), then per client the change in WER points
    (system minus its reference)."""
    rows = []
    for label, key, ref_name, client in entries:
        units = ((client or {}).get("compare") or {}).get("units")
        boot = (client or {}).get("bootstrap") or {}
        if not units:
            rows.append(f"| {label} | – | – | – | – | " + " | ".join("–" for _ in clients) + " |")
            continue
        by_name = {r["client"]: r for r in units["rows"]}
        cells = []
        for c in clients:
            r = by_name.get(c)
            cells.append("–" if r is None or r["wer_a"] is None else f"{r['wer_a'] - r['wer_b']:+.2f}")
        holm = family.holm(key)
        diff = (f"{boot['diff']:+.2f} [{boot['diff_low']:+.2f}, {boot['diff_high']:+.2f}]"
                if boot.get("diff") is not None else "–")
        rows.append(f"| {label} | {diff} vs {ref_name} | {units['improve']} / {units['worsen']} / {units['tie']} "
                    f"vs {ref_name} | p = {units['sign_test_p']:.3f} vs {ref_name} | "
                    f"{fmt_p(holm) if holm is not None else '–'} | " + " | ".join(cells) + " |")
    return rows


def client_table(title: str, entries: list[tuple[str, str, str, dict | None]], clients: list[str]) -> list[str]:
    """'### TITLE' and its per-client table (nothing when no entry has client-level scores).
    ENTRIES: (row label, run name, the reference's name in the tables, client-level report)."""
    if not clients or not any(((c or {}).get("compare") or {}).get("units") for *_x, c in entries):
        return []
    family = Family()
    for _label, key, _ref, client in entries:
        family.add(key, _sign_p(client))
    head = ("| system | client-level diff, pts [95% CI] | clients improve / worsen / tie | exact sign test "
            f"over clients | sign test p, Holm (family of {len(family)}) | " + " | ".join(clients)
            + " |\n|" + "---|" * (len(clients) + 5))
    return ["", f"### {title}", "",
            "Per evaluation client, the change in WER points (system minus its reference; negative: the "
            "system is better on that client).", "", head] + client_rows(entries, family, clients)


def sweep_label(T: int) -> str:
    """The T of Tables 3 and 4: ours, and the paper's when it differs (its columns are T = 10)."""
    return f"T={T}" if T == PAPER_T_SWEEP else f"ours T={T}; paper 000's column T={PAPER_T_SWEEP}"


def _parse_args(argv: list[str] | None):
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
    return ap.parse_args(argv)


def _spec(label, names, ref, base_wer, base_name, paper_cell, dp=False) -> dict:
    """One row of a main table: its label, run names (several: DP draws), the run it is
    compared with (None: the reference row), that reference's WER and name, the paper cell."""
    return {"label": label, "names": names, "ref": ref, "base": base_wer, "base_name": base_name,
            "paper": paper_cell, "dp": dp}


class _Tables:
    """Formats the main tables and their per-client tables of one run directory (the client-
    level scoring of each (run, reference) pair is done once and kept)."""

    def __init__(self, out: str, boot: dict, clients: list[str]):
        self.out, self.boot, self.clients = out, boot, clients
        self.scored: dict[tuple[str, str | None], dict | None] = {}

    def client(self, name: str, ref: str | None) -> dict | None:
        """NAME scored at the client level against REF (once per pair)."""
        if (name, ref) not in self.scored:
            out, boot = self.out, self.boot
            made = load(out, name) is not None and boot.get("resamples") is not None
            self.scored[(name, ref)] = (client_level(out, name, ref, int(boot["resamples"]),
                                                     int(boot.get("seed") or 1))
                                        if made else None)
        return self.scored[(name, ref)]

    def table(self, specs: list[dict], title: str) -> list[str]:
        """A main table (the columns it always had, then the client-level interval and the
        Holm-adjusted MAPSSWE p over the table's family) and its per-client table."""
        out, clients = self.out, self.clients
        family = Family()
        for sp in specs:
            for name in sp["names"]:
                family.add(name, _mapsswe_p(load(out, name)) if sp["ref"] else None)
        head = ("| system | WER % [95% CI] | change (relative; difference in WER points [95% CI]) | "
                "MAPSSWE significant at 0.05 | paper 000 (AMI, other recognizer) | "
                f"client-level: WER % [95% CI]; diff, pts [95% CI] ({len(clients)} clients) | "
                f"MAPSSWE p, Holm (family of {len(family)}) |\n|---|---|---|---|---|---|---|")
        body, entries = [head], []
        for sp in specs:
            names, ref = sp["names"], sp["ref"]
            reps = [self.client(n, ref) for n in names]
            if sp.get("dp"):
                draws = [r for r in (load(out, n) for n in names) if r is not None]
                text = dp_row(sp["label"], draws, sp["base"], sp["base_name"], sp["paper"])
                entries += [(f"{sp['label']}, draw {k} of {len(names)} draws", n, sp["base_name"], r)
                            for k, (n, r) in enumerate(zip(names, reps), 1)]
            else:
                report = load(out, names[0]) if names else None
                text = row(sp["label"], report, sp["base"], sp["base_name"], sp["paper"])
                if ref:
                    entries.append((sp["label"], names[0], sp["base_name"], reps[0]))
            holm = holm_cell(family, names) if ref else ""
            body.append(f"{text} {client_cell(reps) if names else '–'} | {holm} |")
        return body + client_table(f"{title} per client", entries, clients)


def _header(args, out: str, base: dict, boot: dict, clients: list[str], bl: str) -> list[str]:
    """The title and the paragraphs before Table 2."""
    return [
        "# FMP on the dev N-best lists" + (" (reduced demo run)" if args.reduced == "1" else ""),
        "",
        mode_line(out, args.reduced == "1"),
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
        client_paragraph(len(clients), boot),
        "",
        PAPER_NOTE,
        "",
        "## Table 2: rounds",
        "",
    ]


def _table4_intro(args, T: int, nd: str) -> list[str]:
    """Table 4's heading and the paragraph on its mechanism and guarantee."""
    return ["", f"## Table 4: DP-FMP ({sweep_label(T)}, sigma={args.dp_sigma}, alpha=0.5, beta={args.dp_beta}, "
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
            "paper's Table 4 does), which is compared with the NNLM baseline. The Holm family of this "
            "table holds every draw's test.", ""]


def _sections(args, out: str, tables: _Tables, b, bl: str) -> list[str]:
    """Tables 2-4 and the in-domain control, each with its per-client table."""
    T = args.t_sweep
    specs = [_spec("first-pass 1-best", ["firstpass"], "baseline", b, bl, "–"),
             _spec("NNLM baseline (unadapted)", ["baseline"], None, None, bl, paper(PAPER_T[0]))]
    specs += [_spec(f"FMP T={t}", [f"fmp-T{t}"], "baseline", b, bl, paper(PAPER_T.get(int(t)), PAPER_T[0]))
              for t in args.rounds.split()]
    lines = tables.table(specs, "Table 2")
    lines += ["", f"## Table 3: kernel bandwidth and interpolation weights ({sweep_label(T)})", ""]
    specs = [_spec(f"alpha=0.5 beta=0.25 sigma={s}", [f"fmp-T{T}-sigma{s}"], "baseline", b, bl,
                   paper(PAPER_SIGMA.get(s), PAPER_T[0])) for s in args.sigmas.split()]
    specs += [_spec("alpha=0 beta=0.75 sigma=5", [f"fmp-T{T}-a0-b0.75"], "baseline", b, bl,
                    paper(PAPER_AB["a0-b0.75"], PAPER_T[0])),
              _spec("alpha=0.75 beta=0 sigma=5", [f"fmp-T{T}-a0.75-b0"], "baseline", b, bl,
                    paper(PAPER_AB["a0.75-b0"], PAPER_T[0]))]
    lines += tables.table(specs, "Table 3")
    nodp_name = f"fmp-T{T}-sigma{args.dp_sigma}-b{args.dp_beta}"
    no_dp = load(out, nodp_name)
    nd = "FMP no DP"
    lines += _table4_intro(args, T, nd)
    specs = [_spec(f"{nd} (sigma={args.dp_sigma}, beta={args.dp_beta})", [nodp_name] if no_dp else [], "baseline",
                   b, bl, paper(PAPER_EPS["none"]))]
    specs += [_spec(f"FMP, ({e}, 0)-DP", draw_names(out, T, e, args.draws), nodp_name,
                    no_dp["wer"] if no_dp else None, nd, paper(PAPER_EPS.get(e), PAPER_EPS["none"], "paper's no-DP"),
                    dp=True) for e in args.epsilons.split()]
    lines += tables.table(specs, "Table 4")
    bin_ = load(out, "baseline-indomain")
    if bin_ is not None:
        ib = "in-domain baseline"
        lines += ["", "## In-domain control: background LM trained on all training meetings", "",
                  f"Weights chosen on the tuning clients for this model: {weights(out, 'baseline-indomain')}.", ""]
        specs = [_spec("in-domain baseline (in-domain NNLM, unadapted)", ["baseline-indomain"], "baseline", b, bl, "–"),
                 _spec(f"FMP T={T} on the in-domain NNLM", [f"indomain-fmp-T{T}"], "baseline-indomain",
                       bin_["wer"], ib, "–")]
        lines += tables.table(specs, "In-domain control")
    return lines


PLOTS_SECTION = ["", "## Plots", "",
                 "`wer_vs_rounds.png`: WER after T rounds (T = 0 is the NNLM baseline) with 95% intervals, "
                 "and the relative change against each side's own baseline beside the paper's Table 2. "
                 "`wer_vs_epsilon.png`: DP-FMP WER per noise draw (with intervals) and their mean, and the "
                 "relative change against the no-DP row beside the paper's Table 4. Filled stars: "
                 "MAPSSWE-significant (0.05) against the reference named in the tables. "
                 f"The {AXIS_NOTE}.", ""]


def main(argv: list[str] | None = None) -> int:
    """bin/fmp-report: OUT/results.md (read the run's reports, format the tables) and the plots."""
    args = _parse_args(argv)
    out = args.out
    first = load(out, "firstpass")
    base = load(out, "baseline")
    if base is None or first is None:
        print("fmp-report: missing baseline results", file=sys.stderr)
        return 1
    boot = base.get("bootstrap") or {}
    bl = "NNLM baseline"
    clients = args.eval_clients.split()
    lines = _header(args, out, base, boot, clients, bl)
    lines += _sections(args, out, _Tables(out, boot, clients), base["wer"], bl)
    lines += PLOTS_SECTION
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


def mode_line(out: str, reduced: bool) -> str:
    """The mode sentence (:func:`asrpriv.reports.common.mode_label`) from the recorded commands."""
    commands = part_commands(out)
    if reduced:
        return mode_label("reduced", commands)
    if not commands:
        return ("Mode: full, as far as known: the command was not recorded (no OUT/runtime.tsv), so whether "
                "every knob was at its default is not known.")
    return mode_label("full", commands)


def client_paragraph(n_clients: int, boot: dict) -> str:
    """What the client-level columns and the per-client tables are, and how far they carry."""
    return (f"Client-level statistics (issue 38): FMP adapts per client (meeting), so beside the "
            f"utterance-level numbers every row is also scored with the {n_clients} evaluation clients as the "
            f"resampled unit (`asrpriv score-wer --bootstrap-unit client --utt2client OUT/{EVAL_NBEST}`, "
            f"{boot.get('resamples', '?')} resamples, seed {boot.get('seed', '?')}; a difference's interval "
            "resamples both systems' clients together; each run's report is in runs/NAME/"
            f"{CLIENT_FILE}). With {n_clients} clients a resample is one of few distinct multisets "
            f"({math.comb(2 * n_clients - 1, n_clients) if n_clients else 0}) and a percentile bootstrap over "
            "so few clusters tends to be too narrow: read these intervals as a lower bound on the "
            "uncertainty. Each per-client table counts the clients whose WER a system lowers (improve), "
            "raises (worsen) or leaves unchanged (tie) against its reference, with the exact two-sided sign "
            "test over the clients that changed (ties left out; with "
            f"{n_clients} clients the smallest possible p is {2.0 / 2 ** n_clients:.3f}, all of them moving "
            "the same way). Holm-adjusted p-values (Holm 1979) are taken within each table's family: the "
            "MAPSSWE tests of a table's rows (last column) in one family, the sign tests of its per-client "
            "table in another; * marks an adjusted p below 0.05.")


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
