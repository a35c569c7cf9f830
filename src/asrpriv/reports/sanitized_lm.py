#!/usr/bin/env python3
"""Tables 2-5 of paper 003 from the outputs of bin/sanitized-lm-experiment (OUT_DIR/results.md),
and the two computations the recipe needs before (its library half):

    python -m asrpriv.reports.sanitized_lm DATA OUT KEEP SEED BETA PRIOR REDUCED SECONDS NNLM_ARGS NNLM_WORDS ADAPT_ARGS FRACTION...
    python -m asrpriv.reports.sanitized_lm split DATA SPLIT_DIR SEED HELDOUT_SHARE FRACTION...
    python -m asrpriv.reports.sanitized_lm unk-penalty ARPA NBEST

``split`` (:func:`split_meetings`): the recipe's split by whole meetings; ``unk-penalty``
(:func:`unk_penalty`): ln of the N-best's word types outside an LM's vocabulary.

Reads OUT/split/split.json, OUT/lm/*.sys and *.json (EM weights), OUT/eval/NAME.{ppl,wer}.json,
NAME.vs.BASE.json (MAPSSWE) and NAME.perword.tsv / NAME.best.txt (entity words). Table 5's
mixtures are also compared with the single model of lowest dev WER (the paper's "best system"
claim, tested); where the recipe did not score that pair, this module does (score-wer --compare's
library call) and writes NAME.vs.BEST.json beside the others. Perplexities
are exp of the mean negative natural-log probability per token (words and </s>).
"""

from __future__ import annotations

import csv
import json
import math
import os
import sys

from asrpriv.reports.common import data_paragraph, run_time
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


def _meeting(utt_line: str) -> str:
    """The meeting of a Kaldi text line (ids ``<meeting>_<n>``)."""
    return utt_line.split()[0].split("_")[0]


def split_meetings(data: str, out: str, seed: int, heldout_share: float,
                   fractions: list[int]) -> dict:
    """Step 1 of bin/sanitized-lm-experiment: DATA/train_text split by whole meetings.

    The scenario meetings (ES/IS/TS, the dev set's kind, as the paper's adaptation set matches
    its test set) in sorted order, shuffled with ``seed``, give first the held-out slice
    (``heldout_share`` % of all words), then the adaptation pool (max(fractions) % of what
    remains for T, i.e. of T + pool); the rest and every non-scenario meeting form the training
    set T. Adaptation set f = the pool's first meetings until f % of T's words. Writes OUT/NAME.txt
    (the lines of NAME's meetings, as they are) and OUT/NAME_ne.tsv (their rows of
    DATA/ne/train_ne.tsv) for NAME = train, heldout and adapt<f>, and OUT/split.json (word
    counts and meetings, which it returns).
    """
    import random

    with open(f"{data}/train_text", encoding="utf-8") as f:
        lines = [line for line in f if line.strip()]
    words: dict[str, int] = {}
    for line in lines:
        m = _meeting(line)
        words[m] = words.get(m, 0) + len(line.split()) - 1
    meetings = sorted(m for m in words if m[:2] in ("ES", "IS", "TS"))
    random.Random(int(seed)).shuffle(meetings)
    total = sum(words.values())
    part, acc, i = {}, 0, 0
    while acc < total * float(heldout_share) / 100:           # held-out slice
        part[meetings[i]] = "heldout"
        acc += words[meetings[i]]
        i += 1
    rest = total - acc
    pool_target = rest * max(fractions) / (100 + max(fractions))   # pool = max% of what remains for T
    pool, pacc = [], 0
    while pacc < pool_target:
        pool.append(meetings[i])
        pacc += words[meetings[i]]
        i += 1
    for m in meetings[i:] + [m for m in words if m[:2] not in ("ES", "IS", "TS")]:
        part[m] = "train"
    t_words = total - acc - pacc
    sets: dict[int, list[str]] = {f: [] for f in fractions}
    stats: dict = {"words": total, "heldout": acc, "train": t_words}
    for f in fractions:
        n = 0
        for m in pool:
            if n >= t_words * f / 100:
                break
            sets[f].append(m)
            n += words[m]
        stats[f"adapt{f}"] = n

    def write(name: str, keep: set[str]) -> None:
        with open(f"{out}/{name}.txt", "w", encoding="utf-8") as o:
            o.writelines(line for line in lines if _meeting(line) in keep)
        ids = {line.split()[0] for line in lines if _meeting(line) in keep}
        with open(f"{data}/ne/train_ne.tsv", encoding="utf-8") as src, \
                open(f"{out}/{name}_ne.tsv", "w", encoding="utf-8") as o:
            o.write(next(src))
            o.writelines(row for row in src if row.split("\t")[0] in ids)

    write("train", {m for m, p in part.items() if p == "train"})
    write("heldout", {m for m, p in part.items() if p == "heldout"})
    for f in fractions:
        write(f"adapt{f}", set(sets[f]))
    stats["meetings"] = {"heldout": sorted(m for m, p in part.items() if p == "heldout"),
                         **{f"adapt{f}": sorted(sets[f]) for f in fractions}}
    with open(f"{out}/split.json", "w", encoding="utf-8") as o:
        json.dump(stats, o, indent=1)
    return stats


def unk_penalty(arpa: str, nbest: str) -> float:
    """ln K, K = the word types of the N-best TSV's hypotheses outside the vocabulary of
    ``arpa`` (its 1-grams, as ``finetune-lm --vocab`` reads them), at least 1: the
    ``rescore-nbest --unk-penalty`` that spreads the NNLM's ``<unk>`` mass evenly over them."""
    from asrpriv.io.nbest import NbestReader
    from asrpriv.nnlm.vocab import read_word_list

    vocab = set(read_word_list(arpa).words)
    unknown = {w for utt in NbestReader(nbest) for h in utt.hyps for w in h.words
               if w not in vocab}
    return math.log(max(1, len(unknown)))


def _helper(argv: list[str]) -> int:
    """The recipe's ``split`` and ``unk-penalty`` (see the module doc)."""
    if argv[0] == "split" and len(argv) >= 6:
        data, out, seed, held, *fractions = argv[1:]
        split_meetings(data, out, int(seed), float(held), [int(f) for f in fractions])
        return 0
    if argv[0] == "unk-penalty" and len(argv) == 3:
        print(repr(unk_penalty(argv[1], argv[2])))
        return 0
    print(f"usage: see {__name__}'s doc: {argv[0]} got {argv[1:]}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] in ("split", "unk-penalty"):
        return _helper(argv)
    data, out, keep, seed, beta, prior, reduced, secs, nnlm_args, nnlm_words, adapt_args, *fr = argv
    fracs = [int(f) for f in fr]
    ev = f"{out}/eval"
    split = json.load(open(f"{out}/split/split.json"))
    excluded = {l.split()[0] for l in open(f"{data}/ne/dev_ne_excluded_utts.txt") if l.strip()}
    spans = {u: v for u, v in read_spans(f"{data}/ne/dev_ne.tsv").items() if u not in excluded}
    ref = {l.split()[0]: l.split()[1:] for l in open(f"{data}/dev/ref.txt") if l.strip()}
    inside = {(u, p) for u, v in spans.items() for s in v if s.cls in SANITIZED_CLASSES
              for p in range(s.start, s.end)}
    systems = sorted(f[:-4] for f in os.listdir(f"{out}/lm") if f.endswith(".sys"))

    def measure(name: str) -> dict:
        ppl = json.load(open(f"{ev}/{name}.ppl.json"))
        wer = json.load(open(f"{ev}/{name}.wer.json"))
        lp = [float(r["ln_p"]) for r in csv.DictReader(open(f"{ev}/{name}.perword.tsv"), delimiter="\t")
              if (r["utt_id"], int(r["position"]) - 1) in inside]
        hyp = {l.split()[0]: l.split()[1:] for l in open(f"{ev}/{name}.best.txt") if l.strip()}
        n = err = 0
        for u in spans:
            ok = {a for op, a, _b in sclite_align(ref[u], hyp.get(u, [])) if op == "C"}
            for p in range(len(ref[u])):
                if (u, p) in inside:
                    n += 1
                    err += p not in ok
        return {"ppl": ppl["ppl"], "oov": 100 * ppl.get("oov_rate", 0.0), "eppl": math.exp(-sum(lp) / len(lp)),
                "wer": wer["wer"], "ent": 100 * err / n, "n_ent": n, "errors": wer.get("errors")}

    m = {s: measure(s) for s in systems}
    # the paper's "best system" claim, tested: each mixture of Table 5 against the single model of
    # Tables 2-4 with the lowest dev WER (the strongest baseline, whichever kind it is)
    single = sorted((s for s in systems if not s.startswith("T5")), key=lambda s: (m[s]["wer"], s))
    best = single[0] if single else ""

    def compare_best(name: str, base: str, path: str) -> None:
        """score-wer --compare of NAME against BASE (in-process, the same sclite alignment and
        MAPSSWE), written beside the recipe's comparisons as NAME.vs.BASE.json."""
        from asrpriv.wer.report import score
        from asrpriv.wer.transcripts import Normalizer, read_transcript

        norm = Normalizer()
        ref_t = read_transcript(f"{data}/dev/ref.txt", "auto", norm, "text")
        hyp_t = read_transcript(f"{ev}/{name}.best.txt", "auto", norm, "pred_text")
        other = read_transcript(f"{ev}/{base}.best.txt", "auto", norm, "pred_text")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"compare": score(ref_t, hyp_t, norm, compare=other).compare}, f, indent=2)

    def vs(name: str, base: str) -> str:
        path = f"{ev}/{name}.vs.{base}.json"
        if not os.path.exists(path) and name.startswith("T5") and base == best:
            compare_best(name, base, path)
        if not os.path.exists(path):
            return "–"
        c = json.load(open(path))["compare"]
        wa, wb = m[name]["wer"], c["wer_b"]
        star = " *" if c["significant"] else ""
        relative = f"{100 * (wa - wb) / wb:+.1f}% rel." if wb else "baseline WER 0"
        return f"{wa - wb:+.2f} ({relative}), p={c['p_value']:.2g}{star}"

    def row(label: str, name: str, paper: tuple | None, bases: tuple[str, ...]) -> str:
        r = m[name]
        cells = [label, f"{r['ppl']:.1f} ({r['oov']:.2f})", f"{r['eppl']:.0f}", f"{r['wer']:.2f}",
                 f"{r['ent']:.1f}"] + [vs(name, b) if b != name else "(baseline)" for b in bases]
        cells += [f"{paper[0]}" if paper else "–", f"{paper[1]}" if paper else "–"]
        return "| " + " | ".join(cells) + " |"

    head = ("| model | dev ppl (OOV %) | entity-word ppl | WER % | entity-word err % | {} | paper WER % | paper PPL |\n"
            "|---|---|---|---|---|{}---|---|")
    kinds = [k for k in ("M1", "M2", "M3", "M4") if f"{k}_original" in m]
    t = []
    t.append("## Table 2: trained on T sanitized vs T original (no adaptation)\n")
    t.append(head.format("WER vs original-data model of the same kind (MAPSSWE)", "---|"))
    for k in kinds:
        t.append(row(f"{KIND[k]}, original", f"{k}_original", PAPER2[k][1], (f"{k}_original",)))
        t.append(row(f"{KIND[k]}, sanitized", f"{k}_sanitized", PAPER2[k][0], (f"{k}_original",)))
    bases = "WER vs original-data model of the same kind | WER vs the unadapted sanitized model of the same kind"
    adapted = {"M1": "M1_fma{}", "M2": "M2_fma{}", "M3": "M3_fma{}", "M4": "M4_ft{}"}
    how = {"M1": "FMA", "M2": "FMA (class marginals)", "M3": "FMA", "M4": "output-layer fine-tuning"}
    t.append("\n## Table 3: sanitized models adapted on the untransformed adaptation set\n")
    t.append(head.format(bases, "---|---|"))
    for f in fracs:
        for k in kinds:
            name = adapted[k].format(f)
            if name in m:
                t.append(row(f"{k} + {how[k]}, {f}%", name, PAPER3[k].get(f), (f"{k}_original", f"{k}_sanitized")))
    t.append("\n## Table 4: adaptation set added to the sanitized training text instead\n")
    t.append(head.format(bases, "---|---|"))
    for f in fracs:
        for k in kinds:
            name = f"{k}_add{f}"
            if name in m:
                t.append(row(f"{k} trained on T sanitized + {f}% original", name, PAPER4[k].get(f),
                             (f"{k}_original", f"{k}_sanitized")))
    t.append(f"\n## Table 5: adapted models ({fracs[0]}%) interpolated: EM weights on the held-out slice, "
             "and the paper's fixed weights (003 Eq. 3: lambda_w 0.3, lambda_c 0.7, lambda_n 0.4)\n")
    t.append(f"Last column: the paper's \"best system\" claim tested, each mixture against the single "
             f"model of Tables 2-4 with the lowest dev WER ({best}, {m[best]['wer']:.2f}%) by MAPSSWE.\n"
             if best else "")
    t.append(head.format("WER vs original-data model of the richest kind in the mix | "
                         "WER vs that kind's unadapted sanitized model | "
                         f"WER vs the best single model ({best})", "---|---|---|"))
    wl = []
    for mix, (label, bases5) in {"M1+M2": ("M1 + M2", ("M2_original", "M2_sanitized")),
                                 "M1+M2+M3": ("M1 + M2 + M3", ("M3_original", "M3_sanitized")),
                                 "M1+M2+M4": ("M1 + M2 + M4", ("M4_original", "M4_sanitized"))}.items():
        name = f"T5_{mix}"
        if name in m:
            w = json.load(open(f"{out}/lm/{name}.json"))["weights"]
            wl.append(f"{label}: " + ", ".join(f"{x:.3f}" for x in w))
            t.append(row(f"{label}, EM weights (vs {bases5[0]} / {bases5[1]} / {best})", name, PAPER5[name],
                         bases5 + (best,)))
        if f"T5p_{mix}" in m:
            t.append(row(f"{label}, the paper's weights (vs {bases5[0]} / {bases5[1]} / {best})", f"T5p_{mix}",
                         PAPER5[name], bases5 + (best,)))
    n_ent = next(iter(m.values()))["n_ent"]
    key = dict(l.rstrip("\n").split("=", 1) for l in open(f"{out}/settings.key") if "=" in l)
    top = key.get("top", "0")
    hdr = [f"# Sanitized-text LMs: paper 003 Tables 2-5 ({'reduced' if reduced == '1' else 'full'} run)", "",
           run_time(int(secs), out, "lm/*.sys") + ".", "",
           data_paragraph(data) + " The LMs are trained on the AMI transcripts; only the WER columns "
           "rest on the synthetic speech's N-best lists.", "",
           f"Split of `train_text` ({split['words']} words) by whole meetings (shuffled, seed {seed}): training "
           f"set T = {split['train']} words; held-out slice {split['heldout']} words (original text, "
           "used only for the EM weights of Table 5); adaptation sets (original text, nested, disjoint from T): "
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
           "paper's single-pass M1-M3. MAPSSWE: score-wer --compare (sc_stats' test), * = significant at "
           "0.05; every Δ cell is this row minus the named baseline, rel. = relative to the baseline.",
           "The paper's numbers (a Kaldi TDNN recognizer with lattices, its own AMI split of 802k training "
           "words, spaCy-tagged entities incl. MISC) are beside ours for shape only: a different recognizer "
           "and data, not comparable in level.",
           "EM weights (Table 5): " + ("; ".join(wl) if wl else "–") +
           " (paper: λw 0.3, λc 0.7, λn 0.4).", ""]
    text = "\n".join(hdr + t) + "\n"
    open(f"{out}/results.md", "w").write(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
