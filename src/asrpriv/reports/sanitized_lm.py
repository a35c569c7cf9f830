#!/usr/bin/env python3
"""Tables 2-5 of paper 003 from the outputs of bin/sanitized-lm-experiment (OUT_DIR/results.md),
and the recipe's door to one library computation it needs before:

    python -m asrpriv.reports.sanitized_lm DATA OUT KEEP SEED BETA PRIOR REDUCED SECONDS NNLM_ARGS NNLM_WORDS ADAPT_ARGS FRACTION...
    python -m asrpriv.reports.sanitized_lm unk-penalty ARPA NBEST

``unk-penalty`` prints :func:`asrpriv.nnlm.vocab.unk_penalty` (ln of the N-best's word types
outside an LM's vocabulary); this module does not compute it. The split by whole meetings the
report reads (OUT/split/split.json) is the step ``select-text --split-dir``
(:func:`asrpriv.io.meetings.split_meetings`).

Reads OUT/split/split.json, OUT/lm/*.sys and *.json (EM weights), OUT/runtime.tsv (the command
and run time), OUT/eval/NAME.{ppl,wer}.json (score-wer --bootstrap: the WER and its interval),
NAME.vs.BASE.json (score-wer --compare --bootstrap: MAPSSWE and the paired interval of the WER
difference), best_{single,all,other}.txt (the recipe's pick-best choices: the single model of
lowest dev WER, the model of lowest dev WER of all and the lowest of the others) and
NAME.perword.tsv / NAME.best.txt (per-sentence log-probabilities, entity words). It writes no
comparison of its own: a pair the recipe did not score is said to be "not tested".

Every number of a table row has a 95% percentile bootstrap interval, with the resamples and seed
of score-wer's WER intervals: WER over utterances (score-wer), the entity-word error rate over the
same utterances (:func:`asrpriv.wer.bootstrap.bootstrap` on their entity-word errors), the dev
perplexity over sentences and, in each comparison cell, the paired difference of two systems' dev
perplexities over the same sentences (:func:`asrpriv.mixture.report.bootstrap_perplexity`, the
library half of ``perplexity --bootstrap``, on the per-word files), the entity-word perplexity over
the sentences with entity words. The closing section tests the "best" claims: the lowest dev WER
against the next lowest (MAPSSWE, paired interval), the lowest dev perplexity against the next
lowest (paired interval), and lists every model below M1 original's perplexity. Perplexities are
exp of the mean negative natural-log probability per token (words and </s>).
"""

from __future__ import annotations

import json
import math
import os
import sys

from asrpriv.reports.common import data_paragraph, diff_ci, interval, read_json, runtime_paragraph, with_interval
from asrpriv.sanitize.spans import read_spans
from asrpriv.wer.alignment import sclite_align

SANITIZED_CLASSES = {"PER", "LOC", "ORG", "TIME", "NUM"}
KIND = {"M1": "M1 word 3-gram", "M2": "M2 class 3-gram", "M3": "M3 3-gram approx. of the LSTM",
        "M4": "M4 LSTM rescoring"}
# paper 003: (WER %, PPL); Table 2 sanitized/original, Tables 3-4 per adaptation size, Table 5
PAPER2 = {"M1": ((32.3, 121), (28.8, 82)), "M2": ((30.2, 103), (29.3, 74)),
          "M3": ((32.9, 137), (29.1, 88)), "M4": ((30.5, 103), (27.6, 73))}
PAPER3 = {"M1": {12: (31.5, 109), 15: (31.2, 98), 20: (31.0, 93)},
          "M2": {12: (29.9, 94), 15: (29.8, 91), 20: (29.7, 86)},
          "M3": {12: (30.8, 101), 15: (30.6, 94), 20: (30.3, 90)},
          "M4": {12: (30.1, 95), 15: (29.9, 91), 20: (29.8, 85)}}
PAPER4 = {"M1": {12: (31.9, 116), 15: (31.4, 107), 20: (29.6, 90)},
          "M2": {12: (30.2, 96), 15: (29.8, 93), 20: (29.3, 84)},
          "M3": {12: (31.4, 106), 15: (30.5, 101), 20: (29.9, 92)},
          "M4": {12: (30.3, 98), 15: (30.0, 94), 20: (29.5, 81)}}
PAPER5 = {"T5_M1+M2": (29.7, 95), "T5_M1+M2+M3": (29.6, 92), "T5_M1+M2+M4": (29.4, 86)}


def _helper(argv: list[str]) -> int:
    """The recipe's ``unk-penalty`` (see the module doc)."""
    if argv[0] == "unk-penalty" and len(argv) == 3:
        from asrpriv.nnlm.vocab import unk_penalty

        print(repr(unk_penalty(argv[1], argv[2])))
        return 0
    print(f"usage: see {__name__}'s doc: {argv[0]} got {argv[1:]}", file=sys.stderr)
    return 2


def sentence_parts(perword: str, inside: set[tuple[str, int]]) -> dict:
    """The per-sentence totals of a ``perplexity --per-word`` file: ``ids``, ``lp`` (log-prob
    sums) and ``tok`` (tokens) of every sentence, and ``ent_lp`` / ``ent_n`` (the sums and counts
    over its entity words: the (utt, 0-based position) pairs of INSIDE)."""
    from asrpriv.mixture.report import read_sentence_sums

    sums = read_sentence_sums(perword, inside)
    return {"ids": sums["ids"], "lp": sums["lp"], "tok": sums["tok"],
            "ent_lp": sums["marked_lp"].tolist(), "ent_n": [int(n) for n in sums["marked_n"]]}


def ppl_interval(parts: dict, resamples: int | None, seed: int | None, entity: bool = False) -> tuple:
    """(ppl, low, high) of the dev perplexity (or, with ENTITY, of the entity-word perplexity:
    over the sentences that hold entity words) by resampling sentences; low/high None without
    RESAMPLES."""
    from asrpriv.mixture.report import bootstrap_perplexity

    if entity:
        keep = [k for k, n in enumerate(parts["ent_n"]) if n]
        lp = [parts["ent_lp"][k] for k in keep]
        tok = [parts["ent_n"][k] for k in keep]
    else:
        lp, tok = parts["lp"], parts["tok"]
    if not len(lp):
        return math.nan, None, None
    if not resamples:
        return math.exp(-sum(lp) / sum(tok)), None, None
    b = bootstrap_perplexity(lp, tok, resamples, seed=seed)
    return b["ppl"], b["ppl_low"], b["ppl_high"]


def ppl_diff(a: dict, b: dict, resamples: int | None, seed: int | None) -> str:
    """'ppl +0.7 [+0.3, +1.1]': the paired difference of two systems' dev perplexities (A - B)
    with its bootstrap interval over the same sentences ('' when they scored different ones)."""
    from asrpriv.mixture.report import bootstrap_perplexity

    if list(a["ids"]) != list(b["ids"]) or not resamples:
        return ""
    r = bootstrap_perplexity(a["lp"], a["tok"], resamples, seed=seed, logprob_b=b["lp"])
    return f"ppl {with_interval(r['diff'], r['diff_low'], r['diff_high'], 1, signed=True)}"


def compare_cell(report: dict | None, base: str, ppl_cell: str = "") -> str:
    """The cell of one paired comparison against BASE: 'vs BASE: WER +0.12 [-0.10, +0.31],
    p=0.28; ppl +0.7 [+0.3, +1.1]' from a score-wer --compare (--bootstrap) report; * = MAPSSWE
    significant at its alpha. Without a report: 'vs BASE: not tested'."""
    if report is None or "compare" not in report:
        return f"vs {base}: not tested"
    c = report["compare"]
    boot = report.get("bootstrap") or {}
    wer = diff_ci(boot) if boot.get("diff") is not None else f"{c['wer_a'] - c['wer_b']:+.2f}"
    cell = f"vs {base}: WER {wer}, p={c['p_value']:.2g}{' *' if c['significant'] else ''}"
    return cell + (f"; {ppl_cell}" if ppl_cell else "")


def best_sentence(best: str, other: str, m: dict, labels: dict, wer_vs: dict | None,
                  resamples: int | None, seed: int | None) -> list[str]:
    """The generated text of the 'best system' test: the model of lowest dev WER against the next
    lowest (paired: MAPSSWE and the bootstrap interval of the difference), and the model of lowest
    dev perplexity against the next lowest (the paired bootstrap interval of the difference)."""
    from asrpriv.mixture.report import bootstrap_perplexity

    lines = []
    if best and other:
        b, o = m[best], m[other]
        head = (f"Lowest dev WER of the {len(m)} models: `{best}` ({labels.get(best, best)}), "
                f"{_wer(b)}; the next lowest: `{other}` ({labels.get(other, other)}), {_wer(o)}. ")
        if wer_vs is None or "compare" not in wer_vs:
            lines.append(head + "The two were not compared: no model is shown to be the best by WER.")
        else:
            c = wer_vs["compare"]
            boot = wer_vs.get("bootstrap") or {}
            d = (f"{diff_ci(boot)} points (paired bootstrap 95% interval)" if boot.get("diff") is not None
                 else f"{c['wer_a'] - c['wer_b']:+.2f} points")
            verdict = (f"significant at {c.get('alpha', 0.05)}: `{best}` has the lowest dev WER of the models here, "
                       "significantly below the next lowest (the others are higher still; not tested one by one)"
                       if c["significant"] and c["wer_a"] < c["wer_b"] else
                       f"not significant at {c.get('alpha', 0.05)}: no model is shown to be the best by WER here")
            lines.append(head + f"`{best}` minus `{other}`: {d}, MAPSSWE p = {c['p_value']:.2g}, {verdict}.")
    order = sorted(m, key=lambda n: (m[n]["ppl"], n))
    if len(order) >= 2:
        p1, p2 = order[0], order[1]
        a, b = m[p1], m[p2]
        text = (f"Lowest dev perplexity: `{p1}` ({labels.get(p1, p1)}), {_ppl(a)}; the next lowest: "
                f"`{p2}` ({labels.get(p2, p2)}), {_ppl(b)}")
        if resamples and list(a["parts"]["ids"]) == list(b["parts"]["ids"]):
            r = bootstrap_perplexity(a["parts"]["lp"], a["parts"]["tok"], resamples, seed=seed,
                                     logprob_b=b["parts"]["lp"])
            shown = r["diff_high"] < 0
            text += (f"; `{p1}` minus `{p2}`: "
                     f"{with_interval(r['diff'], r['diff_low'], r['diff_high'], 1, signed=True)} (paired bootstrap "
                     f"95% interval over sentences: {'excludes 0' if shown else 'includes 0, so the two are not told apart'})")
        else:
            text += "; the two were not compared"
        if abs(a["oov"] - b["oov"]) >= 0.005:
            text += (f". Their OOV rates differ ({a['oov']:.2f}% vs {b['oov']:.2f}%): an OOV is scored as "
                     "each model's <unk>, so these perplexities are not strictly comparable")
        lines.append(text + ".")
    return lines


def _wer(r: dict) -> str:
    return f"WER {r['wer']:.2f}%" + (f" {interval(r['wer_lo'], r['wer_hi'])}" if r["wer_lo"] is not None else "")


def _ppl(r: dict) -> str:
    return f"perplexity {r['ppl']:.1f}" + (f" {interval(r['ppl_lo'], r['ppl_hi'], 1)}" if r["ppl_lo"] is not None else "") \
        + f" (OOV {r['oov']:.2f}%)"


def below(m: dict, ref: str) -> str:
    """The models whose dev perplexity is below REF's, lowest first (the sentence that replaced a
    hand-written 'the only model below ...' claim)."""
    if ref not in m:
        return ""
    low = sorted((n for n in m if m[n]["ppl"] < m[ref]["ppl"]), key=lambda n: (m[n]["ppl"], n))
    if not low:
        return f"No model has a dev perplexity below `{ref}`'s {m[ref]['ppl']:.1f}."
    listed = ", ".join(f"`{n}` {m[n]['ppl']:.1f} (OOV {m[n]['oov']:.2f}%)" for n in low)
    return (f"{len(low)} of the {len(m)} models have a dev perplexity below `{ref}`'s {m[ref]['ppl']:.1f} "
            f"(OOV {m[ref]['oov']:.2f}%), as point values: {listed}.")


def read_inputs(data: str, out: str) -> dict:
    """Stage 1: what every table reads: the split, the dev spans outside the excluded meeting,
    the references, the entity-word positions, the systems, and score-wer's bootstrap settings
    (the resamples and seed of every interval: the recipe's BOOTSTRAP, SEED)."""
    ev = f"{out}/eval"
    split = json.load(open(f"{out}/split/split.json"))
    excluded = {l.split()[0] for l in open(f"{data}/ne/dev_ne_excluded_utts.txt") if l.strip()}
    spans = {u: v for u, v in read_spans(f"{data}/ne/dev_ne.tsv").items() if u not in excluded}
    ref = {l.split()[0]: l.split()[1:] for l in open(f"{data}/dev/ref.txt") if l.strip()}
    inside = {(u, p) for u, v in spans.items() for s in v if s.cls in SANITIZED_CLASSES
              for p in range(s.start, s.end)}
    systems = sorted(f[:-4] for f in os.listdir(f"{out}/lm") if f.endswith(".sys"))
    boot0 = next((b for s in systems for b in [(_load(f"{ev}/{s}.wer.json") or {}).get("bootstrap")] if b), None)
    resamples, bseed = (boot0["resamples"], boot0["seed"]) if boot0 else (None, None)
    return {"ev": ev, "split": split, "spans": spans, "ref": ref, "inside": inside, "systems": systems,
            "resamples": resamples, "bseed": bseed}


def _load(path: str) -> dict | None:
    return read_json(path, missing_ok=True)


def measure(inp: dict, name: str) -> dict:
    """Stage 2, one system: its dev perplexity, entity-word perplexity, WER and entity-word error
    rate with their intervals (the library's bootstraps), and its per-sentence parts."""
    from asrpriv.wer.bootstrap import bootstrap

    ev, spans, ref, inside = inp["ev"], inp["spans"], inp["ref"], inp["inside"]
    resamples, bseed = inp["resamples"], inp["bseed"]
    ppl = json.load(open(f"{ev}/{name}.ppl.json"))
    wer = json.load(open(f"{ev}/{name}.wer.json"))
    parts = sentence_parts(f"{ev}/{name}.perword.tsv", inside)
    _p, lo, hi = ppl_interval(parts, resamples, bseed)
    eppl, elo, ehi = ppl_interval(parts, resamples, bseed, entity=True)
    hyp = {l.split()[0]: l.split()[1:] for l in open(f"{ev}/{name}.best.txt") if l.strip()}
    errs, counts = [], []
    for u in spans:
        ok = {a for op, a, _b in sclite_align(ref[u], hyp.get(u, [])) if op == "C"}
        at = [p for p in range(len(ref[u])) if (u, p) in inside]
        counts.append(len(at))
        errs.append(sum(p not in ok for p in at))
    n = sum(counts)
    ent = 100 * sum(errs) / n if n else math.nan
    ent_lo = ent_hi = None
    if resamples and n:
        eb = bootstrap(errs, counts, resamples, seed=bseed)
        ent_lo, ent_hi = eb.wer_low, eb.wer_high
    wb = wer.get("bootstrap") or {}
    return {"ppl": ppl["ppl"], "ppl_lo": lo, "ppl_hi": hi, "oov": 100 * ppl.get("oov_rate", 0.0),
            "eppl": eppl, "eppl_lo": elo, "eppl_hi": ehi, "wer": wer["wer"],
            "wer_lo": wb.get("wer_low"), "wer_hi": wb.get("wer_high"),
            "ent": ent, "ent_lo": ent_lo, "ent_hi": ent_hi, "n_ent": n, "parts": parts}


class _Rows:
    """Stage 3's row formatter: the measured systems ``m``, the labels given so far and the
    MAPSSWE tests shown (significant or not), for the closing sections."""

    def __init__(self, inp: dict, m: dict) -> None:
        self.ev, self.m = inp["ev"], m
        self.resamples, self.bseed = inp["resamples"], inp["bseed"]
        self.labels: dict[str, str] = {}
        self.tests: list[bool] = []     # the MAPSSWE tests shown in the tables: significant or not

    def vs(self, name: str, base: str) -> str:
        m = self.m
        rep = _load(f"{self.ev}/{name}.vs.{base}.json")
        if rep and "compare" in rep:
            self.tests.append(bool(rep["compare"]["significant"]))
        return compare_cell(rep, base,
                            ppl_diff(m[name]["parts"], m[base]["parts"], self.resamples, self.bseed)
                            if base in m else "")

    @staticmethod
    def cell(value: float, lo, hi, digits: int) -> str:
        if value != value:
            return "–"
        return with_interval(value, lo, hi, digits) if lo is not None else f"{value:.{digits}f}"

    def row(self, label: str, name: str, paper: tuple | None, bases: tuple[str, ...],
            extra: str | None = None) -> str:
        cell = self.cell
        self.labels[name] = label
        r = self.m[name]
        cells = [f"{label} (`{name}`)", cell(r["ppl"], r["ppl_lo"], r["ppl_hi"], 1), f"{r['oov']:.2f}",
                 cell(r["eppl"], r["eppl_lo"], r["eppl_hi"], 0), cell(r["wer"], r["wer_lo"], r["wer_hi"], 2),
                 cell(r["ent"], r["ent_lo"], r["ent_hi"], 1)]
        cells += [self.vs(name, b) if b != name else "(the baseline)" for b in bases]
        if extra is not None:
            cells.append(extra)
        cells += [f"{paper[0]}" if paper else "–", f"{paper[1]}" if paper else "–"]
        return "| " + " | ".join(cells) + " |"

    @staticmethod
    def head(*bases: str) -> str:
        cols = ["model (system)", "dev ppl", "OOV %", "entity-word ppl", "WER %", "entity-word err %",
                *bases, "paper WER %", "paper PPL"]
        return "| " + " | ".join(cols) + " |\n" + "|" + "---|" * len(cols)


ORIG_COL = "vs the original-data model of the same kind"
SAN_COL = "vs the unadapted sanitized model of the same kind"
ADAPTED = {"M1": "M1_fma{}", "M2": "M2_fma{}", "M3": "M3_fma{}", "M4": "M4_ft{}"}
HOW = {"M1": "FMA", "M2": "FMA (class marginals)", "M3": "FMA", "M4": "output-layer fine-tuning"}


def tables_2_to_4(rows: _Rows, fracs: list[int]) -> list[str]:
    """Stage 3a: Tables 2 (sanitized vs original), 3 (adapted) and 4 (adaptation text added)."""
    m, row, head = rows.m, rows.row, rows.head
    kinds = [k for k in ("M1", "M2", "M3", "M4") if f"{k}_original" in m]
    orig_col, san_col = ORIG_COL, SAN_COL
    t = []
    t.append("## Table 2: trained on T sanitized vs T original (no adaptation)\n")
    t.append(head(orig_col))
    for k in kinds:
        t.append(row(f"{KIND[k]}, original", f"{k}_original", PAPER2[k][1], (f"{k}_original",)))
        t.append(row(f"{KIND[k]}, sanitized", f"{k}_sanitized", PAPER2[k][0], (f"{k}_original",)))
    adapted, how = ADAPTED, HOW
    t.append("\n## Table 3: sanitized models adapted on the untransformed adaptation set\n")
    t.append(head(orig_col, san_col))
    for f in fracs:
        for k in kinds:
            name = adapted[k].format(f)
            if name in m:
                t.append(row(f"{k} + {how[k]}, {f}%", name, PAPER3[k].get(f), (f"{k}_original", f"{k}_sanitized")))
    t.append("\n## Table 4: adaptation set added to the sanitized training text instead\n")
    t.append(head(orig_col, san_col, "vs the Table 3 adaptation of the same kind on the same set"))
    for f in fracs:
        for k in kinds:
            name = f"{k}_add{f}"
            if name in m:
                a = adapted[k].format(f)
                t.append(row(f"{k} trained on T sanitized + {f}% original", name, PAPER4[k].get(f),
                             (f"{k}_original", f"{k}_sanitized"),
                             rows.vs(name, a) if a in m else f"vs {a}: no such model"))
    return t


def table_5(rows: _Rows, out: str, fracs: list[int], best_single: str) -> tuple[list[str], list[str]]:
    """Stage 3b: Table 5 (the mixtures, EM and the paper's weights) and the EM weights' line."""
    m, row, head, vs = rows.m, rows.row, rows.head, rows.vs
    t = []
    t.append(f"\n## Table 5: adapted models ({fracs[0]}%) interpolated: EM weights on the held-out slice, "
             "and the paper's fixed weights (003 Eq. 3: lambda_w 0.3, lambda_c 0.7, lambda_n 0.4)\n")
    if best_single:
        t.append(f"The paper's \"best system\" claim, tested: each mixture against the single model of Tables 2-4 "
                 f"with the lowest dev WER (`{best_single}`, {m[best_single]['wer']:.2f}%), and each mixture with "
                 "the paper's weights against the same mixture with EM weights.\n")
    t.append(head("vs the original-data model of the richest kind in the mix", "vs that kind's unadapted sanitized model",
                  f"vs the single model of lowest dev WER ({best_single or 'not picked'})",
                  "vs the same mixture with EM weights"))
    wl = []
    for mix, (label, bases5) in {"M1+M2": ("M1 + M2", ("M2_original", "M2_sanitized")),
                                 "M1+M2+M3": ("M1 + M2 + M3", ("M3_original", "M3_sanitized")),
                                 "M1+M2+M4": ("M1 + M2 + M4", ("M4_original", "M4_sanitized"))}.items():
        name = f"T5_{mix}"
        single = (best_single,) if best_single else ()
        if name in m:
            w = json.load(open(f"{out}/lm/{name}.json"))["weights"]
            wl.append(f"{label}: " + ", ".join(f"{x:.3f}" for x in w))
            t.append(row(f"{label}, EM weights", name, PAPER5[name], bases5 + single, "(the reference)"))
        if f"T5p_{mix}" in m:
            t.append(row(f"{label}, the paper's weights", f"T5p_{mix}", PAPER5[name], bases5 + single,
                         vs(f"T5p_{mix}", name) if name in m else f"vs {name}: no such model"))
    return t, wl


def best_section(rows: _Rows, best_all: str, best_other: str) -> list[str]:
    """Stage 3c: the closing section, the "best" claims tested."""
    t: list[str] = []
    m, labels, ev, resamples, bseed, load = rows.m, rows.labels, rows.ev, rows.resamples, rows.bseed, _load
    t.append("\n## The lowest WER and the lowest perplexity, tested\n")
    found = best_sentence(best_all, best_other, m, labels, load(f"{ev}/{best_all}.vs.{best_other}.json")
                          if best_all and best_other else None, resamples, bseed) + [below(m, "M1_original")]
    t += [f"- {line}" for line in found if line]
    return t


def intervals_paragraph(resamples: int | None, bseed: int | None, tests: list[bool]) -> str:
    """Stage 4a: how the intervals and comparisons were made, and how many tests came out significant."""
    intervals = (f"Intervals: 95% percentile bootstrap, {resamples} resamples, seed {bseed}: the WER over dev "
                 "utterances (score-wer --bootstrap), the entity-word error rate over the same utterances "
                 "(asrpriv.wer.bootstrap on their entity-word errors and counts), the dev perplexity over "
                 "sentences (each with its log-probability sum and token count: perplexity --bootstrap's "
                 "asrpriv.mixture.report.bootstrap_perplexity), the entity-word perplexity over the sentences "
                 "that hold entity words. Every comparison cell is paired, this row minus the named baseline "
                 "(`vs NAME`): the WER difference in points with its paired bootstrap interval and the MAPSSWE "
                 "p (score-wer --compare, sc_stats' test; * = significant at 0.05), then the dev perplexity "
                 f"difference with its paired bootstrap interval over the same sentences. No correction for "
                 f"multiple comparisons: of the {len(tests)} MAPSSWE tests in the tables, {sum(tests)} have p < 0.05, "
                 f"where about {len(tests) / 20:.1f} would by chance alone if no difference were real."
                 if resamples else
                 "No bootstrap in this run's scores (intervals left out). MAPSSWE: score-wer --compare "
                 "(sc_stats' test), * = significant at 0.05; every comparison cell is this row minus the named "
                 "baseline.")
    return intervals


def header(data: str, out: str, run: dict, inp: dict, m: dict, wl: list[str], intervals: str) -> list[str]:
    """Stage 4b: the title and the paragraphs above the tables (run, data, split, settings, dev set,
    intervals, names, the paper's numbers, the EM weights)."""
    keep, seed, beta, prior, reduced, secs = (run[k] for k in ("keep", "seed", "beta", "prior", "reduced", "secs"))
    nnlm_args, nnlm_words, adapt_args, fracs = (run[k] for k in ("nnlm_args", "nnlm_words", "adapt_args", "fracs"))
    split, ref = inp["split"], inp["ref"]
    n_ent = next(iter(m.values()))["n_ent"]
    key = dict(l.rstrip("\n").split("=", 1) for l in open(f"{out}/settings.key") if "=" in l)
    top = key.get("top", "0")
    hdr = [f"# Sanitized-text LMs: paper 003 Tables 2-5 ({'reduced' if reduced == '1' else 'full'} run)", "",
           runtime_paragraph(out, int(secs), "lm/*.sys"), "",
           data_paragraph(data) + " The LMs are trained on the AMI transcripts; only the WER columns "
           "rest on the synthetic speech's N-best lists.", "",
           f"Split of `train_text` ({split['words']} words) by whole meetings (shuffled, seed {seed}): training "
           f"set T = {split['train']} words; held-out slice {split['heldout']} words (original text, "
           "used for the FMA betas, the NNLM's validation and the EM weights of Table 5); adaptation sets (original text, nested, "
           "disjoint from T): "
           + ", ".join(f"{f}% -> {split[f'adapt{f}']} words ({100 * split[f'adapt{f}'] / split['train']:.1f}% of T)"
                       for f in fracs) + ".",
           f"sanitize keep={keep}, seed={seed} (seeded: repeatable, NOT private); classes PER LOC ORG TIME NUM. "
           f"FMA: standard variant (003 Eq. 1), prior {prior}, beta from {{{beta}}} by held-out perplexity "
           f"with the {fracs[0]}% set: " + ", ".join(f"{k} {open(f'{out}/lm/{k}.beta').read().strip()}"
                                                   for k in ("M1", "M2", "M3") if os.path.exists(f"{out}/lm/{k}.beta"))
           + f". NNLM (M4, and M3 via approx-ngram "
           f"on {'the NNLM training sample' if key.get('approx_on') == 'sample' else 'the whole training text of its model'}): finetune-lm {nnlm_args} --vocab (M1's words of the same text)"
           + (f", on at most {nnlm_words} training words (an even sample)" if nnlm_words != "0" else "")
           + f"; M4 adaptation: finetune-lm {adapt_args}.",
           f"Dev = {len(ref)} references of ES2011a-d and IS1008a-d; entity words = the {n_ent} dev words in "
           "ne/dev_ne.tsv spans of the sanitized classes (ES2011c excluded). WER: the dev N-best lists "
           f"rescored{' (their first ' + top + ' hypotheses, --reduced)' if top != '0' else ''} "
           "with each model replacing the first-pass LM (lm weight 6.5, word penalty ln 0.65 for "
           "all, not tuned): the first pass is fixed, so every model here is second-pass, unlike the "
           "paper's single-pass M1-M3.",
           intervals,
           "System names: M1-M4 the kind; `_original` / `_sanitized` trained on T original / sanitized; "
           "`_fmaF` / `_ftF` adapted on the F% set (Table 3); `_addF` trained on T sanitized + the F% set "
           "(Table 4); `T5_` a mixture with EM weights, `T5p_` with the paper's (Table 5).",
           "The paper's numbers (a Kaldi TDNN recognizer with lattices, its own AMI split of 802k training "
           "words, spaCy-tagged entities incl. MISC) are beside ours for shape only: a different recognizer "
           "and data, not comparable in level.",
           "EM weights (Table 5): " + ("; ".join(wl) if wl else "–") +
           " (paper: λw 0.3, λc 0.7, λn 0.4).", ""]
    return hdr


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "unk-penalty":
        return _helper(argv)
    data, out, keep, seed, beta, prior, reduced, secs, nnlm_args, nnlm_words, adapt_args, *fr = argv
    fracs = [int(f) for f in fr]
    run = {"keep": keep, "seed": seed, "beta": beta, "prior": prior, "reduced": reduced, "secs": secs,
           "nnlm_args": nnlm_args, "nnlm_words": nnlm_words, "adapt_args": adapt_args, "fracs": fracs}
    inp = read_inputs(data, out)
    m = {s: measure(inp, s) for s in inp["systems"]}

    def named(path: str) -> str:
        return open(path).read().strip() if os.path.exists(path) else ""

    ev = inp["ev"]
    best_single, best_all, best_other = (named(f"{ev}/best_{k}.txt") for k in ("single", "all", "other"))
    rows = _Rows(inp, m)
    t = tables_2_to_4(rows, fracs)
    t5, wl = table_5(rows, out, fracs, best_single)
    t += t5
    t += best_section(rows, best_all, best_other)
    intervals = intervals_paragraph(inp["resamples"], inp["bseed"], rows.tests)
    hdr = header(data, out, run, inp, m, wl, intervals)
    text = "\n".join(hdr + t) + "\n"
    open(f"{out}/results.md", "w").write(text)
    print(text)
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
