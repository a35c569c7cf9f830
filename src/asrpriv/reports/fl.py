#!/usr/bin/env python3
"""Results tables (Markdown) and a plot for bin/fl-finetune-experiment (wrapper: bin/fl-report).

    python -m asrpriv.reports.fl [--data DATA_DIR] --mode M --rate Q ... OUT

Reads OUT/runs/*/wer.json (asrpriv score-wer --format json, with MAPSSWE against the pre-trained
NNLM and bootstrap intervals), OUT/runs/*/wer-short.json (the same on the short evaluation
utterances: Table 3), OUT/runs/*/ppl.json (asrpriv perplexity --json: natural-log totals,
ppl = exp(-logprob / tokens)), OUT/runs/curve-ROW-tNNNN/ (the training curve), OUT/privacy/*.json
(asrpriv privacy-report --json), OUT/data/adapt.confidence.json and OUT/runtime.tsv (every
invocation's seconds and command: the run time is their sum), and writes OUT/results.md,
OUT/fl_wer.png and OUT/fl_curve.png. Paper 001's numbers (its *conversation* set, Tables 2, 4,
5; its *voice command* set, Table 3) are printed beside ours for orientation only: a different
recognizer, data, NNLM and scale.
"""

from __future__ import annotations

import argparse
import functools
import glob
import os
import statistics

from asrpriv.reports.common import (DATA_NAME, ci, data_name, data_paragraph, fmt_eps, mode_label,
                                    part_commands, read_json, runtime_paragraph, save_figure)

# paper 001: (PPL, WER %) on the conversation evaluation set
PAPER_T2 = {"nonnlm": (None, 8.07), "pretrained": (109.4, 7.96), "server-all": (31.3, 7.79),
            "fl-none": (32.0, 7.79), "fl-hard": (31.2, 7.76), "fl-utterance": (30.8, 7.77),
            "fl-token": (30.3, 7.75)}
PAPER_T4 = {"scratch-server-none": (34.7, 7.81), "scratch-fl-none": (35.8, 7.85),
            "scratch-fl-token": (34.5, 7.82)}
# Table 3: the *voice command* set (short utterances of another application); our short-utterance
# table sits beside it for orientation only
PAPER_T3 = {"nonnlm": (None, 10.10), "pretrained": (420.4, 9.89), "server-all": (7.9, 9.04),
            "fl-none": (8.1, 9.06), "fl-hard": (8.0, 8.82), "fl-utterance": (8.0, 9.00),
            "fl-token": (8.0, 8.93)}
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
    return read_json(path, missing_ok=True)


def rel(ours: float, base: float) -> str:
    return f"{100.0 * (ours - base) / base:+.1f}%"


def sig(report: dict | None) -> str:
    comp = (report or {}).get("compare")
    if not comp:
        return "–"
    mark = "yes" if comp["significant"] else "no"
    return f"{mark} (Z={comp['z']:.2f}, p={comp['p_value']:.3f})"


def paper_cell(pair, base_wer=None) -> tuple[str, str]:
    if pair is None:
        return "–", "–"
    ppl, wer = pair
    w = f"{wer:.2f}" + (f" ({rel(wer, base_wer)})" if base_wer and wer != base_wer else "")
    return ("–" if ppl is None else f"{ppl:.1f}"), w


def t_interval(values: list[float], level: float = 0.95) -> tuple[float, float] | None:
    """Student-t interval of the mean of VALUES (n - 1 degrees of freedom); None below 2 values."""
    if len(values) < 2:
        return None
    from scipy.stats import t as student_t

    m = statistics.mean(values)
    half = float(student_t.ppf(0.5 + level / 2, len(values) - 1)) * statistics.stdev(values) / len(values) ** 0.5
    return m - half, m + half


def dp_interval(reports: list[dict]) -> str:
    """The interval of a DP setting's mean WER over its draws: the t-interval over the draws (the
    spread of the noise draws on this evaluation set) and the envelope of the draws' bootstrap
    intervals (the sampling of the evaluation utterances); one draw: its bootstrap interval."""
    ws = [r["wer"] for r in reports]
    boots = [r.get("bootstrap") for r in reports if r.get("bootstrap")]
    env = f"[{min(b['wer_low'] for b in boots):.2f}, {max(b['wer_high'] for b in boots):.2f}]" if boots else "–"
    t = t_interval(ws)
    if t is None:
        return f"bootstrap {env} (1 draw)"
    same = " (the draws agree)" if len(set(ws)) == 1 else ""
    return f"t [{t[0]:.2f}, {t[1]:.2f}]{same}; bootstrap {env}"


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="fl-report")
    ap.add_argument("--data", default=None, help="DATA_DIR of the run (named from its SOURCE.txt)")
    for opt in ("mode", "rate", "rounds", "clients", "server-lr", "clip", "dp-z", "dp-modes", "draws", "fl-modes",
                "scratch-modes", "hard-threshold", "delta", "nnlm-args", "noise-seeded", "seconds",
                "short-words", "curve-row", "curve-rounds", "command", "client-by", "dp-sampling"):
        ap.add_argument("--" + opt, default="")
    ap.add_argument("out")
    a = ap.parse_args(argv)
    return a


def _read_runs(out: str) -> tuple[dict, dict, dict, dict]:
    """Every row's score files: runs (name -> its wer.json), WER, perplexity and short-utterance reports."""
    runs = {os.path.basename(os.path.dirname(p)): p for p in glob.glob(os.path.join(out, "runs", "*", "wer.json"))}
    wer = {n: load(p) for n, p in runs.items()}
    ppl = {n: load(os.path.join(out, "runs", n, "ppl.json")) for n in runs}
    short = {n: r for n in runs if (r := load(os.path.join(out, "runs", n, "wer-short.json")))}
    return runs, wer, ppl, short


def _intro(L: list[str], a: argparse.Namespace, out: str, base: dict | None) -> None:
    """The title and the paragraphs above the tables: data, run time, setting, privacy,
    evaluation, the adaptation confidences."""
    L.append("# Federated NNLM fine-tuning with confidences (paper 001)\n")
    L.append(data_paragraph(a.data) + "\n")
    command = a.command or f"bin/fl-finetune-experiment{'' if a.mode in ('', 'full') else ' --' + a.mode} DATA_DIR OUT_DIR"
    L.append(runtime_paragraph(out, int(a.seconds or 0), "**/*.key", command) + "\n")
    L.append("%s **Not the paper's setting**: paper 001 used an "
             "in-house video recognizer (CTC + 5-gram), 5-best lists, a character-aware LSTM NNLM, 166K adaptation "
             "utterances over ~10K Zipf-distributed devices and 1,000 rounds of 100 clients; here a synthetic-speech first pass "
             "(20-best, 2M-bigram LM), %s adaptation %s as clients, q = %s, T = %s rounds, "
             "FedAdam lr %s, NNLM `%s`. The paper's numbers (its *conversation* set) are beside ours for orientation; "
             "compare directions and relative sizes, not values.\n"
             % (mode_label(a.mode, part_commands(out, command)), a.clients,
                "speakers" if a.client_by == "speaker" else "meetings", a.rate, a.rounds,
                a.server_lr, a.nnlm_args))
    if a.dp_modes and a.dp_z:
        L.append(privacy_paragraph(a.client_by or "meeting", a.dp_sampling or "secure",
                                   bool(a.noise_seeded)) + "\n")
    if base:
        L.append(f"Evaluation: {base['sentences']} dev utterances, {base['ref_words']} reference words (one word = "
                 f"{100.0 / base['ref_words']:.3f} WER points); rescoring weights tuned once, with the "
                 "pre-trained NNLM on the held-out tuning meetings, and fixed for every row (each row's own "
                 "tuned weights: the last table). "
                 "WER intervals: 95% bootstrap over utterances (score-wer --bootstrap); DP settings: see Table 5. "
                 "Every *rel.* and MAPSSWE cell compares with the "
                 "**pre-trained NNLM** row (ours with ours, the paper's with the paper's).\n")
    conf = load(os.path.join(out, "data", "adapt.confidence.json"))
    if conf:
        L.append("Adaptation confidences (rank-1 words of the adapt split, calibration fitted on the tuning meetings): "
                 + ", ".join(f"{k} = {v:.3f}" if isinstance(v, float) else f"{k} = {v}"
                             for k, v in _flat_metrics(conf).items()) + "\n")


def _table(L: list[str], ppl: dict, title: str, names: list[str], paper: dict, scores: dict,
           with_ppl: bool = True, paper_base: float = PAPER_T2["pretrained"][1], intro: str = "") -> None:
    """One results table of ``names`` (rows "not run" where ``scores`` lacks them)."""
    L.append(f"## {title}\n")
    if intro:
        L.append(intro + "\n")
    sbase = (scores.get("pretrained") or {}).get("wer")
    head = "| Model |" + (" PPL |" if with_ppl else "") + " WER | 95% CI | rel. vs pre-trained | MAPSSWE vs pre-trained |"
    L.append(head + " paper PPL | paper WER (rel. vs its pre-trained) |")
    L.append("|" + "---|" * (head.count("|") + 1))
    for n in names:
        r = scores.get(n)
        pp, pw = paper_cell(paper.get(n), paper_base)
        if r is None:
            L.append(f"| {LABELS.get(n, n)} |" + (" – |" if with_ppl else "") + f" not run | | | | {pp} | {pw} |")
            continue
        p = ppl.get(n)
        relc = rel(r["wer"], sbase) if sbase and n != "pretrained" else "–"
        cells = [LABELS.get(n, n)]
        if with_ppl:
            cells.append(f"{p['ppl']:.1f}" if p else "–")
        cells += [f"{r['wer']:.2f}", ci(r), relc, sig(r) if n != "pretrained" else "–", pp, pw]
        L.append("| " + " | ".join(cells) + " |")
    L.append("")


def main(argv: list[str] | None = None) -> int:
    a = _args(argv)
    out = a.out
    runs, wer, ppl, short = _read_runs(out)
    base = wer.get("pretrained")
    base_wer = base["wer"] if base else None
    L: list[str] = []
    _intro(L, a, out, base)
    table = functools.partial(_table, L, ppl)
    t2 = ["nonnlm", "pretrained", "server-all"] + [f"fl-{m}" for m in a.fl_modes.split()]
    t4 = (["scratch-server-none"] if a.scratch_modes.split() else []) + [f"scratch-fl-{m}" for m in a.scratch_modes.split()]
    oracle = [n for n in ("oracle-server-all", "oracle-fl-none") if n in wer]
    # DP settings: the draws of each (mode, z)
    settings = []
    for mode in a.dp_modes.split():
        for z in a.dp_z.split():
            names = sorted((n for n in wer if n.startswith(f"dp-{mode}-z{z}-d")), key=_draw_number)
            settings.append((mode, z, names))
    table("Table 2: adaptation on the 1-best with confidences", t2, PAPER_T2, wer)
    if short:
        _short_table(L, a, short, t2 + t4 + oracle, settings, table)
    if t4:
        table("Table 4: without pre-training", t4, PAPER_T4, wer)
    _dp_tables(L, out, a, settings, wer, ppl, base_wer)
    if oracle:
        table("Oracle: adaptation on the references of the adaptation split (the ceiling)", oracle, {}, wer)
    tuned = {n: r for n in runs if (r := load(os.path.join(out, "runs", n, "wer-tuned.json")))}
    if tuned:
        tuned["pretrained"] = wer.get("pretrained")
        dp_names = [n for _m, _z, names in settings for n in names]
        table("Secondary: rescoring weights tuned per row", [n for n in t2 + t4 + oracle + dp_names
                                                           if n in tuned], {}, tuned, with_ppl=False,
              intro="The same models with each row's own weights, tuned on the tuning meetings (the "
                    "tables above fix the pre-trained NNLM's weights for every row): the difference "
                    "between the two is tuning noise plus what re-tuning buys.")
    curve = _curve(out, a, wer, ppl)
    if curve:
        _curve_table(L, a, curve, base_wer)
    dp_names = [n for _m, _z, names in settings for n in names]
    _client_section(L, out, [n for n in t2 + t4 + oracle + dp_names if n in wer and n != "pretrained"], wer)
    _scale_section(L, out)
    L.append("## Files\n")
    L.append("`runs/ROW/` (weights.txt, hyp.txt, wer.json, wer-short.json, ppl.json; `runs/curve-ROW-tNNNN/`: the "
             "training curve's points), `models/ROW.pt`, `fl/ROW/` (sampled cohorts, "
             "FedAdam state), `privacy/` (privacy-report JSON and each DP model's own history), `data/`, "
             "`runtime.tsv` (each invocation's seconds and command); every "
             "artefact has a `.key` file with the settings it was made from.\n")
    with open(os.path.join(out, "results.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(L))
    dp_points = [(f"DP {MODE_LABEL.get(m, m)} z={z}", wer[n]) for m, z, names in settings for n in names]
    plot(out, wer, [n for n in t2 + t4 + oracle if n in wer], dp_points, data_name(a.data))
    if curve:
        plot_curve(out, a.curve_row, curve, data_name(a.data))
    return 0


def _client_section(L: list[str], out: str, names: list[str], wer: dict) -> None:
    """Every row against the pre-trained NNLM at the unit that was sampled (issue 38): the
    evaluation meetings as the bootstrap unit (score-wer's library entry with --bootstrap-unit
    client: a client-level WER interval and the paired interval of the difference), the exact
    sign test over meetings, and each MAPSSWE and sign test Holm-adjusted over this file's
    whole family of comparisons with the pre-trained row."""
    from asrpriv.reports.fmp import Family, client_cell, client_level, fmt_p

    reports = {n: client_level(out, n, "pretrained", 1000, 1, ref_path=os.path.join("data", "eval.ref"),
                               nbest_path=os.path.join("data", "eval.tsv")) for n in names}
    reports = {n: r for n, r in reports.items() if r is not None}
    if not reports:
        return
    mapsswe, sign = Family(), Family()
    for n, r in reports.items():
        mapsswe.add(n, ((wer.get(n) or {}).get("compare") or {}).get("p_value"))
        sign.add(n, ((r.get("compare") or {}).get("units") or {}).get("sign_test_p"))
    clients = ((next(iter(reports.values())).get("compare") or {}).get("units") or {}).get("units", "the")
    L.append("## Client-level statistics and Holm adjustment\n")
    L.append(f"Every row against the pre-trained NNLM with the evaluation meetings ({clients} of them) as "
             "the resampled unit: the client-level WER with its 95% bootstrap interval (1,000 resamples of "
             "meetings, seed 1) and the paired interval of the difference; how many meetings improve, worsen "
             "or tie, with the exact two-sided sign test; and the utterance-level MAPSSWE test of the tables "
             f"above. Both families ({len(mapsswe)} MAPSSWE tests, {len(sign)} sign tests) are Holm-adjusted "
             "over every row of this file; * marks p < 0.05. With this few meetings no "
             "sign test can fall below 2 x 0.5^n, and the client-level intervals are wide: they, not the "
             "utterance-level ones, describe a new set of meetings.\n")
    L.append("| Model | client-level WER [95% CI]; diff vs pre-trained [95% CI] | meetings better / worse / tied | "
             "sign test p (Holm) | MAPSSWE p (Holm) |")
    L.append("|---|---|---|---|---|")
    for n, r in reports.items():
        units = (r.get("compare") or {}).get("units") or {}
        counts = " / ".join(str(units.get(k, "–")) for k in ("improve", "worsen", "tie"))
        sp, mp = sign.p.get(n), mapsswe.p.get(n)
        sign_text = f"{fmt_p(sp)} ({fmt_p(sign.holm(n))})" if sp is not None else "–"
        map_text = f"{fmt_p(mp)} ({fmt_p(mapsswe.holm(n))})" if mp is not None else "–"
        L.append(f"| {_row_label(n)} | {client_cell([r])} | {counts} | {sign_text} | {map_text} |")
    L.append("")


#: paper 001's federated scale: rounds x clients per round (its Sec. 3: 1,000 rounds of 100 clients)
PAPER_ROUNDS, PAPER_CLIENTS_PER_ROUND = 1000, 100


def round_costs(out: str) -> list[tuple[str, int, int, float]]:
    """Each FL row's (name, rounds, client updates, wall seconds) from its artefacts' times.

    ``OUT/fl/ROW/round-t/clients.txt`` (fl-rounds; ``clients-t.txt`` of the shell recipe) is
    written as round t starts (the sampled cohort, one client id
    per line) and ``OUT/models/ROW.pt`` when the last round's aggregate is done, so their
    modification times bound the row's federated training: every client update, aggregation and
    DP noise of its rounds, and nothing of its evaluation. Rows without both are left out.
    """
    rows = []
    for model in sorted(glob.glob(os.path.join(out, "models", "*.pt"))):
        name = os.path.basename(model)[:-3]
        cohorts = (glob.glob(os.path.join(out, "fl", name, "round-*", "clients.txt"))
                   or glob.glob(os.path.join(out, "fl", name, "clients-*.txt")))
        if not cohorts:
            continue
        updates = 0
        for path in cohorts:
            with open(path, encoding="utf-8") as f:
                updates += len(f.read().split())
        seconds = os.path.getmtime(model) - min(os.path.getmtime(p) for p in cohorts)
        if updates and seconds > 0:
            rows.append((name, len(cohorts), updates, seconds))
    return rows


def _row_label(name: str) -> str:
    """A row's label; a DP row (dp-MODE-zZ-dD) as 'DP MODE, z = Z, draw D'."""
    if name.startswith("dp-") and "-z" in name and "-d" in name:
        mode, rest = name[3:].split("-z", 1)
        z, draw = rest.rsplit("-d", 1)
        return f"DP {MODE_LABEL.get(mode, mode)}, z = {z}, draw {draw}"
    return LABELS.get(name, name)


def _utterances_per_client(out: str) -> str:
    """'N utterances each on average (U over C meetings)' from OUT/data/adapt.conf.tsv."""
    path = os.path.join(out, "data", "adapt.conf.tsv")
    if not os.path.exists(path):
        return "one AMI meeting's utterances each"
    with open(path, encoding="utf-8") as f:
        clients = [line.split("\t", 2)[1] for line in f.readlines()[1:] if line.strip()]
    return (f"{len(clients) / max(1, len(set(clients))):.0f} utterances each on average ({len(clients):,} over "
            f"{len(set(clients))} meetings)")


def _parallel_setup(out: str) -> tuple[str, str]:
    """How fl-rounds used the cores in this run, as each invocation set it: ``(clause for the
    cost paragraph, where the projection's hours are spent)``. fl-rounds' client processes:
    WORKERS (1 when unset); torch threads per process: OMP_NUM_THREADS divided among them,
    at least 1 (fl-rounds --workers), or torch's default count when unset in any part."""
    from asrpriv.reports.common import command_knobs, read_runtime

    setups = set()
    for _seconds, _start, command in read_runtime(out):
        knobs = dict(command_knobs([command]))
        setups.add((knobs.get("WORKERS", "1"), knobs.get("OMP_NUM_THREADS")))
    setups = setups or {("1", None)}
    w = "/".join(sorted({k for k, _t in setups}))
    if all(k.isdigit() and t is not None and t.isdigit() for k, t in setups):
        per = {(k, max(1, int(t) // int(k))) for k, t in setups}
        threads = "/".join(sorted({t for _k, t in setups}))
        t_text = (f"{'/'.join(str(p) for p in sorted({p for _k, p in per}))} thread(s) per process "
                  f"(OMP_NUM_THREADS={threads})")
        cores = sorted({int(k) * p for k, p in per})
        where = "one core" if cores == [1] else f"{'/'.join(map(str, cores))} cores"
    else:
        t_text = "torch's default thread count (OMP_NUM_THREADS unset; divided among the workers)"
        where = "this run's cores"
    clause = (f"fl-rounds with the clients of a round in {w} worker processes (WORKERS={w}), {t_text}"
              if w != "1" else f"one fl-rounds process per row, {t_text}")
    return clause, where


def _scale_section(L: list[str], out: str) -> None:
    """What the federated rows cost here, and paper 001's scale projected from it (issue 29)."""
    rows = round_costs(out)
    if not rows:
        return
    setup, where = _parallel_setup(out)
    per_update = [seconds / updates for _n, _r, updates, seconds in rows]
    median = statistics.median(per_update)
    total = PAPER_ROUNDS * PAPER_CLIENTS_PER_ROUND
    L.append("## Scale: what the federated rows cost here, and paper 001's scale projected\n")
    L.append("Each FL row's federated training, timed from its artefacts (`fl/ROW/round-t/clients.txt` is written as "
             "round t starts, `models/ROW.pt` after the last round): every client update, aggregation (FedAdam, "
             "with DP noise in the DP rows) and cohort sampling (`fl-rounds`), none of "
             "the evaluation. Wall time on this run's machine as it ran (the recipe's invocations above; parts "
             f"that ran beside each other shared the 2 cores): {setup}.\n")
    L.append("| Row | rounds | client updates | wall s | s per round | s per client update |")
    L.append("|---|---|---|---|---|---|")
    for (name, rounds, updates, seconds), unit in zip(rows, per_update):
        L.append(f"| {_row_label(name)} | {rounds} | {updates:,} | {seconds:,.0f} | {seconds / rounds:.1f} "
                 f"| {unit:.2f} |")
    L.append("")
    L.append(f"Paper 001 trained {PAPER_ROUNDS:,} rounds of {PAPER_CLIENTS_PER_ROUND} clients = {total:,} client "
             f"updates per model. At this run's median of {median:.2f} s per client update (range "
             f"{min(per_update):.2f}-{max(per_update):.2f}; aggregation included, so a round of 100 clients is "
             f"costed as 100 updates) one such model would take about {total * median / 3600:,.0f} h on {where} "
             f"here, against the {sum(s for *_x, s in rows) / 3600:.1f} h that these {len(rows)} rows took in all. "
             "The projection is linear in client updates: the paper's clients hold ~17 utterances each (166K over "
             f"~10K devices) and ours {_utterances_per_client(out)}, and its NNLM is character-aware, so "
             "the per-update cost there differs; a round's aggregate reads every delta of the round, so it too "
             "grows with the cohort.\n")


def _draw_number(name: str) -> int:
    tail = name.rsplit("-d", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _dp_tables(L: list[str], out: str, a, settings: list, wer: dict, ppl: dict, base_wer: float | None) -> None:
    """Table 5 (one row per DP setting: mean over its draws, with intervals) and its draws."""
    L.append("## Table 5: client-level DP (clip C = %s, Gaussian noise z C on the clipped sum, fixed denominator q N)\n" % a.clip)
    if not settings:
        L.append("No DP rows in this run (DP_MODES or DP_Z empty): no row adds noise, so this file makes "
                 "no privacy claim and has no unit of privacy; the FL rows' client sampling used the public "
                 "seed SAMPLE_SEED (repeatable), under which an epsilon does not hold.\n")
        return
    L.append(f"epsilon at delta = {a.delta} for this run's q = {a.rate} and T = {a.rounds} (privacy-report: dp-accounting "
             "RDP with default orders, PLD at discretization 1e-4), each rounded once to 4 significant digits; "
             "*paper setting* = the same accountants at 001's q = 0.01, T = 1000. "
             "PPL and WER: mean over the noise draws (PPL: min-max of the draws). **95% CI of the mean WER**: "
             "*t* = Student-t interval over the draws (mean +- t(0.975, n-1) s / sqrt(n): how much the noise draws "
             "move the WER on this evaluation set; with 2-3 draws it is wide by construction), *bootstrap* = the "
             "envelope of the draws' own 95% bootstrap intervals over utterances (the sampling of the evaluation "
             "set, which the t-interval leaves out); every draw is listed below with its interval. MAPSSWE: draws "
             "significantly different from the pre-trained NNLM."
             + (" **Noise seeded (NOISE_SEED): not private.**" if a.noise_seeded else "") + "\n")
    L.append("| Model | z | eps RDP (this run) | eps PLD (this run) | eps RDP / PLD (paper setting) | paper eps | draws "
             "| PPL | WER (mean) | 95% CI | rel. vs pre-trained | MAPSSWE sig. | paper PPL | paper WER |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    history_eps: list[str] = []
    draw_rows: list[str] = []
    for mode, z, names in settings:
        label = f"FL ({MODE_LABEL.get(mode, mode)})"
        ours = load(os.path.join(out, "privacy", f"z{z}.json")) or {}
        theirs = load(os.path.join(out, "privacy", f"paper-z{z}.json")) or {}
        pe, pm = PAPER_T5.get(z, (None, {}))
        pp, pw = pm.get(mode, (None, None)) if pm else (None, None)
        e = lambda d, k: fmt_eps(d[k]) if k in d else "–"  # noqa: E731
        eps_cells = (f"{e(ours, 'epsilon_rdp')} | {e(ours, 'epsilon_pld')} "
                     f"| {e(theirs, 'epsilon_rdp')} / {e(theirs, 'epsilon_pld')} | {pe or '–'}")
        if not names:
            L.append(f"| {label} | {z} | {eps_cells} | 0 | – | not run | | | | | |")
            continue
        ws = [wer[n]["wer"] for n in names]
        ps = [ppl[n]["ppl"] for n in names if ppl.get(n)]
        nsig = sum(1 for n in names if (wer[n].get("compare") or {}).get("significant"))
        mw = statistics.mean(ws)
        pcell = f"{statistics.mean(ps):.1f} ({min(ps):.1f}-{max(ps):.1f})" if ps else "–"
        L.append(f"| {label} | {z} | {eps_cells} | {len(names)} | {pcell} | {mw:.2f} | {dp_interval([wer[n] for n in names])} "
                 f"| {rel(mw, base_wer) if base_wer else '–'} | {nsig} of {len(names)} "
                 f"| {pp if pp else '–'} | {pw if pw else '–'} |")
        for n in names:
            r, p = wer[n], ppl.get(n)
            draw_rows.append(f"| {label} | {z} | {_draw_number(n)} | {p['ppl']:.1f} |" if p else f"| {label} | {z} | {_draw_number(n)} | – |")
            draw_rows[-1] += (f" {r['wer']:.2f} | {ci(r)} | {rel(r['wer'], base_wer) if base_wer else '–'} | {sig(r)} |")
        table_eps = f"{e(ours, 'epsilon_rdp')} / {e(ours, 'epsilon_pld')}"
        hist = {n: h for n in names if (h := _history_epsilon(out, n))}
        if len(set(hist.values())) > 1:
            history_eps.append(f"z = {z}, {MODE_LABEL.get(mode, mode)}: the draws' histories disagree: "
                               + ", ".join(f"draw {_draw_number(n)} {h}" + _empty_note(out, n) for n, h in hist.items()))
        elif hist:
            n0, h = next(iter(hist.items()))
            note = "" if h == table_eps else (f" (differs from the table's {table_eps}" + _empty_note(out, n0) + ")")
            history_eps.append(f"z = {z}, {MODE_LABEL.get(mode, mode)}: {h}{note}")
    L.append("")
    if history_eps:
        L.append("Each DP model's own privacy history (`privacy-report MODEL`: the Gaussian releases that the "
                 "server round recorded, one per round, a round without clients releasing the noise alone), epsilon RDP / PLD as privacy-report prints it (4 "
                 "significant digits, the table's rounding): " + "; ".join(history_eps) + ".\n")
    if draw_rows:
        L.append("### Table 5, every draw\n")
        L.append("| Model | z | draw | PPL | WER | 95% CI (bootstrap) | rel. vs pre-trained | MAPSSWE vs pre-trained |")
        L.append("|---|---|---|---|---|---|---|---|")
        L.extend(draw_rows)
        L.append("")


def _round_reports(out: str, name: str) -> list[dict]:
    """The round reports of row NAME (fl-rounds' OUT/fl/NAME/round-t/report.json)."""
    found = []
    for path in glob.glob(os.path.join(out, "fl", name, "round-*", "report.json")):
        try:
            found.append(read_json(path))
        except (OSError, ValueError):
            continue
    return found


def _empty_note(out: str, name: str) -> str:
    """': N of its rounds had no client (...)' from the row's round reports (or the shell
    recipe's fl/NAME/empty_rounds.txt), when N > 0."""
    reports = _round_reports(out, name)
    if reports:
        empty = [r for r in reports if not r.get("contributed")]
        noise = sum(1 for r in empty if r.get("release"))
        if not empty:
            return ""
        return (f": {len(empty)} of its rounds had no contributing client"
                + (f" ({noise} released the noise alone)" if noise else " (model carried over)"))
    path = os.path.join(out, "fl", name, "empty_rounds.txt")
    try:
        n = int(open(path, encoding="utf-8").read().split()[0])
    except (OSError, ValueError, IndexError):
        return ""
    return f": {n} of its rounds sampled no client and released nothing" if n else ""


def privacy_paragraph(client_by: str, sampling: str, noise_seeded: bool) -> str:
    """The DP rows' unit of privacy and where client sampling and noise drew from."""
    unit = ("one client = one AMI speaker, all of their utterances over their four-meeting series "
            "(user-level DP)" if client_by == "speaker" else
            "one client = one adaptation meeting, all of its utterances; an AMI speaker takes part in "
            "a series of four meetings, so a speaker is protected only as a group of up to four "
            "clients (group privacy), not at the stated epsilon (CLIENT_BY=speaker: user-level DP)")
    if sampling == "seeded":
        how = ("**Client sampling used the public seed SAMPLE_SEED** (TEST_SEEDED_DP_SAMPLING=1, tests "
               "only): every round's cohort is known, so the epsilon, which assumes secret sampling, "
               "does not hold")
    else:
        how = ("Client sampling drew from the OS's secure source (Poisson rate q, no seed), as the "
               "accountant's amplification by sampling assumes; every round is one release, an empty "
               "cohort releasing the noise alone")
    noise = ("the noise is SEEDED (NOISE_SEED: tests only, NOT private)" if noise_seeded
             else "the noise drew from the OS's secure source")
    return f"**Unit of privacy** of the DP rows: {unit}. {how}; {noise}."


def _short_table(L: list[str], a, short: dict, names: list[str], settings: list, table) -> None:
    """Table 3 of 001 (its *voice command* set) as far as AMI allows: the same rows on the evaluation
    utterances whose reference has at most SHORT_WORDS words."""
    base = short.get("pretrained")
    k = a.short_words or "K"
    what = (f"{base['sentences']} utterances, {base['ref_words']} reference words (one word = "
            f"{100.0 / base['ref_words']:.3f} WER points)" if base else "the short utterances")
    ami = data_name(a.data) == DATA_NAME
    intro = (f"The rows of Tables 2, 4 and 5 and the oracle rows, rescored exactly as there (the same "
             f"hypotheses), scored again on {what}: "
             f"`select-text --max-words-per-line {k}` of the evaluation references, `score-wer --allow-extra` (the "
             "longer utterances are left out), 95% bootstrap intervals and MAPSSWE against the pre-trained NNLM on "
             "the same utterances. **What differs from 001's Table 3**: 001's *voice command* set is a separate "
             "application (short commands to smart devices, 73K words in 13K test utterances, its own 63K adaptation "
             "utterances, NNLMs adapted on it); here the same AMI models, adapted on AMI meetings, on the shortest "
             "segments of the same *conversation*"
             + (" (the bundled AMI set holds segments of 4-25 words only, so at most 4 words keeps exactly the "
                "4-word segments)" if ami else "")
             + ": a length slice of conversation, not voice commands. No PPL column (the perplexity is of the "
             "whole evaluation set, Table 2). 001's numbers (its Table 3) are beside ours for orientation.")
    names = [n for n in names if n in short or n in PAPER_T3]     # not-run rows only where 001 has a number
    table(f"Table 3 (short utterances): the evaluation utterances of at most {k} reference words", names,
          PAPER_T3, short, with_ppl=False, paper_base=PAPER_T3["pretrained"][1], intro=intro)
    rows = []
    for mode, z, dnames in settings:
        rs = [short[n] for n in dnames if n in short]
        if not rs:
            continue
        ws = [r["wer"] for r in rs]
        mw = statistics.mean(ws)
        sbase = base["wer"] if base else None
        nsig = sum(1 for r in rs if (r.get("compare") or {}).get("significant"))
        rows.append(f"| DP FL ({MODE_LABEL.get(mode, mode)}), z = {z} | {len(rs)} | {mw:.2f} | {dp_interval(rs)} "
                    f"| {rel(mw, sbase) if sbase else '–'} | {nsig} of {len(rs)} |")
    if rows:
        L.append(f"DP settings on the same {k}-word utterances (mean over the draws; interval as in Table 5):\n")
        L.append("| Model | draws | WER (mean) | 95% CI | rel. vs pre-trained | MAPSSWE sig. |")
        L.append("|---|---|---|---|---|---|")
        L.extend(rows)
        L.append("")


def _curve(out: str, a, wer: dict, ppl: dict) -> list[tuple[int, dict, dict | None]]:
    """(t, wer.json, ppl.json) of the training curve: t = 0 the pre-trained row, then the rounds the recipe
    evaluated (--curve-rounds; without it, every runs/curve-ROW-tNNNN/); the last round can be the row's own run."""
    row = a.curve_row
    if not row:
        return []
    import re

    if a.curve_rounds.split():
        rounds = sorted({int(t) for t in a.curve_rounds.split()})
    else:
        found = (re.fullmatch(rf"curve-{re.escape(row)}-t(\d+)", n) for n in wer)
        rounds = sorted({int(m.group(1)) for m in found if m})
        if a.rounds and row in wer:
            rounds = sorted(set(rounds) | {int(a.rounds)})
    points = []
    if "pretrained" in wer:
        points.append((0, wer["pretrained"], ppl.get("pretrained")))
    for t in rounds:
        name = f"curve-{row}-t{t:04d}"
        if a.rounds and t == int(a.rounds) and row in wer:
            name = row                    # the row's own model and run
        if name in wer:
            points.append((t, wer[name], ppl.get(name)))
    return points if len(points) > 1 else []


def _curve_table(L: list[str], a, curve: list, base_wer: float | None) -> None:
    row = a.curve_row
    L.append(f"## Training curve: {LABELS.get(row, row)} against the FL round\n")
    L.append(f"The model of `{row}` after round t (kept every few rounds while it trained), evaluated as every row: "
             "weights tuned on the tuning meetings, dev perplexity of the evaluation references and WER with its 95% "
             f"bootstrap interval; t = 0 is the pre-trained NNLM, t = {a.rounds} the row of Table 2. Plot: "
             "`fl_curve.png`.\n")
    L.append("| round t | PPL | WER | 95% CI | rel. vs pre-trained | MAPSSWE vs pre-trained |")
    L.append("|---|---|---|---|---|---|")
    for t, r, p in curve:
        L.append(f"| {t} | {p['ppl']:.1f} |" if p else f"| {t} | – |")
        L[-1] += (f" {r['wer']:.2f} | {ci(r)} | {rel(r['wer'], base_wer) if base_wer and t else '–'} "
                  f"| {sig(r) if t else '–'} |")
    L.append("")


def plot_curve(out: str, row: str, curve: list, data: str = "") -> None:
    """OUT/fl_curve.png: dev perplexity (left) and WER with its bootstrap interval (right) against the round."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    pts = [(t, p["ppl"]) for t, _, p in curve if p]
    if pts:
        axes[0].plot([t for t, _ in pts], [v for _, v in pts], "o-", color="tab:blue")
    axes[0].set_xlabel("FL round t (0 = pre-trained NNLM)")
    axes[0].set_ylabel("dev perplexity")
    ts = [t for t, _, _ in curve]
    ws = [r["wer"] for _, r, _ in curve]
    lo = [r["wer"] - (r.get("bootstrap") or {}).get("wer_low", r["wer"]) for _, r, _ in curve]
    hi = [(r.get("bootstrap") or {}).get("wer_high", r["wer"]) - r["wer"] for _, r, _ in curve]
    axes[1].errorbar(ts, ws, yerr=[lo, hi], fmt="o-", color="tab:blue", capsize=3)
    axes[1].axhline(ws[0], color="tab:gray", ls="--", lw=0.8)
    axes[1].set_xlabel("FL round t (0 = pre-trained NNLM)")
    axes[1].set_ylabel("dev WER % (95% bootstrap interval)")
    from matplotlib.ticker import MaxNLocator
    for ax in axes:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.suptitle(f"Training curve of {LABELS.get(row, row)}", fontsize=10)
    save_figure(fig, os.path.join(out, "fl_curve.png"), data, dpi=110)


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
    save_figure(fig, os.path.join(out, "fl_wer.png"), data, dpi=110)


if __name__ == "__main__":
    raise SystemExit(main())
