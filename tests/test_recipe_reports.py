"""The recipes' library halves that replaced their inline Python (expected values by hand):
bin/sanitized-lm-experiment's split by meetings and unk penalty, bin/ngram-fma-experiment's
results table, bin/confidence-experiment's scale choice and table (asrpriv.reports)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

from asrpriv.reports import confidence, ngram_fma, sanitized_lm


def _corpus(tmp_path):
    """Meetings (words): ES1 (4), ES2 (2), IS1 (6), TS1 (8), EN1 (10, non-scenario): 30 words."""
    lines = ["ES1_1 a b", "ES1_2 c d", "ES2_1 e f", "IS1_1 g h i", "IS1_2 j k l",
             "TS1_1 m n o p", "TS1_2 q r s t", "", "EN1_1 u v w x y", "EN1_2 z z z z z"]
    (tmp_path / "ne").mkdir()
    (tmp_path / "train_text").write_text("\n".join(lines) + "\n")
    (tmp_path / "ne" / "train_ne.tsv").write_text(
        "utt_id\tstart\tend\tclass\n" "ES1_1\t0\t1\tPER\n" "IS1_2\t1\t2\tLOC\n" "EN1_1\t0\t1\tORG\n")
    return lines


def test_split_meetings_by_hand(tmp_path):
    lines = _corpus(tmp_path)
    out = tmp_path / "split"
    out.mkdir()
    import random

    order = sorted(["ES1", "ES2", "IS1", "TS1"])
    random.Random(5).shuffle(order)
    stats = sanitized_lm.split_meetings(str(tmp_path), str(out), 5, 10.0, [20, 40])
    words = {"ES1": 4, "ES2": 2, "IS1": 6, "TS1": 8}
    # held-out: meetings until 10% of 30 words (3); pool: until 40/140 of the rest
    held, acc, i = [], 0, 0
    while acc < 3:
        held.append(order[i]); acc += words[order[i]]; i += 1
    pool, pacc = [], 0
    while pacc < (30 - acc) * 40 / 140:
        pool.append(order[i]); pacc += words[order[i]]; i += 1
    t_words = 30 - acc - pacc
    assert stats["heldout"] == acc and stats["train"] == t_words and stats["words"] == 30
    assert stats["meetings"]["heldout"] == sorted(held)
    train = set(order[i:]) | {"EN1"}
    assert (out / "train.txt").read_text() == "".join(
        line + "\n" for line in lines if line and line.split("_")[0] in train)
    ne = (out / "train_ne.tsv").read_text().splitlines()
    assert ne[0] == "utt_id\tstart\tend\tclass" and "EN1_1\t0\t1\tORG" in ne
    assert json.loads((out / "split.json").read_text()) == stats
    for f in (20, 40):   # nested prefixes of the pool
        assert stats["meetings"][f"adapt{f}"] == sorted(pool[:len(stats["meetings"][f"adapt{f}"])])
        assert stats[f"adapt{f}"] == sum(words[m] for m in stats["meetings"][f"adapt{f}"])


def test_unk_penalty_by_hand(tmp_path):
    (tmp_path / "lm.arpa").write_text("\\data\\\nngram 1=4\n\n\\1-grams:\n-1\t<s>\n-1\t</s>\n-1\ta\n-1\tb\n\n\\end\\\n")
    (tmp_path / "n.tsv").write_text("utt_id\trank\ttext\nu\t1\ta x\nu\t2\tb y x\nv\t1\tz\n")
    assert sanitized_lm.unk_penalty(str(tmp_path / "lm.arpa"), str(tmp_path / "n.tsv")) == math.log(3)
    proc = subprocess.run([sys.executable, "-m", "asrpriv.reports.sanitized_lm", "unk-penalty",
                           str(tmp_path / "lm.arpa"), str(tmp_path / "n.tsv")],
                          capture_output=True, text=True, check=True)
    assert proc.stdout == f"{math.log(3)!r}\n"


def _conf_reports(out, nce):
    """confidence --report files: ``nce[scale] = (NCE B fit A, NCE A fit B)``."""
    def m(n):
        return {"words": 10, "p_correct": 0.7, "mean_confidence": None, "nce": n, "ece": 0.05, "auc": 0.75}

    for s, (b, a) in nce.items():
        (out / f"scale-{s}").mkdir(parents=True)
        for name, value in (("adapt-raw", 0.1), ("B-cal-on-A", b), ("A-cal-on-B", a)):
            (out / f"scale-{s}" / f"{name}.json").write_text(json.dumps({"raw": m(value), "calibrated": m(value)}))
    (out / "chosen").mkdir()
    for name in ("adapt-fit", "dev"):
        (out / "chosen" / f"{name}.json").write_text(json.dumps({"raw": m(0.2), "calibrated": m(0.3)}))


def test_confidence_scale_choice_and_table(tmp_path):
    _conf_reports(tmp_path, {"0.1": (0.1, 0.3), "0.2": (0.3, 0.1), "0.5": (0.0, 0.1)})
    # means 0.2, 0.2, 0.05: the first of the tie
    assert confidence.choose_scale(str(tmp_path), ["0.1", "0.2", "0.5"]) == "0.1"
    assert confidence.choose_scale(str(tmp_path), ["0.2", "0.1"]) == "0.2"
    text = confidence.table(str(tmp_path), "0.2", ["0.1", "0.2"])
    lines = text.splitlines()
    assert lines[0].startswith("## Scale scan") and lines[1] == ""
    assert "| 0.2 (chosen) | 0.100 | 0.050 | 0.750 | 0.300 | 0.100 | 0.050 / 0.050 | 0.750 / 0.750 |" in lines
    assert "| dev, calibrated on adapt | 10 | 70.0 | n/a | 0.300 | 0.050 | 0.750 |" in lines
    assert text.endswith("|\n") and "\n## At S = 0.2\n\n" in text


def test_ngram_fma_results_table(tmp_path):
    runs = tmp_path / "runs"
    for name, wer, compare in (("firstpass", 31.0, (30.0, 0.04, True)), ("background", 30.0, None),
                               ("mixture", 30.0, (30.0, 1.0, False)), ("fma-c-reversed-0.5", 29.5, (30.0, 0.2, False))):
        (runs / name).mkdir(parents=True)
        report = {"wer": wer, "sentences": 3, "ref_words": 20}
        if compare:
            report["compare"] = dict(zip(("wer_b", "p_value", "significant"), compare))
        (runs / name / "wer.json").write_text(json.dumps(report))
        (runs / name / "ppl.json").write_text(json.dumps({"ppl": 123.45, "oov_rate": 0.0123}))
    (runs / "weights.txt").write_text("#lm_weight=6\n#word_penalty=-1\n")
    (tmp_path / "lm").mkdir()
    (tmp_path / "lm" / "mixture.json").write_text(json.dumps({"weights": [0.25, 0.75]}))
    assert ngram_fma.main([str(tmp_path), "130", "1", "0.1", "2", "15", "t1 t2", "e1",
                           "background", "mixture", "fma-c-reversed-0.5"]) == 0
    lines = (tmp_path / "results.md").read_text().splitlines()
    assert lines[0] == "# n-gram FMA on AMI (reduced run, 2 min)"
    assert lines[2].startswith("Evaluation clients: e1 (3 utterances, 20 words); tuning clients "
                               "(mixture weights, LM weight 6, word penalty -1): t1 t2.")
    assert "| first pass (1-best of the N-best) | – | – | – | – | – | 31.00 | +1.00 (worse), p = 0.04 * |" in lines
    assert "| background 3-gram | – | – | – | 123.5 | 1.23 | 30.00 | (reference) |" in lines
    assert ("| static mixture background + in-domain (weights 0.250, 0.750) | – | – | – | 123.5 | 1.23 | "
            "30.00 | +0.00 (same), p = 1 |") in lines
    assert ("| FMA of the background | 1-best + DP (eps 2) | reversed | 0.5 | 123.5 | 1.23 | 29.50 | "
            "-0.50 (better), p = 0.2 |") in lines
