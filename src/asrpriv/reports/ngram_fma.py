"""The results table of bin/ngram-fma-experiment (OUT_DIR/results.md), from its JSON reports.

    python -m asrpriv.reports.ngram_fma OUT SECONDS REDUCED PRIOR EPSILON DP_MAX_L1 TUNE_CLIENTS EVAL_CLIENTS SYSTEM...

Reads OUT/runs/weights.txt (tune-weights), OUT/lm/mixture.json (interpolate's EM weights) and,
for ``firstpass`` and every SYSTEM, OUT/runs/NAME/wer.json (score-wer --format json, with
--compare against the background 3-gram) and OUT/runs/NAME/ppl.json (perplexity --json).
A system ``fma-S-VARIANT-BETA`` is the FMA of the background with adaptation unigrams S (a:
1-best, b: references, c: 1-best with DP).
"""

from __future__ import annotations

import json
import sys


def _load(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def wer_cells(report: dict) -> tuple[str, str]:
    """The WER cell and the MAPSSWE cell (vs the background 3-gram) of a score-wer report."""
    c = report.get("compare")
    if not c:
        return f"{report['wer']:.2f}", "(reference)"
    sign = "better" if report["wer"] < c["wer_b"] else ("worse" if report["wer"] > c["wer_b"] else "same")
    return (f"{report['wer']:.2f}",
            f"{report['wer'] - c['wer_b']:+.2f} ({sign}), p = {c['p_value']:.3g}"
            f"{' *' if c['significant'] else ''}")


def results_md(out: str, seconds: int, reduced: bool, prior: str, eps: str, l1: str, tune: str,
               evalc: str, systems: list[str]) -> str:
    """The text of OUT/results.md."""
    runs = f"{out}/runs"
    with open(f"{runs}/weights.txt", encoding="utf-8") as f:
        weights = dict(line[1:].strip().split("=", 1) for line in f
                       if line.startswith("#") and "=" in line)
    mix = _load(f"{out}/lm/mixture.json")
    src = {"a": "1-best", "b": "references", "c": f"1-best + DP (eps {eps})"}
    rows = ["| LM | adaptation unigram | variant | beta | eval ppl | OOV % | WER % | vs background 3-gram (MAPSSWE) |",
            "|---|---|---|---|---|---|---|---|"]
    wer, cmp = wer_cells(_load(f"{runs}/firstpass/wer.json"))
    rows.append(f"| first pass (1-best of the N-best) | – | – | – | – | – | {wer} | {cmp} |")
    for name in systems:
        p = _load(f"{runs}/{name}/ppl.json")
        wer, cmp = wer_cells(_load(f"{runs}/{name}/wer.json"))
        ppl, oov = f"{p['ppl']:.1f}", f"{100 * p.get('oov_rate', 0):.2f}"
        if name.startswith("fma-"):
            _, s, variant, beta = name.split("-")
            rows.append(f"| FMA of the background | {src[s]} | {variant} | {beta} | {ppl} | {oov} | {wer} | {cmp} |")
        elif name == "mixture":
            ws = ", ".join(f"{x:.3f}" for x in mix["weights"])
            rows.append(f"| static mixture background + in-domain (weights {ws}) | – | – | – | {ppl} | {oov} | {wer} | {cmp} |")
        else:
            rows.append(f"| {name} 3-gram | – | – | – | {ppl} | {oov} | {wer} | {cmp} |")
    ev = _load(f"{runs}/background/wer.json")
    text = [f"# n-gram FMA on AMI ({'reduced' if reduced else 'full'} run, {int(seconds) // 60} min)", "",
            f"Evaluation clients: {evalc} ({ev['sentences']} utterances, {ev['ref_words']} words); tuning clients "
            f"(mixture weights, LM weight {weights.get('lm_weight')}, word penalty {weights.get('word_penalty')}): {tune}.",
            f"prior lambda = {prior}; DP: per-utterance L1 bound {l1}, Laplace epsilon {eps}. "
            "* = significant at 0.05 (MAPSSWE).", ""] + rows
    return "\n".join(text) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 8:
        print(f"usage: python -m {__name__} OUT SECONDS REDUCED PRIOR EPSILON DP_MAX_L1 "
              "TUNE_CLIENTS EVAL_CLIENTS SYSTEM...", file=sys.stderr)
        return 2
    out, seconds, reduced, prior, eps, l1, tune, evalc, *systems = args
    text = results_md(out, int(seconds), reduced == "1", prior, eps, l1, tune, evalc, systems)
    with open(f"{out}/results.md", "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
