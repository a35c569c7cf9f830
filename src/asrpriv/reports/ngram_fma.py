"""The results of bin/ngram-fma-experiment (OUT_DIR/results.md), from its JSON reports.

    python -m asrpriv.reports.ngram_fma OUT --data DATA_DIR --betas "0.5 1" --variants "standard reversed"
        --sources "a b c" --draws 3 --prior 0.1 --epsilon 1 --max-l1 15 --tune-clients "..."
        --eval-clients "..." [--reduced 1] [--noise-seed N] [--seconds S] [--command CMD]

Reads OUT/runs/weights.txt (tune-weights), OUT/lm/mixture.json (interpolate's EM weights) and,
for ``firstpass`` and every system, OUT/runs/NAME/wer.json (score-wer --format json --bootstrap N,
with --compare against the row's baseline), OUT/runs/NAME/tune-wer.json (score-wer on the tuning
clients) and OUT/runs/NAME/ppl.json (perplexity --json). A system ``fma-S-VARIANT-BETA`` is the
FMA of the background with adaptation unigrams S (a: 1-best, b: references); source c (a with a
per-utterance L1 bound and Laplace noise) has one system per noise draw,
``fma-c-VARIANT-BETA-dK``, K = 1..DRAWS, each compared with ``fma-a-VARIANT-BETA``.

The choice (:func:`choose`): for each source, the (variant, beta) with the lowest WER on the
tuning clients (a DP source: the mean over its draws); ties go to the first in grid order. The
evaluation WERs of the other rows are shown but were not used to choose.
"""

from __future__ import annotations

import argparse
import os
import sys

from asrpriv.reports.common import (data_paragraph, fmt_diff, fmt_mapsswe, fmt_wer, mean_of_draws,
                                    read_json, runtime_paragraph)

BASELINE = "background"
BASELINE_LABEL = "unadapted background 3-gram"
SOURCE_LABEL = {"a": "1-best", "b": "references", "c": "1-best + DP (eps {eps})"}


def _load(path: str) -> dict:
    return read_json(path)


def fma_name(src: str, variant: str, beta: str, draw: int | None = None) -> str:
    """The run name of an FMA system (as bin/ngram-fma-experiment names it)."""
    return f"fma-{src}-{variant}-{beta}" + (f"-d{draw}" if draw else "")


def build_sources(sources: list[str]) -> list[str]:
    """The sources the recipe builds: SOURCES, with a before c when c is asked for (a, without
    noise, is what the DP rows are compared with)."""
    out = list(sources)
    if "c" in out and "a" not in out:
        out.insert(out.index("c"), "a")
    return out


def choose(candidates: list[tuple[str, list[float]]]) -> tuple[str, float, bool]:
    """The candidate with the lowest mean tuning WER, by the library's rule
    (:func:`asrpriv.io.select.lowest_mean`, as ``asrpriv pick-best`` chooses): (label, that
    mean, whether it lies on the edge of the grid)."""
    from asrpriv.io.select import lowest_mean

    return lowest_mean(candidates)


class Run:
    """The JSON reports of one OUT_DIR."""

    def __init__(self, out: str):
        self.out = out

    def report(self, name: str, kind: str = "wer") -> dict | None:
        path = os.path.join(self.out, "runs", name, f"{kind}.json")
        return read_json(path, missing_ok=True)


def _compare(report: dict | None, baseline: str) -> str:
    """'vs BASELINE: +0.21 [-0.10, +0.50], p = 0.3' (difference in points, paired bootstrap interval,
    MAPSSWE)."""
    if report is None:
        return "–"
    parts = [x for x in (fmt_diff(report), fmt_mapsswe(report)) if x]
    return f"vs {baseline}: " + ", ".join(parts) if parts else "–"


def _dp_compare(draws: list[dict], baseline: str, base_wer: float | None) -> str:
    """Each draw against its non-private counterpart: the mean paired difference, the union of the
    draws' intervals, and how many draws MAPSSWE finds significant (as fmp's Table 4)."""
    s = mean_of_draws(draws)
    text = f"vs {baseline}" + (f" ({base_wer:.2f})" if base_wer is not None else "") + ": "
    if s["diff"] is not None:
        text += (f"{s['diff']:+.2f} [{s['diff_low']:+.2f}, {s['diff_high']:+.2f}] (mean of the draws' "
                 "differences, union of their intervals)")
    if s["compared"]:
        text += (f"; {s['significant']} of {s['compared']} draws significant (p "
                 f"{s['p_min']:.3g}–{s['p_max']:.3g})")
    return text


def _dp_wer(draws: list[dict]) -> str:
    """'23.05 [21.70, 24.40] (mean of 3 draws: 22.97, 23.03, 23.15)': the mean WER over the draws
    and the union of their bootstrap intervals."""
    s = mean_of_draws(draws)
    cell = f"{s['wer']:.2f}"
    if s["low"] is not None:
        cell += f" [{s['low']:.2f}, {s['high']:.2f}]"
    return cell + f" (mean of {s['n']} draws: " + ", ".join(f"{w:.2f}" for w in s["wers"]) + ")"


class _Grid:
    """The FMA systems of the run's grid (sources x variants x betas; DP draws for source c), the
    cells of their rows read from their score files, and ``chosen``: per source, the (variant,
    beta, mean tuning WER, on the grid's edge) of lowest tuning WER."""

    def __init__(self, run: Run, a: argparse.Namespace) -> None:
        self.run = run
        self.betas, self.variants = a.betas.split(), a.variants.split()
        self.sources = build_sources(a.sources.split())
        self.draws = max(1, int(a.draws))
        self.src_label = {k: v.format(eps=a.epsilon) for k, v in SOURCE_LABEL.items()}
        self.a_label = f"FMA on (a) {self.src_label['a']} without noise, same variant and beta"
        self.chosen = self._choose()

    def names(self, src: str, variant: str, beta: str) -> list[str]:
        if src == "c":
            return [fma_name(src, variant, beta, d) for d in range(1, self.draws + 1)]
        return [fma_name(src, variant, beta)]

    def tune_wers(self, src: str, variant: str, beta: str) -> list[float] | None:
        reports = [self.run.report(n, "tune-wer") for n in self.names(src, variant, beta)]
        return None if any(r is None for r in reports) else [r["wer"] for r in reports]

    def _choose(self) -> dict[str, tuple[str, str, float, bool]]:
        """The choice on the tuning clients, per source."""
        betas, variants, tune_wers = self.betas, self.variants, self.tune_wers
        chosen: dict[str, tuple[str, str, float, bool]] = {}
        for src in self.sources:
            cands = [(f"{v}/{b}", w) for v in variants for b in betas if (w := tune_wers(src, v, b))]
            if cands:
                label, mean, _edge = choose(cands)
                v, b = label.split("/")
                chosen[src] = (v, b, mean, len(betas) > 1 and b in (betas[0], betas[-1]))
        return chosen

    def tune_cell(self, src: str | None, name: str | None, variant: str = "", beta: str = "") -> str:
        run, chosen = self.run, self.chosen
        if src is None:
            r = run.report(name, "tune-wer") if name else None
            return f"{r['wer']:.2f}" if r else "–"
        w = self.tune_wers(src, variant, beta)
        if w is None:
            return "–"
        cell = f"{sum(w) / len(w):.2f}" + (" (mean)" if len(w) > 1 else "")
        c = chosen.get(src)
        return cell + (" **chosen**" if c and (c[0], c[1]) == (variant, beta) else "")

    @staticmethod
    def ppl_cells(reps: list[dict | None]) -> tuple[str, str]:
        reps = [r for r in reps if r]
        if not reps:
            return "–", "–"
        ppl = sum(r["ppl"] for r in reps) / len(reps)
        return (f"{ppl:.1f}" + (" (mean)" if len(reps) > 1 else ""),
                f"{100 * reps[0].get('oov_rate', 0):.2f}")

    def fma_row(self, src: str, variant: str, beta: str) -> str:
        run, src_label, a_label, tune_cell = self.run, self.src_label, self.a_label, self.tune_cell
        ns = self.names(src, variant, beta)
        ppl, oov = self.ppl_cells([run.report(n, "ppl") for n in ns])
        head = f"| FMA of the background | {src_label[src]} | {variant} | {beta} | {ppl} | {oov} | " \
               f"{tune_cell(src, None, variant, beta)} | "
        if src == "c":
            reps = [r for r in (run.report(n) for n in ns) if r]
            if not reps:
                return head + "– | – |"
            counterpart = run.report(fma_name("a", variant, beta))
            return head + (f"{_dp_wer(reps)} | "
                           f"{_dp_compare(reps, a_label, counterpart['wer'] if counterpart else None)} |")
        r = run.report(ns[0])
        return head + (f"{fmt_wer(r)} | {_compare(r, BASELINE_LABEL)} |" if r else "– | – |")

    def plain_row(self, label: str, name: str, ppl_name: str | None) -> str:
        run = self.run
        r = run.report(name)
        ppl, oov = self.ppl_cells([run.report(ppl_name, "ppl")] if ppl_name else [])
        cmp = "(the baseline of the rows without noise)" if name == BASELINE else _compare(r, BASELINE_LABEL)
        return (f"| {label} | – | – | – | {ppl} | {oov} | {self.tune_cell(None, name)} | "
                f"{fmt_wer(r) if r else '–'} | {cmp} |")


def every_system_table(g: _Grid, ws: str) -> list[str]:
    """The "Every system" section's table: the rows without adaptation, then every FMA system."""
    sources, variants, betas, plain_row, fma_row = g.sources, g.variants, g.betas, g.plain_row, g.fma_row
    table = ["| LM | adaptation unigram | variant | beta | eval ppl | OOV % | tuning WER % | WER % [95% CI] | "
             "difference in WER points [95% paired bootstrap CI], MAPSSWE p (* = significant at 0.05), "
             "against the baseline named |",
             "|---|---|---|---|---|---|---|---|---|",
             plain_row("first pass (1-best of the N-best)", "firstpass", None),
             plain_row(f"{BASELINE_LABEL}", BASELINE, BASELINE),
             plain_row("in-domain 3-gram (scenario meetings)", "indomain", "indomain"),
             plain_row(f"static mixture background + in-domain (EM weights {ws})", "mixture", "mixture")]
    for src in sources:
        for variant in variants:
            for beta in betas:
                table.append(fma_row(src, variant, beta))
    return table


def chosen_table(g: _Grid, base: dict) -> list[str]:
    """The headline table: one row per source, its setting chosen on the tuning clients."""
    run, sources, betas, chosen, names = g.run, g.sources, g.betas, g.chosen, g.names
    src_label, a_label = g.src_label, g.a_label
    # the headline: one row per source, its setting chosen on the tuning clients
    head = ["| adaptation unigram | chosen on the tuning clients: variant, beta (tuning WER %) | "
            "WER % [95% CI] | difference in WER points [95% paired bootstrap CI], MAPSSWE p, against "
            "the baseline named |", "|---|---|---|---|",
            f"| none ({BASELINE_LABEL}) | – | {fmt_wer(base)} | (the baseline) |"]
    for src in sources:
        if src not in chosen:
            continue
        v, b, mean, edge = chosen[src]
        pick = f"{v}, beta {b} ({mean:.2f}{', mean of the draws' if src == 'c' else ''})"
        if edge:
            pick += f"; on the edge of the beta grid ({' '.join(betas)})"
        if src == "c":
            reps = [r for r in (run.report(n) for n in names(src, v, b)) if r]
            counterpart = run.report(fma_name("a", v, b))
            head.append(f"| {src_label[src]} | {pick} | {_dp_wer(reps)} | "
                        f"{_dp_compare(reps, a_label, counterpart['wer'] if counterpart else None)} |")
        else:
            r = run.report(fma_name(src, v, b))
            head.append(f"| {src_label[src]} | {pick} | {fmt_wer(r)} | {_compare(r, BASELINE_LABEL)} |")
    return head


def intro(run: Run, a: argparse.Namespace, g: _Grid, base: dict, weights: dict, ws: str) -> list[str]:
    """The title and the paragraphs above the tables: data, run time, method, clients and weights,
    intervals, DP draws and the rule of the choice."""
    out, draws, boot = run.out, g.draws, base.get("bootstrap") or {}
    noise = (f"seeded (NOISE_SEED={a.noise_seed}; draw k uses seed(NOISE_SEED, 0, k) = NOISE_SEED * 100000 + "
             "k * 1000, asrpriv.federated.seeds): repeatable and NOT private"
             if a.noise_seed else "from the OS's secure source (private)")
    tune = run.report(BASELINE, "tune-wer")
    text = [f"# n-gram FMA (paper 003 §2.3) on the dev N-best lists ({'reduced' if a.reduced == '1' else 'full'} run)",
            "", data_paragraph(a.data), "",
            runtime_paragraph(out, int(a.seconds or 0), "runs/*/hyp.txt", a.command), "",
            "Paper 003 §2.3 on an ARPA 3-gram, from asrpriv steps only (`train-ngram`, `count-unigrams`, "
            "`add-noise`, `fma-adapt --arpa`, `interpolate`, `perplexity`, `rescore-nbest --ngram`, "
            "`tune-weights`, `score-wer`). Background: a 3-gram of the non-scenario training meetings "
            "(EN, IB, IN); in-domain: a 3-gram of the scenario meetings; one closed vocabulary (every word of "
            "`train_text`). Adaptation unigrams of the adaptation set (`adapt/`): (a) the decoder's 1-best, "
            "(b) the references, (c) (a) with a per-utterance L1 bound of "
            f"{a.max_l1} words and discrete Laplace noise, epsilon {a.epsilon} per utterance (add/remove "
            f"of one adaptation utterance; unit of privacy: one utterance; no client sampling: every "
            f"utterance is counted), noise {noise}. `--prior {a.prior}` (P_A = {1 - float(a.prior):g} "
            f"relative frequency + {a.prior} background marginal). The n-gram replaces the first-pass LM "
            "score in the N-best (no NNLM).", "",
            f"Evaluation clients: {a.eval_clients} ({base['sentences']} utterances, {base['ref_words']} "
            f"reference words; one word error is {100.0 / base['ref_words']:.3f} WER points). Tuning clients "
            f"(every 4th dev client, excluded from every evaluation number): {a.tune_clients}"
            + (f" ({tune['sentences']} utterances, {tune['ref_words']} words)" if tune else "")
            + f". Chosen there, once, for the {BASELINE_LABEL}: LM weight {weights.get('lm_weight')}, word "
            f"penalty {weights.get('word_penalty')} (the same weights serve every row); the mixture's EM weights "
            f"({ws}); and each source's variant and beta (below).", "",
            f"Intervals: 95% bootstrap percentile intervals over utterances ({boot.get('resamples', '?')} "
            f"resamples, seed {boot.get('seed', '?')}); a difference's interval resamples both systems' "
            "utterances together. Significance: MAPSSWE (sc_stats), * = significant at 0.05. Every comparison "
            f"names its baseline: the {BASELINE_LABEL} for the rows without noise; for a DP row (c), FMA on "
            "(a) without noise with the same variant and beta, so the cell is the cost of the noise alone.",
            "",
            f"DP rows: {draws} independent noise draws of the adaptation counts, each rescored and scored on "
            "its own; the WER is the mean over the draws, its interval the union of the draws' intervals "
            "(it covers the noise as well as the sampling of utterances), each draw's WER in brackets, and "
            "the comparison is made per draw. Each draw is one run of the mechanism (epsilon "
            f"{a.epsilon} per utterance): a deployment would release one; the draws measure the spread of "
            "its outcome.", "",
            "Choice of variant and beta: for each source, the (variant, beta) with the lowest WER on the "
            "tuning clients (rescored with the same weights; for c, the mean over the draws); ties go to the "
            "first in grid order (standard before reversed, smaller beta first). Marked **chosen** in the "
            "tuning WER column. Every row is shown; picking the best of the other rows by their evaluation "
            "WER would be picking on the evaluation set.", "",
            "## Chosen on the tuning clients", ""]
    return text


def results_md(run: Run, a: argparse.Namespace) -> str:
    """The text of OUT/results.md: read the run's weights, mixture and baseline, then the grid's
    choice and rows (:class:`_Grid`), formatted into the sections."""
    out = run.out
    with open(os.path.join(out, "runs", "weights.txt"), encoding="utf-8") as f:
        weights = dict(line[1:].strip().split("=", 1) for line in f if line.startswith("#") and "=" in line)
    mix = _load(os.path.join(out, "lm", "mixture.json"))
    base = run.report(BASELINE)
    if base is None:
        raise FileNotFoundError(f"{out}/runs/{BASELINE}/wer.json: the baseline is not scored")
    g = _Grid(run, a)
    ws = ", ".join(f"{x:.3f}" for x in mix["weights"])
    table = every_system_table(g, ws)
    head = chosen_table(g, base)
    text = intro(run, a, g, base, weights, ws) + head + ["", "## Every system", ""] + table
    return "\n".join(text) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m asrpriv.reports.ngram_fma")
    ap.add_argument("out")
    ap.add_argument("--data", default=None, help="DATA_DIR of the run (named from its SOURCE.txt)")
    ap.add_argument("--reduced", default="0")
    for opt in ("betas", "variants", "sources", "prior", "epsilon", "max-l1", "tune-clients", "eval-clients"):
        ap.add_argument("--" + opt, required=True)
    ap.add_argument("--draws", type=int, default=1)
    ap.add_argument("--noise-seed", default="", help="NOISE_SEED of the run ('' = the OS's secure source)")
    ap.add_argument("--seconds", type=int, default=0)
    ap.add_argument("--command", default="")
    a = ap.parse_args(argv)
    try:
        text = results_md(Run(a.out), a)
    except (OSError, ValueError, KeyError) as err:
        print(f"ngram-fma report: {err}", file=sys.stderr)
        return 2
    tmp = os.path.join(a.out, "results.md.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, os.path.join(a.out, "results.md"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
