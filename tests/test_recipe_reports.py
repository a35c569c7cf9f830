"""The recipes' library halves that replaced their inline Python (expected values by hand):
bin/sanitized-lm-experiment's split by meetings and unk penalty (now asrpriv.io.meetings and
asrpriv.nnlm.vocab, reached through the report module's door), bin/ngram-fma-experiment's
results table, bin/confidence-experiment's scale choice and table (asrpriv.reports)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

from _table_helpers import section_rows
from conftest import run_cli
from asrpriv.io.meetings import split_meetings
from asrpriv.nnlm.vocab import unk_penalty
from asrpriv.reports import confidence, ngram_fma


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
    stats = split_meetings(str(tmp_path / "train_text"), str(tmp_path / "ne" / "train_ne.tsv"), str(out),
                           5, 10.0, [20, 40])
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
    # the recipe's face: select-text --split-dir writes the same files, byte for byte
    cli = tmp_path / "cli"
    cli.mkdir()
    res = run_cli(["select-text", "-q", "--split-dir", str(cli), "--spans", str(tmp_path / "ne" / "train_ne.tsv"),
                   "--heldout-share", "10", "--adapt-shares", "20 40", "--seed", "5", str(tmp_path / "train_text")])
    assert res.exit_code == 0, res.stderr
    assert sorted(p.name for p in cli.iterdir()) == sorted(p.name for p in out.iterdir())
    for p in out.iterdir():
        assert (cli / p.name).read_bytes() == p.read_bytes(), p.name


def test_split_dir_refuses_what_it_cannot_honour(tmp_path):
    _corpus(tmp_path)
    text, spans = str(tmp_path / "train_text"), str(tmp_path / "ne" / "train_ne.tsv")
    base = ["select-text", "--split-dir", str(tmp_path), "--spans", spans, "--heldout-share", "10",
            "--adapt-shares", "20", "--seed", "5"]
    for extra, said in ((["--every", "2"], "--every"), (["-o", str(tmp_path / "x")], "--output"),
                        (["--adapt-shares", "x"], "whole percents")):
        res = run_cli(base + extra + [text])
        assert res.exit_code == 2 and said in res.stderr, (extra, res.stderr)
    res = run_cli(["select-text", "--split-dir", str(tmp_path), "--spans", spans, text])
    assert res.exit_code == 2 and "needs --heldout-share, --adapt-shares, --seed" in res.stderr, res.stderr
    res = run_cli(["select-text", "--seed", "5", text])
    assert res.exit_code == 2 and "--seed apply to --split-dir" in res.stderr, res.stderr
    # a share the scenario meetings cannot fill: one line, not a traceback
    res = run_cli(base[:-6] + ["--heldout-share", "90", "--adapt-shares", "20", "--seed", "5", text])
    assert res.exit_code == 2 and "run out" in res.stderr and "Traceback" not in res.stderr, res.stderr


def test_unk_penalty_by_hand(tmp_path):
    (tmp_path / "lm.arpa").write_text("\\data\\\nngram 1=4\n\n\\1-grams:\n-1\t<s>\n-1\t</s>\n-1\ta\n-1\tb\n\n\\end\\\n")
    (tmp_path / "n.tsv").write_text("utt_id\trank\ttext\nu\t1\ta x\nu\t2\tb y x\nv\t1\tz\n")
    assert unk_penalty(str(tmp_path / "lm.arpa"), str(tmp_path / "n.tsv")) == math.log(3)
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


def _wer(wer, lo, hi, diff=None, p=None, ci=None):
    """A score-wer --format json report: WER, its bootstrap interval, with --compare a paired
    difference DIFF with interval CI and MAPSSWE p-value P (significant below 0.05)."""
    report = {"wer": wer, "sentences": 3, "ref_words": 20,
              "bootstrap": {"resamples": 1000, "seed": 1, "wer_low": lo, "wer_high": hi}}
    if diff is not None:
        report["bootstrap"].update(diff=diff, diff_low=ci[0], diff_high=ci[1])
        report["compare"] = {"p_value": p, "significant": p < 0.05}
    return report


def test_ngram_fma_results_table(tmp_path):
    """A hand-worked run: sources a and c (2 draws), betas 0.25 0.5 1, one variant."""
    runs = tmp_path / "runs"
    reports = {
        "firstpass": (_wer(31.0, 29.0, 33.0, 1.0, 0.04, (0.1, 1.9)), None, None),
        "background": (_wer(30.0, 28.0, 32.0), 25.0, 196.1),
        "indomain": (_wer(29.0, 27.0, 31.0, -1.0, 0.001, (-1.6, -0.4)), 24.0, 102.6),
        "mixture": (_wer(28.9, 27.0, 31.0, -1.1, 0.001, (-1.7, -0.5)), 24.0, 99.9),
        # a: tuning WER 20, 18, 19 -> beta 0.5 chosen (not on the edge of 0.25 0.5 1)
        "fma-a-reversed-0.25": (_wer(29.8, 28.0, 31.5, -0.2, 0.5, (-0.7, +0.3)), 20.0, 190.0),
        "fma-a-reversed-0.5": (_wer(29.5, 27.5, 31.5, -0.5, 0.03, (-0.9, -0.1)), 18.0, 200.0),
        "fma-a-reversed-1": (_wer(29.9, 28.0, 32.0, -0.1, 0.8, (-0.6, +0.4)), 19.0, 230.0),
        # c: tuning WER means 23, 22, 22.5 -> beta 0.5 chosen
        "fma-c-reversed-0.25-d1": (_wer(31.0, 29.0, 33.0, 1.2, 0.02, (0.2, 2.2)), 24.0, 700.0),
        "fma-c-reversed-0.25-d2": (_wer(31.2, 29.0, 33.5, 1.4, 0.01, (0.3, 2.4)), 22.0, 720.0),
        "fma-c-reversed-0.5-d1": (_wer(30.0, 28.0, 32.0, 0.5, 0.2, (-0.5, 1.5)), 21.0, 440.0),
        "fma-c-reversed-0.5-d2": (_wer(31.0, 29.5, 33.0, 1.5, 0.01, (0.4, 2.6)), 23.0, 460.0),
        "fma-c-reversed-1-d1": (_wer(30.1, 28.0, 32.0, 0.2, 0.6, (-0.4, 0.8)), 20.0, 310.0),
        "fma-c-reversed-1-d2": (_wer(30.3, 28.0, 32.5, 0.4, 0.4, (-0.3, 1.1)), 25.0, 320.0),
    }
    for name, (report, tune, ppl) in reports.items():
        (runs / name).mkdir(parents=True)
        (runs / name / "wer.json").write_text(json.dumps(report))
        if tune is not None:
            (runs / name / "tune-wer.json").write_text(json.dumps({"wer": tune, "sentences": 2, "ref_words": 10}))
        if ppl is not None:
            (runs / name / "ppl.json").write_text(json.dumps({"ppl": ppl, "oov_rate": 0.009}))
    (runs / "weights.txt").write_text("#lm_weight=6\n#word_penalty=-1\n")
    (tmp_path / "lm").mkdir()
    (tmp_path / "lm" / "mixture.json").write_text(json.dumps({"weights": [0.25, 0.75]}))
    (tmp_path / "runtime.tsv").write_text("130\t1700000000\tbin/ngram-fma-experiment --reduced D O\n")
    assert ngram_fma.main([str(tmp_path), "--reduced", "1", "--betas", "0.25 0.5 1", "--variants", "reversed",
                           "--sources", "c", "--draws", "2", "--prior", "0.1", "--epsilon", "2", "--max-l1", "15",
                           "--tune-clients", "t1 t2", "--eval-clients", "e1", "--seconds", "130"]) == 0
    text = (tmp_path / "results.md").read_text()
    assert text.startswith("# n-gram FMA (paper 003 §2.3) on the dev N-best lists (reduced run)\n")
    assert ("Made by `bin/ngram-fma-experiment --reduced D O`. Run time 130 s = 2 min 10 s (one invocation, "
            "measured by the recipe; OUT/runtime.tsv).") in text
    assert "Evaluation clients: e1 (3 utterances, 20 reference words; one word error is 5.000 WER points)" in text
    assert "LM weight 6, word penalty -1" in text and "noise from the OS's secure source (private)" in text
    rows = section_rows(text, "## Every system")
    assert rows[0] == ["first pass (1-best of the N-best)", "–", "–", "–", "–", "–", "–", "31.00 [29.00, 33.00]",
                       "vs unadapted background 3-gram: +1.00 [+0.10, +1.90], p = 0.04 *"]
    assert rows[1] == ["unadapted background 3-gram", "–", "–", "–", "196.1", "0.90", "25.00", "30.00 [28.00, 32.00]",
                       "(the baseline of the rows without noise)"]
    assert rows[3][0] == "static mixture background + in-domain (EM weights 0.250, 0.750)"
    # SOURCES "c" builds a (c's counterpart without noise) before it
    assert [r[1:4] for r in rows[4:]] == [["1-best", "reversed", b] for b in ("0.25", "0.5", "1")] + \
        [["1-best + DP (eps 2)", "reversed", b] for b in ("0.25", "0.5", "1")]
    assert [r[6] for r in rows[4:]] == ["20.00", "18.00 **chosen**", "19.00", "23.00 (mean)",
                                       "22.00 (mean) **chosen**", "22.50 (mean)"]
    assert rows[5][7:] == ["29.50 [27.50, 31.50]", "vs unadapted background 3-gram: -0.50 [-0.90, -0.10], p = 0.03 *"]
    # the DP row: the mean of its draws, the union of their intervals, each draw against (a) without noise
    assert rows[8][4] == "450.0 (mean)"
    assert rows[8][7] == "30.50 [28.00, 33.00] (mean of 2 draws: 30.00, 31.00)"
    assert rows[8][8] == ("vs FMA on (a) 1-best without noise, same variant and beta (29.50): +1.00 [-0.50, +2.60] "
                          "(mean of the draws' differences, union of their intervals); 1 of 2 draws significant "
                          "(p 0.01–0.2)")
    chosen = section_rows(text, "## Chosen on the tuning clients")
    assert chosen[0] == ["none (unadapted background 3-gram)", "–", "30.00 [28.00, 32.00]", "(the baseline)"]
    assert chosen[1][:3] == ["1-best", "reversed, beta 0.5 (18.00)", "29.50 [27.50, 31.50]"]
    assert chosen[2][:3] == ["1-best + DP (eps 2)", "reversed, beta 0.5 (22.00, mean of the draws)",
                             "30.50 [28.00, 33.00] (mean of 2 draws: 30.00, 31.00)"]
    assert chosen[2][3] == rows[8][8]


def test_ngram_fma_choice_ties_and_edges():
    """Lowest mean tuning WER; ties to the first in grid order; the edge is the first or last of two or more."""
    assert ngram_fma.choose([("s/0.5", [20.0]), ("s/1", [19.0]), ("r/0.5", [19.0])]) == ("s/1", 19.0, False)
    assert ngram_fma.choose([("x", [21.0, 23.0]), ("y", [20.0, 25.0])]) == ("x", 22.0, True)
    assert ngram_fma.choose([("only", [5.0])]) == ("only", 5.0, False)
    assert ngram_fma.build_sources(["b", "c"]) == ["b", "a", "c"] and ngram_fma.build_sources(["a", "b"]) == ["a", "b"]
    assert ngram_fma.fma_name("c", "standard", "0.5", 2) == "fma-c-standard-0.5-d2"
