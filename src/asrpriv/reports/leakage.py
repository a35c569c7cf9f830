#!/usr/bin/env python3
"""Results tables (Markdown) and a plot for bin/leakage-audit (wrapper: bin/leakage-report).

    python -m asrpriv.reports.leakage [--data DATA_DIR] --mode M --epochs ... OUT

Reads OUT/audit/NAME/METHOD/report.json (asrpriv cluster-weights: purity and entropy per label
column with entropy in bits, 004 Eq. 4.3-4.5; the rank test of 004 §4.5; the gender probe) and
writes OUT/results.md and OUT/leakage_vs_noise.png. Paper 004's numbers (TED talks, acoustic
models, 2,745 items) are printed beside ours for orientation only.

Tests at the sampled unit (issue 38): the audits permute at the speaker (cluster-weights --unit
speaker); an audit whose cluster tests were made at another unit gets them again from its saved
assignment. Every p-value the file shows also gets its Holm (1979) adjustment over the family of
all of them (:class:`Family`; each audit's test counted once where two tables show it). Each
noise row states its epsilon: one local Gaussian release by dp-accounting's PLD accountant
(:func:`gaussian_release_epsilon`), the Laplace rows per utterance.
"""

from __future__ import annotations

import argparse
import functools
import json
import os

from asrpriv.reports.common import (data_name, data_paragraph, fmt_eps, mode_label, part_commands,
                                    runtime_paragraph, save_figure)

#: the label column whose values are the audit's sampled units (bin/leakage-audit: --unit speaker)
UNIT = "speaker"

# 004 Tables 4.8 (case 1: talk) and 4.9 (case 2: speaker): (pure clusters, purity, entropy);
# its epochs 0 and 2 are our epochs 1 and 3 (004 counts from 0)
P48 = {("random", None): (0, 0.253, 1.99), ("divisive", 1): (494, 0.878, 0.36), ("divisive", 3): (528, 0.942, 0.18),
       ("constrained", 1): (344, 0.822, 0.49), ("constrained", 3): (466, 0.919, 0.22)}
P49 = {("random", None): (0, 0.254, 1.99), ("divisive", 1): (509, 0.893, 0.32), ("divisive", 3): (545, 0.955, 0.14),
       ("constrained", 1): (359, 0.84, 0.45), ("constrained", 3): (480, 0.929, 0.19)}
P412 = {0: (19.47, 17.69), 1: (23.33, 22.03), 2: (22.55, 20.53), 3: (22.14, 21.36), 4: (24.04, 23.96)}
P414 = {("kmeans2", 1): (0.93, 0.36), ("kmeans2", 3): (0.904, 0.40), ("ward2", 1): (0.88, 0.51), ("ward2", 3): (0.939, 0.32)}
METHOD = {"random": "Random", "divisive": "Method 1 (divisive)", "constrained": "Method 2 (constrained)",
          "kmeans2": "k-means (k = 2)", "ward2": "Ward (k = 2)"}


def load(out: str, name: str, method: str) -> dict | None:
    """One audit's report.json; an audit made without permutation tests, or with its labels
    permuted at another unit than the speaker (an audit older than issue 38 permuted over the
    items), gets its cluster tests here, from its saved assignment and the run's labels
    (:func:`asrpriv.audit.permutation.add_saved_tests`: the same tests at the speaker unit, and
    the rank's bootstrap interval; the rank's permutation test needs distances that were not
    kept). Read once per process (:func:`_load`); ``_where`` names it for :class:`Family`."""
    return _load(os.path.abspath(out), name, method)


@functools.lru_cache(maxsize=None)
def _load(out: str, name: str, method: str) -> dict | None:
    path = os.path.join(out, "audit", name, method, "report.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    assignments = os.path.join(os.path.dirname(path), "assignments.tsv")
    labels = os.path.join(out, "data", "labels.tsv")
    made = report.get("permutation")
    if (made is None or made.get("unit") != UNIT) and os.path.exists(assignments) and os.path.exists(labels):
        from asrpriv.audit.labels import read_labels
        from asrpriv.audit.permutation import add_saved_tests

        unit = UNIT if UNIT in read_labels(labels)[0] else None
        if made is None or made.get("unit") != unit:
            add_saved_tests(report, assignments, labels, unit=unit)
    report["_where"] = f"{name}/{method}"
    return report


class Family:
    """The family of tests a results file reports, for Holm's adjustment.

    Rendering runs twice: first every cell adds its p-value under a key that names the audit and
    the test (an audit's test shown in two tables is one member), then :meth:`adjust` computes
    Holm's adjusted values (:func:`asrpriv.stats.multiple.holm_adjust`) and the second rendering
    reads them.
    """

    def __init__(self) -> None:
        self.p: dict[tuple, float] = {}
        self.holm: dict[tuple, float] | None = None

    def add(self, r: dict, *test: str) -> str:
        """Record the p-value of TEST of report R; returns the ', Holm x' text (empty on the
        first pass)."""
        key = (r.get("_where", str(id(r))), *test)
        p = _p_of(r, test)
        self.p[key] = p
        if self.holm is None:
            return ""
        return f", Holm {self.holm[key]:.3g}"

    def adjust(self) -> None:
        from asrpriv.stats.multiple import holm_adjust

        keys = list(self.p)
        self.holm = dict(zip(keys, holm_adjust([self.p[k] for k in keys])))

    def __len__(self) -> int:
        return len(self.p)


def _p_of(r: dict, test: tuple) -> float:
    if test == ("rank",):
        return r["rank"]["permutation"]["p"]
    col, stat = test
    return tests(r, col)[stat]["p"]


NO_TEST = "(no test)"


def fmt_p(p: float) -> str:
    return f"p {p:.3g}"


def tests(r: dict | None, col: str) -> dict | None:
    """The permutation tests of label column COL in one report.json (cluster-weights --permutations)."""
    return (((r or {}).get("permutation") or {}).get("labels") or {}).get(col)


def pure_cell(r: dict, col: str, family: Family, of: bool = True) -> str:
    s, t = r["labels"][col], tests(r, col)
    text = f"{s['pure_clusters']} of {s['clusters']}" if of else f"{s['pure_clusters']}"
    if not t:
        return text + f" {NO_TEST}"
    return text + f" ({fmt_p(t['pure_clusters']['p'])}{family.add(r, col, 'pure_clusters')})"


def purity_cell(r: dict, col: str, family: Family) -> str:
    s, t = r["labels"][col], tests(r, col)
    if not t:
        return f"{s['purity']:.3f} {NO_TEST}"
    u = t["purity"]
    return (f"{s['purity']:.3f} ({fmt_p(u['p'])}{family.add(r, col, 'purity')}; null {u['null_mean']:.3f} "
            f"[{u['null_95'][0]:.3f}, {u['null_95'][1]:.3f}])")


def pe(r: dict | None, col: str, family: Family) -> str:
    if not r:
        return "– | – | –"
    return f"{pure_cell(r, col, family)} | {purity_cell(r, col, family)} | {r['labels'][col]['entropy']:.2f}"


def probe(r: dict | None, col: str = "gender") -> str:
    p = ((r or {}).get("probe") or {}).get(col)
    if not p:
        return "–"
    auc = f", AUC {p['auc']:.2f}" + (f" [{p['auc_ci'][0]:.2f}, {p['auc_ci'][1]:.2f}]" if p.get("auc_ci") else "") \
        if p.get("auc") is not None else ""
    return f"acc {p['accuracy']:.2f} [{p['accuracy_ci'][0]:.2f}, {p['accuracy_ci'][1]:.2f}] (chance {p['chance']:.2f}){auc}"


def rank(r: dict | None, family: Family) -> str:
    k = (r or {}).get("rank")
    if not k:
        return "–"
    if "permutation" not in k:
        if "bootstrap_ci95" not in k:
            return f"{k['mean_rank']:.2f} {NO_TEST} (chance {k['chance_rank']:.1f})"
        lo, hi = k["bootstrap_ci95"]
        return (f"{k['mean_rank']:.2f} [{lo:.2f}, {hi:.2f}], no permutation test (distances not kept) "
                f"(chance {k['chance_rank']:.1f})")
    lo, hi = k["bootstrap_ci95"]
    return (f"{k['mean_rank']:.2f} [{lo:.2f}, {hi:.2f}], {fmt_p(k['permutation']['p'])}{family.add(r, 'rank')} "
            f"(chance {k['chance_rank']:.1f})")


def _relabelled(reports: list[dict]) -> str:
    """How the cluster tests relabelled each column, from the reports' own record."""
    from asrpriv.audit.run import scheme_text

    seen: dict[str, set] = {}
    for r in reports:
        perm = r.get("permutation") or {}
        for col, t in (perm.get("labels") or {}).items():
            seen.setdefault(col, set()).add(scheme_text(t.get("permuted", "items"), perm.get("unit")))
    return "; ".join(f"*{'main meeting' if col == 'meeting' else col}* {' / '.join(sorted(v))}"
                     for col, v in seen.items())


def tests_paragraph(reports: list[dict], family: Family) -> str:
    """Which tests stand beside the numbers, what each assumes, and the family of Holm's
    adjustment."""
    perms = sorted({r["permutation"]["permutations"] for r in reports if r.get("permutation")})
    seeds = sorted({str(r["permutation"]["seed"]) for r in reports if r.get("permutation")})
    ranks = sorted({r["rank"]["permutation"]["permutations"] for r in reports
                    if (r.get("rank") or {}).get("permutation")})
    if not perms and not ranks:
        return ("**Tests.** No permutation tests: these audits were made without them (PERMUTATIONS=0 or an "
                "older asrpriv); the probe's intervals are as each audit made them.\n")
    n = " or ".join(str(p) for p in perms) or "–"
    smallest = " or ".join(f"{1 / (p + 1):.3g}" for p in perms) or "–"
    boots = sorted({r["rank"]["bootstrap_resamples"] for r in reports
                    if (r.get("rank") or {}).get("bootstrap_resamples")})
    nr = " or ".join(str(p) for p in ranks) or "–"
    nb = " or ".join(str(p) for p in boots) or "–"
    partial = any(not r.get("permutation") or (r.get("rank") and "permutation" not in r["rank"]) for r in reports)
    post_hoc = any((r.get("permutation") or {}).get("post_hoc") for r in reports)
    probes = [((r.get("probe") or {}).get("gender") or {}) for r in reports if (r.get("probe") or {}).get("gender")]
    intervals = sorted({p.get("interval") or "accuracy: Wilson 95% over items; AUC: bootstrap over items "
                        "(an audit older than issue 38)" for p in probes})
    return (f"**Tests** (one-sided; each p-value is the add-one estimate (1 + #{{permutations at least as extreme}}) / "
            f"(N + 1), so the smallest possible is 1 / (N + 1) = {smallest}). Purity and pure clusters: a "
            f"permutation test with N = {n} permutations (seed {', '.join(seeds)}), the clusters held fixed and "
            f"each label column relabelled at the unit that was sampled, the speaker: {_relabelled(reports)}. A "
            "speaker's 4 subsets share a signal, so they are not exchangeable with other speakers' subsets; gender "
            "and the main meeting are therefore never permuted over the items, which would count a speaker's own "
            "cohesion as evidence about its gender or meetings. *null* is the permutations' mean purity and central "
            "95% range, what clusters of these sizes give by chance. Mean speaker rank: "
            f"a percentile bootstrap 95% interval over speakers ({nb} resamples; each speaker's query gives one "
            "per-speaker mean rank)" + (f" and a permutation test with N = {nr} permutations: the speaker labels "
                                     "permuted over the items (the null: speakers do not leak) and the whole rank "
                                     "test rerun (random pairs and distractors) on the same distances. "
                                     if ranks else ". ")
            + ("Gender probe: folds grouped by speaker (no speaker in both the training and the test folds); "
               "intervals: " + "; ".join(intervals) + ". " if probes else "")
            + f"**Holm**: beside each p-value its Holm (1979) adjustment over the family of all m = {len(family)} "
            "p-values this file reports (every purity, pure-cluster and mean-rank test of every table; a test shown "
            "in two tables counts once); rejecting where the Holm value is <= alpha holds the family-wise error rate "
            "at alpha over the whole file, under any dependence between the tests."
            + (f" {NO_TEST}: that audit was made without permutation tests." if partial and not post_hoc else "")
            + (" Audits made without `--permutations`, or whose tests permuted over the items (an asrpriv older "
               "than these tests), got their cluster tests afterwards from their saved assignments and the run's "
               "labels (the same tests, unit and seed streams: `asrpriv.audit.permutation.add_saved_tests`) and the "
               "rank's bootstrap interval from their per-speaker mean ranks; the rank's permutation test needs the "
               "distances, which they did not keep, so those cells say so." if post_hoc else "") + "\n")


@functools.lru_cache(maxsize=None)
def gaussian_release_epsilon(z: float, delta: float) -> float:
    """epsilon at ``delta`` of one Gaussian release with noise multiplier ``z`` (std = z times the
    L2 sensitivity; no sampling, no composition): dp-accounting's PLD accountant on
    ``GaussianDpEvent(z)``, value discretization 0.01 (a pessimistic estimate, within about 0.01
    of the exact value; the finer default takes minutes at z = 0.01)."""
    from dp_accounting import dp_event, pld

    accountant = pld.PLDAccountant(value_discretization_interval=1e-2)
    accountant.compose(dp_event.GaussianDpEvent(float(z)))
    return float(accountant.get_epsilon(float(delta)))


def noise_epsilon(kind: str, level: str, delta: float) -> str:
    """The epsilon cell of a noise row: ``kind`` none / clip / gaussian / laplace."""
    if kind == "none":
        return "∞ (no noise)"
    if kind == "clip":
        return "∞ (clipping alone)"
    if kind == "gaussian":
        return f"{fmt_eps(gaussian_release_epsilon(float(level), delta))} at δ = {delta:g} (per item)"
    return f"{level} per utterance (pure)"


def draw_names(base: str, draws: int) -> list[tuple[int, str]]:
    """The audits of a noise row's draws: draw 1 is BASE, draw d > 1 BASE-dD (bin/leakage-audit)."""
    return [(d, base if d == 1 else f"{base}-d{d}") for d in range(1, draws + 1)]


def gender_floor(out: str) -> str:
    """'0.72: 32 women, 84 men'-style: the majority share of the items' genders (labels.tsv)."""
    path = os.path.join(out, "data", "labels.tsv")
    if not os.path.exists(path):
        return "the majority share of the items"
    from asrpriv.audit.labels import read_labels

    columns, rows = read_labels(path)
    if "gender" not in columns or "speaker" not in columns:
        return "the majority share of the items"
    g, sp = columns.index("gender"), columns.index("speaker")
    genders = [v[g] for v in rows.values()]
    speakers = {v[sp]: v[g] for v in rows.values()}
    share = max(genders.count(x) for x in set(genders)) / len(genders)
    by = ", ".join(f"{list(speakers.values()).count(x)} {x}" for x in sorted(set(speakers.values())))
    return f"{share:.2f} here (speakers: {by})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="leakage-report")
    ap.add_argument("--data", default=None, help="DATA_DIR of the run (named from its SOURCE.txt)")
    for opt in ("mode", "epochs", "layers", "z", "clip", "audit-epoch", "epsilons", "max-l1", "nnlm-args",
                "noise-seeded", "seconds", "command"):
        ap.add_argument("--" + opt, default="")
    ap.add_argument("--draws", type=int, default=1, help="noise draws per noise row (bin/leakage-audit DRAWS)")
    ap.add_argument("--delta", type=float, default=1e-5, help="delta of the Gaussian rows' epsilon")
    ap.add_argument("out")
    a = ap.parse_args(argv)
    _load.cache_clear()
    family = Family()
    render(a, family)             # first pass: every cell adds its p-value to the family
    family.adjust()
    text, points = render(a, family)
    with open(os.path.join(a.out, "results.md"), "w", encoding="utf-8") as f:
        f.write(text)
    plot(a.out, points, data_name(a.data))
    return 0


def render(a, family: Family) -> tuple[str, list]:
    """results.md's text and the plot's points (see :func:`main`): the sections in order."""
    out = a.out
    epochs = [int(e) for e in a.epochs.split()]
    layers = [p.split("=", 1)[0] for p in a.layers.split()]
    L = _intro(a, out, epochs, layers, family)
    _tables_48_49(L, out, epochs, layers, family)
    _tables_411_412(L, out, epochs, layers, family)
    _tables_414_415(L, out, epochs, layers, family)
    points = _noise_section(L, a, out, layers, family)
    _scale_section(L, out, epochs)
    return "\n".join(L), points


def _intro(a, out: str, epochs: list[int], layers: list[str], family: Family) -> list[str]:
    """The title, data, mode and run time, what differs from 004, the items and the tests."""
    any_report = next((load(out, f"e{e}-{l}", "constrained") for e in epochs for l in layers
                       if load(out, f"e{e}-{l}", "constrained")), None)
    L = ["# Leakage audit of shared model updates (paper 004 §4.3-4.6)\n"]
    L.append(data_paragraph(a.data) + " The audit itself uses the AMI transcripts (text), not the synthetic "
             "speech's recognizer output.\n")
    mode = (f"Mode {a.mode}. " if a.mode != "full"   # "full" only if the full defaults ran
            else mode_label(a.mode, part_commands(out, a.command or "")) + " ")
    L.append(mode + runtime_paragraph(out, int(a.seconds or 0), "**/*.key",
                                      a.command or "bin/leakage-audit") + "\n")
    L.append("**What differs from 004**: 004 fine-tuned "
             "acoustic models (5 layers) on TED talks, 2,745 items (4 sub-talks per talk, ~700 speakers); here each "
             f"item is a quarter of one AMI meeting speaker's transcribed words, and the model is a word-level NNLM "
             f"(`{a.nnlm_args}`) pre-trained on the non-scenario meetings and fine-tuned per item with the client-001 "
             "recipe (SGD lr 1.0, batch 8). An AMI speaker's scenario meetings are one series (one topic), so 004's two "
             "cases coincide here: the class is the speaker (004 case 1: the 4 sub-talks of a talk; case 2: all talks of "
             "a speaker). Because each quarter is mostly one meeting, the *main meeting* column measures the confound "
             "(meetings share a topic and several speakers). 004's epochs 0 and 2 correspond to our epochs 1 and 3. "
             "Entropy in bits.\n")
    if any_report:
        L.append(f"{any_report['items']} items. Layers: " + ", ".join(f"`{p}`" for p in a.layers.split()) + ".\n")
    every = [r for r in (load(out, name, method) for name in names(out) for method in METHOD) if r]
    if every:
        L.append(tests_paragraph(every, family))
    return L


def _tables_48_49(L: list[str], out: str, epochs: list[int], layers: list[str], family: Family) -> None:
    L.append("## Tables 4.8 / 4.9: fixed-size clustering (size 4), first layer (embedding)\n")
    L.append("| Method | epoch | speaker: pure (p) | purity (p; null) | entropy | main meeting: pure (p) | purity (p; null) | entropy "
             "| 004 case 1 (pure, purity, entropy) | 004 case 2 |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    first = layers[0]
    for method in ("random", "divisive", "constrained"):
        for e in epochs:
            r = load(out, f"e{e}-{first}", method)
            key = (method, None if method == "random" else e)
            p8, p9 = P48.get(key), P49.get(key)
            L.append(f"| {METHOD[method]} | {e} | {pe(r, 'speaker', family)} | {pe(r, 'meeting', family)} "
                     f"| {', '.join(map(str, p8)) if p8 else '–'} | {', '.join(map(str, p9)) if p9 else '–'} |")
    L.append("\n004 had 2,745 items (~686 clusters of 4); our counts of pure clusters are out of our own number of "
             "clusters.\n")


def _tables_411_412(L: list[str], out: str, epochs: list[int], layers: list[str], family: Family) -> None:
    L.append("## Tables 4.11 / 4.12: per layer (Method 2) and the speaker rank test\n")
    L.append("| Layer | epoch | clusters | pure (speaker; p) | % pure | mean speaker rank [95% CI], p "
             "| gender probe (speaker-grouped CV) [95% CI] |")
    L.append("|---|---|---|---|---|---|---|")
    for l in layers:
        for e in epochs:
            r = load(out, f"e{e}-{l}", "constrained")
            if not r:
                L.append(f"| {l} | {e} | – | – | – | – | – |")
                continue
            s = r["labels"]["speaker"]
            L.append(f"| {l} | {e} | {s['clusters']} | {pure_cell(r, 'speaker', family, of=False)} "
                     f"| {100.0 * s['pure_clusters'] / s['clusters']:.1f} | {rank(r, family)} | {probe(r)} |")
    L.append("\n004 Table 4.12 (mean rank, 49 distractors, epoch 0 / 2): " +
             "; ".join(f"layer {k}: {v[0]} / {v[1]}" for k, v in P412.items()) +
             ". 004 Table 4.11 (% pure, Method 2, layers 1-4): 62.5-67.3%.\n")


def _tables_414_415(L: list[str], out: str, epochs: list[int], layers: list[str], family: Family) -> None:
    first = layers[0]
    L.append("## Tables 4.14 / 4.15: gender grouping (k = 2)\n")
    L.append("| Layer | epoch | k-means purity (p; null) | entropy | Ward purity (p; null) | entropy | 004 layer 0 k-means "
             "| 004 layer 0 agglomerative |")
    L.append("|---|---|---|---|---|---|---|---|")
    for l in layers:
        for e in epochs:
            km, wd = load(out, f"e{e}-{l}", "kmeans2"), load(out, f"e{e}-{l}", "ward2")
            cell = lambda r: (f"{purity_cell(r, 'gender', family)} | {r['labels']['gender']['entropy']:.2f}"  # noqa: E731
                              if r else "– | –")
            pk, pw = P414.get(("kmeans2", e)), P414.get(("ward2", e))
            L.append(f"| {l} | {e} | {cell(km)} | {cell(wd)} | {'%s / %s' % pk if pk and l == first else '–'} "
                     f"| {'%s / %s' % pw if pw and l == first else '–'} |")
    L.append(f"\nGender purity's floor is the majority share of the items ({gender_floor(out)}; the *null* is the "
             "chance level of clusters of these sizes, a little above it); 004's was 0.72.\n")


def _noise_section(L: list[str], a, out: str, layers: list[str], family: Family) -> list:
    """The new table: leakage against DP noise; returns the plot's points."""
    L.append("## New: leakage against DP noise (no paper has this table)\n")
    draws = max(1, a.draws)
    L.append(f"Deltas after epoch {a.audit_epoch}, all parameters: each clipped to L2 norm C = {a.clip} and given "
             "N(0, (z C)^2) per coordinate (add-noise --mechanism gaussian: local DP of one item, no sampling "
             "amplification); z = 0 is clipping alone. Counts: each item's unigram counts with a per-utterance L1 "
             f"bound of {a.max_l1} words, discrete Laplace noise at epsilon per utterance (add-noise, every word of the "
             "public pre-training vocabulary noised). Unit of privacy: one item (Gaussian rows) or one "
             "utterance (Laplace rows); no client sampling: every item is released."
             + (" **Noise seeded: not private.**" if a.noise_seeded else "")
             + f" Each noise level has {draws} independent noise draw{'s' if draws > 1 else ''}, each audited on its "
             "own (one row each). *epsilon*: a Gaussian row is one release of the Gaussian mechanism per item (noise "
             f"multiplier z, no sampling, no composition), its epsilon at δ = {a.delta:g} from dp-accounting's PLD "
             "accountant (discretization 0.01, pessimistic by at most about 0.01), for one item (a quarter of a "
             "speaker's words) against its removal; a Laplace row is pure epsilon-DP per utterance (one utterance's "
             "words, L1-bounded, against its removal; an item of u utterances has u x epsilon by group privacy).\n")
    L.append("| Shared artefact | noise | epsilon | speaker purity (Method 2; p; null) | pure clusters (p) "
             "| mean speaker rank [95% CI], p | gender probe [95% CI] |")
    L.append("|---|---|---|---|---|---|---|")
    rows = ([("deltas, no clip", "none", "none", "", f"e{a.audit_epoch}-all")] if "all" in layers else []) + \
        [("deltas, clipped", "clip only", "clip", "0", "dp-z0")]
    for z in a.z.split():
        rows += [("deltas, clipped", f"z = {z}" + (f", draw {d}" if draws > 1 else ""), "gaussian", z, name)
                 for d, name in draw_names(f"dp-z{z}", draws)]
    rows.append(("unigram counts", "none", "none", "", "counts-clean"))
    for e in a.epsilons.split():
        rows += [("unigram counts", f"epsilon = {e}" + (f", draw {d}" if draws > 1 else ""), "laplace", e, name)
                 for d, name in draw_names(f"counts-eps{e}", draws)]
    points = []
    missing = []
    for what, noise, kind, level, name in rows:
        r = load(out, name, "constrained")
        eps = noise_epsilon(kind, level, a.delta)
        if not r:
            L.append(f"| {what} | {noise} | {eps} | – | – | – | – |")
            missing.append(f"{what} ({noise})")
            continue
        L.append(f"| {what} | {noise} | {eps} | {purity_cell(r, 'speaker', family)} | {pure_cell(r, 'speaker', family)} "
                 f"| {rank(r, family)} | {probe(r)} |")
        points.append((what, noise, r))
    if missing:
        L.append(f"\nNot in this run (–): {', '.join(missing)}: those audits were not made in this OUT_DIR "
                 "(a run stopped before its noise rows, or settings without them); the recipe's --reduced "
                 "results (examples/results/leakage-audit-reduced.md) hold the noise rows on fewer items.")
    L.append("\nRandom clustering gives the purity floor (see the Random row above), and each purity's *null* is its own "
             "clustering's chance level; chance rank = (distractors + 2) / 2. "
             "A probe AUC *below* 0.5 with an interval below 0.5 is not signal: with speaker-grouped folds, holding "
             "out a speaker's items tilts the training set towards the other gender, so a probe that learned nothing "
             "predicts the held-out gender wrongly (read such rows as chance; the folds are stratified by gender as far "
             "as whole speakers allow, which shrinks the tilt but cannot remove it).\n")
    return points


#: paper 004's number of items (its §4.3: 4 sub-talks of ~700 TED talks)
PAPER_ITEMS = 2745


def delta_costs(out: str, epochs: list[int]) -> list[tuple[int, int, float, float]]:
    """Per audited epoch: (epochs, items, seconds per item, bytes per item) of OUT/deltas-eN.

    Items are fine-tuned one after another and each delta file is written when its item is done,
    so (last mtime - first mtime) / (items - 1) is the wall time of one item's fine-tuning (and
    of writing its delta). Sets with fewer than 2 deltas are left out.
    """
    rows = []
    for epoch in epochs:
        base = os.path.join(out, f"deltas-e{epoch}")
        files = [os.path.join(base, f) for f in os.listdir(base)] if os.path.isdir(base) else []
        files = [f for f in files if f.endswith(".delta.pt")]
        if len(files) < 2:
            continue
        times = sorted(os.path.getmtime(f) for f in files)
        size = sum(os.path.getsize(f) for f in files) / len(files)
        rows.append((epoch, len(files), (times[-1] - times[0]) / (len(files) - 1), size))
    return rows


def _scale_section(L: list[str], out: str, epochs: list[int]) -> None:
    """What the per-item fine-tuning cost here, and paper 004's 2,745 items projected (issue 29)."""
    rows = delta_costs(out, epochs)
    if not rows:
        return
    items = rows[0][1]
    factor = PAPER_ITEMS / items
    L.append(f"## Scale: what the items cost here, and 004's {PAPER_ITEMS:,} items projected\n")
    L.append("Timed from the artefacts (each item's delta file is written when its fine-tuning ends: the spread of "
             "their modification times over items - 1), one thread, on this run's machine as it ran.\n")
    L.append(f"| Deltas | items | s per item | MB per delta | {PAPER_ITEMS:,} items: hours | {PAPER_ITEMS:,} items: GB |")
    L.append("|---|---|---|---|---|---|")
    for epoch, n, seconds, size in rows:
        L.append(f"| after epoch {epoch} | {n} | {seconds:.2f} | {size / 1e6:.1f} | {PAPER_ITEMS * seconds / 3600:.1f} "
                 f"| {PAPER_ITEMS * size / 1e9:.0f} |")
    L.append("")
    L.append(f"Each audit's cost grows faster than the items: cluster-weights reads every delta once (linear) and "
             f"forms the items' Gram matrix (n^2 d multiply-adds), so at {PAPER_ITEMS:,} items the Gram term is "
             f"{factor ** 2:,.0f}x this run's ({factor:.1f}x the items, squared). The deltas' disk (the last column, per "
             "audited epoch) is what bounds the item count on these machines before the time does.\n")


def names(out: str) -> list[str]:
    """The audits under OUT/audit (complete ones: not NAME.tmp)."""
    base = os.path.join(out, "audit")
    if not os.path.isdir(base):
        return []
    return sorted(d for d in os.listdir(base) if os.path.isdir(os.path.join(base, d)) and not d.endswith(".tmp"))


def plot(out: str, points: list, data: str = "") -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not points:
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    labels = [f"{w}\n{n}" for w, n, _ in points]
    xs = range(len(points))
    means = [r["rank"]["mean_rank"] if r.get("rank") else 0 for _, _, r in points]
    cis = [(r.get("rank") or {}).get("bootstrap_ci95") for _, _, r in points]
    rank_err = [[max(0.0, m - c[0]) if c else 0 for m, c in zip(means, cis)],
                [max(0.0, c[1] - m) if c else 0 for m, c in zip(means, cis)]]
    axes[0].bar(xs, means, yerr=rank_err, color="tab:blue", capsize=3)
    chance = next((r["rank"]["chance_rank"] for _, _, r in points if r.get("rank")), None)
    if chance:
        axes[0].axhline(chance, color="gray", ls="--", lw=0.8, label="chance")
        axes[0].legend()
    axes[0].set_ylabel("mean speaker rank (95% CI; lower = more leakage)")
    aucs = [((r.get("probe") or {}).get("gender") or {}).get("auc") for _, _, r in points]
    lo = [((r.get("probe") or {}).get("gender") or {}).get("auc_ci") for _, _, r in points]
    ys = [a if a is not None else 0 for a in aucs]
    err = [[max(0.0, y - c[0]) if c else 0 for y, c in zip(ys, lo)], [max(0.0, c[1] - y) if c else 0 for y, c in zip(ys, lo)]]
    axes[1].bar(xs, ys, yerr=err, color="tab:red", capsize=3)
    axes[1].axhline(0.5, color="gray", ls="--", lw=0.8)
    axes[1].set_ylim(0, 1)
    axes[1].set_ylabel("gender probe AUC (95% CI)")
    for ax in axes:
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, fontsize=7, rotation=45, ha="right")
    save_figure(fig, os.path.join(out, "leakage_vs_noise.png"), data, dpi=120)


if __name__ == "__main__":
    raise SystemExit(main())
