"""The recipes' report modules (asrpriv.reports.*) on made-up score files: labels, data, run time."""

from __future__ import annotations

import json
import math
import os
import re
import time
from pathlib import Path

import pytest

from _table_helpers import section_rows
from conftest import AMI, ROOT, run_cli
from asrpriv.reports import common, fl, fmp

NAME = "AMI text synthesized by flite, decoded by pocketsphinx 5.1.1 (synthetic speech)"


def _wer(wer: float, words: int = 1000, diff: float | None = None) -> dict:
    boot = {"wer_low": wer - 1.0, "wer_high": wer + 1.0, "resamples": 100, "seed": 1}
    report = {"wer": wer, "sentences": 100, "ref_words": words, "bootstrap": boot}
    if diff is not None:
        boot.update(diff=diff, diff_low=diff - 0.5, diff_high=diff + 0.5)
        report["compare"] = {"significant": False, "z": 0.1, "p_value": 0.9, "segments": 10}
    return report


def _fmp_out(tmp_path: Path, old: bool) -> Path:
    out = tmp_path / "out"
    runs = {"firstpass": _wer(25.0, diff=0.0), "baseline": _wer(24.0), "fmp-T1": _wer(23.5, diff=-0.5),
            "fmp-T2": _wer(23.4, diff=-0.6), "fmp-T2-sigma5": _wer(23.4, diff=-0.6),
            "fmp-T2-sigma0.1-b0": _wer(23.6, diff=-0.4)}
    runs.update({f"fmp-T2-dp1-draw{d}": _wer(23.8 + 0.1 * d, diff=0.2) for d in (1, 2, 3)})
    for name, report in runs.items():
        d = out / "runs" / name
        d.mkdir(parents=True)
        (d / "wer.json").write_text(json.dumps(report))
        (d / "run.key").write_text("k\n")
        if old:                                   # made by an earlier invocation
            t = time.time() - 3600
            os.utime(d / "run.key", (t, t))
    return out


def _fmp_args(out: Path, data: str | None) -> list[str]:
    args = ["--t-sweep", "2", "--rounds", "1 2", "--sigmas", "5", "--epsilons", "1", "--draws", "3",
            "--dp-sigma", "0.1", "--dp-max-l1", "15", "--lambda", "1", "--tune-clients", "A",
            "--eval-clients", "B C", "--seconds", "4", str(out)]
    return (["--data", data] if data else []) + args


def test_fmp_report_labels_data_and_cache(tmp_path):
    out = _fmp_out(tmp_path, old=True)
    assert fmp.main(_fmp_args(out, str(AMI))) == 0
    text = (out / "results.md").read_text()
    # the data is named from examples/data/ami/SOURCE.txt, with what it implies
    assert NAME in text and "bigram first pass" in text
    assert "AMI dev N-best lists" not in text
    # Tables 3 and 4: our T beside the paper's T = 10, never "(T=2)" over the paper's T = 10 column
    assert "## Table 3: kernel bandwidth and interpolation weights (ours T=2; paper 000's column T=10)" in text
    assert "## Table 4: DP-FMP (ours T=2; paper 000's column T=10," in text
    # a cached rerun says so instead of passing 4 s off as the computation's run time
    assert "Run time 4 s" in text and "9 of 9 artefacts were reused from the cache" in text
    # three draws reported as three, each DP row against the no-DP row
    assert "vs FMP no DP (mean of 3 draws)" in text and "0 of 3 draws significant vs FMP no DP" in text
    # with the draws' paired differences: their mean and the union of their intervals
    assert "(mean of 3 draws); diff +0.20 pts [-0.30, +0.70] (union of the draws' intervals)" in text
    assert (out / "wer_vs_epsilon.png").stat().st_size > 1000


def test_fmp_report_fresh_run_and_unknown_data(tmp_path):
    out = _fmp_out(tmp_path, old=False)
    other = tmp_path / "other-data"
    other.mkdir()
    assert fmp.main(_fmp_args(out, str(other))) == 0
    text = (out / "results.md").read_text()
    assert "reused from the cache" not in text
    assert f"the N-best lists in {other} (origin not recorded" in text and NAME not in text
    assert fmp.main(_fmp_args(out, None)) == 0
    assert "data not named" in (out / "results.md").read_text()


def test_run_time_lists_every_part_and_their_sum(tmp_path):
    """A run made in parts (each resuming from the cache) is timed as the sum of its parts: one
    sentence builder (runtime_paragraph) for every recipe's report."""
    (tmp_path / "runtime.tsv").write_text("2546\tbin/fmp-experiment examples/data/ami out\n"
                                          "4\tSIGMAS=1 bin/fmp-experiment examples/data/ami out\n")
    text = common.runtime_paragraph(str(tmp_path), 4, "runs/*/run.key")
    assert text.startswith("Made in 2 invocations, each reusing what the earlier ones had cached: ")
    assert "(1) `bin/fmp-experiment examples/data/ami out`: 2546 s" in text
    assert "(2) `SIGMAS=1 bin/fmp-experiment examples/data/ami out`: 4 s" in text
    assert text.endswith("Run time 2550 s = 42 min 30 s, the sum of the 2 parts (OUT/runtime.tsv).")
    assert "LOWER BOUND" not in text and "NOT the cost" not in text
    # recipe_runtime_begin's marker (artefacts from before the recipe kept runtime.tsv): not a
    # part, and the sum is a lower bound
    (tmp_path / "runtime.tsv").write_text("0\t(earlier invocations, not timed)\n4\tbin/x a b\n9\tbin/x a b\n")
    text = common.runtime_paragraph(str(tmp_path), 9, "runs/*/run.key")
    assert "Made by `bin/x a b`, in 2 invocations" in text and ": 4 s + 9 s. Run time 13 s = 13 s," in text
    assert "LOWER BOUND" in text and "(earlier" not in text
    # one recorded invocation: its time and command; a line that is not 'seconds<TAB>command' is skipped
    (tmp_path / "runtime.tsv").write_text("665\tbin/privacy-frontier --reduced D O\nnot a line\n")
    assert common.read_runtime(str(tmp_path)) == [(665, None, "bin/privacy-frontier --reduced D O")]
    assert common.runtime_paragraph(str(tmp_path), 665, "x/*", "ignored") == (
        "Made by `bin/privacy-frontier --reduced D O`. Run time 665 s = 11 min 5 s (one invocation, "
        "measured by the recipe; OUT/runtime.tsv).")
    # no runtime.tsv: this invocation's time, and the command the report was given
    (tmp_path / "runtime.tsv").unlink()
    assert common.runtime_paragraph(str(tmp_path), 65, "x/*", "bin/x D O") == (
        "Made by `bin/x D O`. Run time 65 s = 1 min 5 s (this invocation, measured by the recipe).")


def test_wer_cells_and_mean_of_draws_by_hand():
    """common's WER cells and the summary of a DP setting's draws (worked by hand)."""
    one = {"wer": 24.5, "bootstrap": {"wer_low": 22.18, "wer_high": 26.79, "diff": -0.214, "diff_low": -0.6,
                                      "diff_high": 0.149}, "compare": {"p_value": 0.0838, "significant": False}}
    assert common.fmt_wer(one) == "24.50 [22.18, 26.79]" and common.fmt_wer({"wer": 3.0}) == "3.00"
    assert common.fmt_diff(one) == "-0.21 [-0.60, +0.15]" and common.fmt_diff({"wer": 1.0}) is None
    assert common.fmt_mapsswe(one) == "p = 0.0838"
    assert common.fmt_mapsswe({"compare": {"p_value": 2.56e-05, "significant": True}}) == "p = 2.56e-05 *"
    draws = [{"wer": 23.0, "bootstrap": {"wer_low": 21.0, "wer_high": 25.0, "diff": 0.5, "diff_low": -0.5,
                                         "diff_high": 1.5}, "compare": {"p_value": 0.2, "significant": False}},
             {"wer": 24.0, "bootstrap": {"wer_low": 22.5, "wer_high": 25.5, "diff": 1.5, "diff_low": 0.4,
                                         "diff_high": 2.6}, "compare": {"p_value": 0.01, "significant": True}},
             {"wer": 25.0, "bootstrap": {"wer_low": 23.0, "wer_high": 27.0, "diff": 1.0, "diff_low": 0.0,
                                         "diff_high": 2.0}, "compare": {"p_value": 0.05, "significant": False}}]
    s = common.mean_of_draws(draws)
    assert (s["n"], s["wers"], s["wer"], s["low"], s["high"]) == (3, [23.0, 24.0, 25.0], 24.0, 21.0, 27.0)
    assert (s["diff"], s["diff_low"], s["diff_high"]) == (1.0, -0.5, 2.6)
    assert (s["compared"], s["significant"], s["p_min"], s["p_max"]) == (3, 1, 0.01, 0.2)
    # without intervals or tests: the mean alone
    bare = common.mean_of_draws([{"wer": 1.0}, {"wer": 2.0}])
    assert bare["wer"] == 1.5 and bare["low"] is None and bare["diff"] is None and bare["compared"] == 0
    with pytest.raises(ValueError):
        common.mean_of_draws([])


def test_epsilon_rounded_once():
    # 14.2526 was 14.3 in the table and 14.2 in the history (14.25 rounded again): now both 14.25
    assert common.fmt_eps(14.2526) == "14.25"
    assert common.fmt_eps(0.91834) == "0.9183"


def test_history_epsilon_is_not_rounded_twice(tmp_path):
    (tmp_path / "privacy").mkdir()
    (tmp_path / "privacy" / "m.history.txt").write_text(
        "release 1 ...\ntotal at delta 1e-05: epsilon 14.25 (RDP), 13.22 (PLD)\n")
    assert fl._history_epsilon(str(tmp_path), "m") == "14.25 / 13.22"


def test_data_name_of_the_bundled_set_and_its_source_file():
    assert common.data_name(str(AMI)) == NAME == common.DATA_NAME
    assert (AMI / "SOURCE.txt").read_text().splitlines()[0] == NAME


@pytest.mark.parametrize("wrapper", ["fmp-report", "fl-report", "leakage-report", "sanitized-lm-report"])
def test_bin_reports_are_thin_wrappers(wrapper):
    text = (ROOT / "bin" / wrapper).read_text()
    assert len(text.splitlines()) < 12 and "from asrpriv.reports." in text


def test_leakage_report_names_data_and_draws_the_plot(tmp_path):
    from asrpriv.reports import leakage

    lab = {"purity": 0.5, "entropy": 1.0, "pure_clusters": 1, "clusters": 4}
    rep = {"items": 16, "labels": {"speaker": lab, "meeting": lab, "gender": lab},
           "rank": {"mean_rank": 3.0, "chance_rank": 8.5},
           "probe": {"gender": {"accuracy": 0.6, "accuracy_ci": [0.4, 0.8], "chance": 0.5, "auc": 0.6,
                                "auc_ci": [0.4, 0.8]}}}
    for name in ("e1-emb", "dp-z0", "counts-clean"):
        for method in ("constrained", "random", "divisive"):
            d = tmp_path / "audit" / name / method
            d.mkdir(parents=True)
            (d / "report.json").write_text(json.dumps(rep))
    args = ["--data", str(AMI), "--mode", "tiny", "--epochs", "1", "--layers", "emb=embedding.*", "--z", "",
            "--clip", "1", "--audit-epoch", "1", "--epsilons", "", "--max-l1", "15", "--seconds", "9", str(tmp_path)]
    assert leakage.main(args) == 0
    text = (tmp_path / "results.md").read_text()
    assert NAME in text and "on AMI\n" not in text.splitlines()[0] and "Run time 9 s" in text
    assert (tmp_path / "leakage_vs_noise.png").stat().st_size > 1000
    assert "## Scale" not in text                               # no deltas in this OUT
    # issue 29: the per-item cost from the delta files' times (set by hand), 004's 2,745 items projected
    t0 = time.time() - 1000
    (tmp_path / "deltas-e1").mkdir()
    for i in range(5):                                          # 5 items, one every 3 s, 1 MB each
        f = tmp_path / "deltas-e1" / f"S{i}_1.delta.pt"
        f.write_bytes(b"x" * 1_000_000)
        os.utime(f, (t0 + 3 * i, t0 + 3 * i))
    (tmp_path / "deltas-e1.key").write_text("k\n")
    assert leakage.delta_costs(str(tmp_path), [1, 3]) == [(1, 5, 3.0, 1e6)]
    assert leakage.main(args) == 0
    text = (tmp_path / "results.md").read_text()
    assert section_rows(text, "## Scale") == [["after epoch 1", "5", "3.00", "1.0", f"{2745 * 3 / 3600:.1f}", "3"]]
    assert f"{(2745 / 5) ** 2:,.0f}x this run's" in text


def _fl_out(tmp_path: Path) -> Path:
    """A made-up OUT of bin/fl-finetune-experiment: main rows, 3 DP draws, the short-utterance
    scores (Table 3), a training curve (t = 1, 2 and the row itself at t = 3) and 2 invocations."""
    out = tmp_path / "out"
    rows = {"nonnlm": (25.0, None), "pretrained": (24.0, 170.0), "server-all": (23.5, 150.0),
            "fl-token": (23.0, 160.0), "dp-token-z0.5-d1": (23.9, 169.0), "dp-token-z0.5-d2": (24.1, 168.0),
            "dp-token-z0.5-d3": (24.3, 167.0), "curve-fl-token-t0001": (23.8, 168.0),
            "curve-fl-token-t0002": (23.4, 163.0), "curve-fl-token-t0005": (30.0, 999.0)}
    for name, (w, p) in rows.items():
        d = out / "runs" / name
        d.mkdir(parents=True)
        diff = None if name == "pretrained" else w - 24.0
        (d / "wer.json").write_text(json.dumps(_wer(w, diff=diff)))
        if not name.startswith("curve-"):
            (d / "wer-short.json").write_text(json.dumps(_wer(w + 10.0, words=200, diff=diff)))
        if p:
            (d / "ppl.json").write_text(json.dumps({"ppl": p}))
        (d / "hyp.txt.key").write_text("k\n")
    (out / "privacy").mkdir()
    (out / "privacy" / "z0.5.json").write_text(json.dumps({"epsilon_rdp": 14.2526, "epsilon_pld": 13.2249}))
    (out / "privacy" / "paper-z0.5.json").write_text(json.dumps({"epsilon_rdp": 15.5, "epsilon_pld": 13.4}))
    for d in (1, 2, 3):
        (out / "privacy" / f"dp-token-z0.5-d{d}.history.txt").write_text(
            "...\ntotal at delta 1e-05: epsilon 14.25 (RDP), 13.22 (PLD)\n")
    now = int(time.time())
    (out / "runtime.tsv").write_text(f"3000\t{now - 3700}\tROUNDS=3 bin/fl-finetune-experiment --reduced D O [stopped: exit 143]\n"
                                     f"40\t{now - 60}\tROUNDS=3 bin/fl-finetune-experiment --reduced D O\n")
    return out


def _fl_args(out: Path) -> list[str]:
    return ["--data", str(AMI), "--mode", "reduced", "--rate", "0.5", "--rounds", "3", "--clients", "40",
            "--server-lr", "0.01", "--clip", "0.5", "--dp-z", "0.5", "--dp-modes", "token", "--draws", "3",
            "--fl-modes", "token", "--scratch-modes", "", "--hard-threshold", "0.8", "--delta", "1e-5",
            "--nnlm-args", "--arch lstm", "--noise-seeded", "", "--seconds", "40", "--short-words", "4",
            "--curve-row", "fl-token", "--curve-rounds", "1 2 3",
            "--command", "ROUNDS=3 bin/fl-finetune-experiment --reduced D O", str(out)]


def test_fl_report_curve_short_table_dp_means_and_parts(tmp_path):
    out = _fl_out(tmp_path)
    assert fl.main(_fl_args(out)) == 0
    text = (out / "results.md").read_text()
    assert NAME in text
    # every row of every table has an interval
    for heading in ("## Table 2", "## Table 5", "### Table 5, every draw", "## Table 3", "DP settings on the same",
                    "## Training curve"):
        rows = section_rows(text, heading)
        assert rows, heading
        for row in rows:
            assert any(c.startswith("[") or "bootstrap [" in c for c in row), (heading, row)
    # the curve: t = 0 (pre-trained), the rounds the recipe evaluated, t = 3 = the row itself; never t = 5
    curve = section_rows(text, "## Training curve")
    assert [r[0] for r in curve] == ["0", "1", "2", "3"]
    assert curve[0][1:3] == ["170.0", "24.00"] and curve[3][1:3] == ["160.0", "23.00"]
    assert "curve-fl-token" not in text.split("## Training curve")[0]    # no curve row in the main tables
    assert (out / "fl_curve.png").stat().st_size > 1000 and (out / "fl_wer.png").stat().st_size > 1000
    # DP: the mean of 3 draws, its t-interval and the envelope of the draws' bootstrap intervals
    dp = section_rows(text, "## Table 5")[0]
    assert dp[6] == "3" and dp[8] == "24.10"
    half = 4.302653 * 0.2 / 3 ** 0.5          # t(0.975, 2) s / sqrt(3), s = 0.2
    assert dp[9] == f"t [{24.1 - half:.2f}, {24.1 + half:.2f}]; bootstrap [22.90, 25.30]"
    assert len(section_rows(text, "### Table 5, every draw")) == 3
    # epsilon rounded once: the table and the history say the same
    assert dp[2] == "14.25" and dp[3] == "13.22" and "z = 0.5, token weighted: 14.25 / 13.22." in text
    # Table 3: the short-utterance scores, what differs from 001's voice commands
    short = section_rows(text, "## Table 3")
    assert [r[1] for r in short[:2]] == ["35.00", "34.00"] and short[1][-1] == "9.89"
    assert "not voice commands" in text and "4-word segments" in text and "200 reference words" in text
    # the exact command, every part, and the summed run time
    assert "(1) `ROUNDS=3 bin/fl-finetune-experiment --reduced D O [stopped: exit 143]`: 3000 s" in text
    assert "Run time 3040 s = 50 min 40 s, the sum of the 2 parts" in text
    assert "Run time 40 s" not in text and "LOWER BOUND" not in text


def test_fl_report_scale_section_times_rows_from_their_artefacts(tmp_path):
    """Issue 29: each FL row's federated cost from its cohort files and final model (times set by
    hand), and paper 001's 1,000 x 100 client updates projected from the median per update."""
    out = _fl_out(tmp_path)
    t0 = time.time() - 10_000
    for name, clients, seconds in (("fl-token", ["ES2002a", "IS1000b"], 30.0), ("dp-token-z0.5-d1", ["TS3003a"], 45.0)):
        d = out / "fl" / name
        d.mkdir(parents=True)
        for t in (1, 2, 3):                              # 3 rounds: 2 + 2 + 2 updates, or 1 + 1 + 1
            (d / f"clients-{t}.txt").write_text("\n".join(clients) + "\n")
            os.utime(d / f"clients-{t}.txt", (t0 + 10 * (t - 1), t0 + 10 * (t - 1)))
        model = out / "models" / f"{name}.pt"
        model.parent.mkdir(exist_ok=True)
        model.write_bytes(b"m")
        os.utime(model, (t0 + seconds, t0 + seconds))
    (out / "models" / "pretrained.pt").write_bytes(b"m")       # no cohorts: not an FL row
    (out / "data").mkdir(exist_ok=True)
    (out / "data" / "adapt.conf.tsv").write_text("utt_id\tclient\tx\n" + "".join(
        f"u{i}\t{'A' if i < 5 else 'B'}\tx\n" for i in range(8)))
    assert [r[:3] for r in fl.round_costs(str(out))] == [("dp-token-z0.5-d1", 3, 3), ("fl-token", 3, 6)]
    assert fl.main(_fl_args(out)) == 0
    text = (out / "results.md").read_text()
    rows = section_rows(text, "## Scale")
    assert rows == [["DP token weighted, z = 0.5, draw 1", "3", "3", "45", "15.0", "15.00"],
                    ["FL fine-tuned (token weighted)", "3", "6", "30", "10.0", "5.00"]]
    median = (15.0 + 5.0) / 2                            # s per client update
    assert f"median of {median:.2f} s per client update (range 5.00-15.00" in text
    # no runtime.tsv: the thread count is not known, and the text does not claim one core
    assert f"about {1000 * 100 * median / 3600:,.0f} h on this run's cores" in text
    assert "torch's default thread count" in text
    assert "4 utterances each on average (8 over 2 meetings)" in text
    # the cores as the invocations set them: one thread, one process; 2 workers of 1 thread
    for command, where, clause in (
            ("OMP_NUM_THREADS=1 bin/fl-finetune-experiment A B", "one core",
             "one fl-rounds process per row, 1 thread(s) per process (OMP_NUM_THREADS=1)"),
            ("WORKERS=2 OMP_NUM_THREADS=2 bin/fl-finetune-experiment A B", "2 cores",
             "in 2 worker processes (WORKERS=2), 1 thread(s) per process (OMP_NUM_THREADS=2)")):
        (out / "runtime.tsv").write_text(f"40\t{int(t0)}\t{command}\n")
        assert fl.main(_fl_args(out)) == 0
        text = (out / "results.md").read_text()
        assert f"h on {where} here" in text and clause in text, command


def test_fl_report_without_runtime_file_and_one_draw(tmp_path):
    out = _fl_out(tmp_path)
    (out / "runtime.tsv").unlink()
    for d in (2, 3):
        for p in (out / "runs" / f"dp-token-z0.5-d{d}").iterdir():
            p.unlink()
        (out / "runs" / f"dp-token-z0.5-d{d}").rmdir()
    t = time.time() - 3600
    os.utime(out / "runs" / "pretrained" / "hyp.txt.key", (t, t))
    args = _fl_args(out)
    args[args.index("--curve-rounds") + 1] = ""         # the points found in runs/ (t = 5 too)
    assert fl.main(args) == 0
    text = (out / "results.md").read_text()
    assert "Made by `ROUNDS=3 bin/fl-finetune-experiment --reduced D O`. Run time 40 s" in text
    assert "reused from the cache of an earlier invocation" in text
    assert section_rows(text, "## Table 5")[0][9] == "bootstrap [22.90, 24.90] (1 draw)"
    assert [r[0] for r in section_rows(text, "## Training curve")] == ["0", "1", "2", "3", "5"]


def test_fl_report_runtime_parts_lower_bound(tmp_path):
    out = _fl_out(tmp_path)
    t = time.time() - 7 * 3600                         # made before the first recorded part
    os.utime(out / "runs" / "pretrained" / "hyp.txt.key", (t, t))
    assert fl.main(_fl_args(out)) == 0
    assert "LOWER BOUND" in (out / "results.md").read_text()


def test_runtime_parts_of_one_command(tmp_path):
    (tmp_path / "runtime.tsv").write_text(f"300\t{int(time.time()) - 400}\tbin/x A B\n7\t{int(time.time())}\tbin/x A B\n")
    text = common.runtime_paragraph(str(tmp_path), 7, "**/*.key", "ignored")
    assert text == ("Made by `bin/x A B`, in 2 invocations, each reusing what the earlier ones had cached: 300 s + 7 s. "
                    "Run time 307 s = 5 min 7 s, the sum of the 2 parts (OUT/runtime.tsv).")

def test_interval_formatters():
    assert common.interval(22.184, 26.786) == "[22.18, 26.79]"
    assert common.with_interval(24.5249, 22.18, 26.79) == "24.52 [22.18, 26.79]"
    assert common.with_interval(0.7, 0.25, 1.05, 1, signed=True) == "+0.7 [+0.2, +1.1]"   # 0.25: half-even
    assert common.ci({"bootstrap": {"wer_low": 1, "wer_high": 2.5}}) == "[1.00, 2.50]" and common.ci({}) == ""
    assert common.diff_ci({"diff": -0.12, "diff_low": -0.305, "diff_high": 0.1}) == "-0.12 [-0.30, +0.10]"
    assert fmp.ci({"bootstrap": {"wer_low": 1, "wer_high": 2}}) == " [1.00, 2.00]" and fmp.ci({}) == ""


def _parts(ppl: float, sentences: int = 4) -> dict:
    """Per-sentence totals whose every sentence has perplexity PPL (so every resample has it)."""
    tok = [2.0 + k % 3 for k in range(sentences)]
    return {"ids": [f"u{k}" for k in range(sentences)], "lp": [-t * math.log(ppl) for t in tok], "tok": tok,
            "ent_lp": [-math.log(ppl)] * sentences, "ent_n": [1] * sentences}


def test_sanitized_compare_cell_by_hand():
    from asrpriv.reports import sanitized_lm

    rep = {"compare": {"wer_a": 20.0, "wer_b": 21.0, "p_value": 0.01234, "significant": True},
           "bootstrap": {"diff": -1.0, "diff_low": -1.6, "diff_high": -0.4}}
    assert (sanitized_lm.compare_cell(rep, "M1_original", "ppl -2.0 [-3.0, -1.0]")
            == "vs M1_original: WER -1.00 [-1.60, -0.40], p=0.012 *; ppl -2.0 [-3.0, -1.0]")
    rep = {"compare": {"wer_a": 20.0, "wer_b": 19.75, "p_value": 0.5, "significant": False}}
    assert sanitized_lm.compare_cell(rep, "B") == "vs B: WER +0.25, p=0.5"        # no bootstrap in the report
    assert sanitized_lm.compare_cell(None, "B") == "vs B: not tested"
    # perplexities 100 and 110 on every sentence: the paired difference is -10 in every resample
    assert sanitized_lm.ppl_diff(_parts(100), _parts(110), 50, 3) == "ppl -10.0 [-10.0, -10.0]"
    other = dict(_parts(110), ids=["x", "u1", "u2", "u3"])
    assert sanitized_lm.ppl_diff(_parts(100), other, 50, 3) == ""           # not the same sentences
    assert sanitized_lm.ppl_interval(_parts(100), 50, 3) == pytest.approx((100, 100, 100))
    assert sanitized_lm.ppl_interval(_parts(100), None, None) == pytest.approx((100, None, None))
    ent = dict(_parts(100), ent_lp=[-math.log(50), 0.0, -2 * math.log(50), 0.0], ent_n=[1, 0, 2, 0])
    assert sanitized_lm.ppl_interval(ent, 50, 3, entity=True) == pytest.approx((50, 50, 50))


def _system(wer: float, ppl: float, oov: float = 1.0) -> dict:
    return {"wer": wer, "wer_lo": wer - 1, "wer_hi": wer + 1, "ppl": ppl, "ppl_lo": ppl - 5, "ppl_hi": ppl + 5,
            "oov": oov, "parts": _parts(ppl)}


def test_sanitized_best_claims_by_hand():
    """Issue 29: a 'best' claim is a paired test against the next best; a perplexity claim lists
    every model below the reference instead of calling one 'the only' one."""
    from asrpriv.reports import sanitized_lm

    m = {"A": _system(21.5, 104.0), "B": _system(21.6, 97.8), "C": _system(23.9, 100.6, oov=0.91),
         "M1_original": _system(21.8, 104.1)}
    labels = {"A": "model a"}
    test = {"compare": {"wer_a": 21.5, "wer_b": 21.6, "p_value": 0.31, "significant": False, "alpha": 0.05},
            "bootstrap": {"diff": -0.1, "diff_low": -0.3, "diff_high": 0.1}}
    wer, ppl = sanitized_lm.best_sentence("A", "B", m, labels, test, 50, 1)
    assert wer == ("Lowest dev WER of the 4 models: `A` (model a), WER 21.50% [20.50, 22.50]; the next lowest: "
                   "`B` (B), WER 21.60% [20.60, 22.60]. `A` minus `B`: -0.10 [-0.30, +0.10] points (paired "
                   "bootstrap 95% interval), MAPSSWE p = 0.31, not significant at 0.05: no model is shown to be "
                   "the best by WER here.")
    # perplexity: B 97.8 lowest, C 100.6 next, every sentence at its model's perplexity: -2.8 exactly
    assert ppl == ("Lowest dev perplexity: `B` (B), perplexity 97.8 [92.8, 102.8] (OOV 1.00%); the next lowest: "
                   "`C` (C), perplexity 100.6 [95.6, 105.6] (OOV 0.91%); `B` minus `C`: -2.8 [-2.8, -2.8] (paired "
                   "bootstrap 95% interval over sentences: excludes 0). Their OOV rates differ (1.00% vs 0.91%): an "
                   "OOV is scored as each model's <unk>, so these perplexities are not strictly comparable.")
    test["compare"].update(significant=True, p_value=0.001)
    assert "MAPSSWE p = 0.001, significant at 0.05: `A` has the lowest dev WER" in \
        sanitized_lm.best_sentence("A", "B", m, labels, test, 50, 1)[0]
    test["compare"].update(wer_a=21.7)          # significant, but not lower: no best claim
    assert "no model is shown to be the best" in sanitized_lm.best_sentence("A", "B", m, labels, test, 50, 1)[0]
    assert "were not compared" in sanitized_lm.best_sentence("A", "B", m, labels, None, 50, 1)[0]
    assert sanitized_lm.below(m, "M1_original") == (
        "3 of the 4 models have a dev perplexity below `M1_original`'s 104.1 (OOV 1.00%), as point values: "
        "`B` 97.8 (OOV 1.00%), `C` 100.6 (OOV 0.91%), `A` 104.0 (OOV 1.00%).")
    assert sanitized_lm.below(m, "B") == "No model has a dev perplexity below `B`'s 97.8."


def test_sanitized_report_every_row_with_intervals_and_the_best_tested(tmp_path):
    """The report on made-up systems scored by the real score-wer (--bootstrap, --compare) as the
    recipe scores them: every table row has intervals, every comparison cell names its baseline,
    Table 5 is tested against the single model of lowest WER and the lowest WER against the next."""
    from _table_helpers import rows_without_interval
    from asrpriv.reports import sanitized_lm
    from conftest import run_cli

    refs = [line.split() for line in (AMI / "dev" / "ref.txt").read_text().splitlines() if line.strip()]
    out = tmp_path / "out"
    for d in ("split", "lm", "eval"):
        (out / d).mkdir(parents=True)
    ev = out / "eval"
    (out / "split" / "split.json").write_text(json.dumps({"words": 1000, "train": 800, "heldout": 50, "adapt12": 100}))
    (out / "settings.key").write_text("top=0\n")
    (out / "runtime.tsv").write_text(f"1234\t{int(time.time()) - 1240}\tBOOTSTRAP=50 bin/sanitized-lm-experiment D O\n")
    (out / "lm" / "T5_M1+M2.json").write_text(json.dumps({"weights": [0.6, 0.4]}))
    # M2_sanitized: every reference (the best model); the others drop words
    drops = {"M1_original": 1, "M1_sanitized": 2, "M2_original": 1, "M2_sanitized": 0, "T5_M1+M2": 1}
    for k, (name, drop) in enumerate(drops.items()):
        (out / "lm" / f"{name}.sys").write_text("x\ny\nz\n")
        cut = [min(drop * (i % 3), len(r) - 1) for i, r in enumerate(refs)]   # 0, 1 or 2 x drop words
        hyps = [r[:len(r) - c] for r, c in zip(refs, cut)]
        (ev / f"{name}.best.txt").write_text("\n".join(" ".join(h) for h in hyps) + "\n")
        (ev / f"{name}.ppl.json").write_text(json.dumps({"ppl": 100.0 + k, "oov_rate": 0.01}))
        (ev / f"{name}.perword.tsv").write_text("utt_id\tposition\tln_p\n" + "".join(
            f"{r[0]}\t{p}\t{-4.0 - 0.01 * k - 0.1 * (i % 4)}\n" for i, r in enumerate(refs) for p in range(1, len(r) + 1)))

    def score(name: str, base: str | None = None) -> None:
        args = ["score-wer", "-q", "--format", "json", "--ref", str(AMI / "dev" / "ref.txt"),
                "--hyp", str(ev / f"{name}.best.txt"), "--bootstrap", "50", "--seed", "17"]
        if base:
            args += ["--compare", str(ev / f"{base}.best.txt")]
        res = run_cli(args)
        assert res.exit_code == 0, res.stderr
        (ev / (f"{name}.vs.{base}.json" if base else f"{name}.wer.json")).write_text(res.stdout)

    for name in drops:
        score(name)
    for name, base in [("M1_sanitized", "M1_original"), ("M2_sanitized", "M2_original"), ("T5_M1+M2", "M2_original"),
                       ("T5_M1+M2", "M2_sanitized"), ("M2_sanitized", "M1_original")]:
        score(name, base)
    for kind, best in (("single", "M2_sanitized"), ("all", "M2_sanitized"), ("other", "M1_original")):
        (ev / f"best_{kind}.txt").write_text(best + "\n")
    args = [str(AMI), str(out), "0", "17", "0.1", "0.1", "1", "5", "--arch lstm", "0", "--train-only output", "12"]
    assert sanitized_lm.main(args) == 0
    text = (out / "results.md").read_text()
    assert not rows_without_interval(text), rows_without_interval(text)[:2]
    assert "Made by `BOOTSTRAP=50 bin/sanitized-lm-experiment D O`. Run time 1234 s" in text
    assert "95% percentile bootstrap, 50 resamples, seed 17" in text
    assert "of the 5 MAPSSWE tests in the tables, 4 have p < 0.05, where about 0.2 would" in text
    assert "with the lowest dev WER (`M2_sanitized`, 0.00%)" in text
    rows = {r[0]: r for r in section_rows(text, "## Table 5")}
    row = rows["M1 + M2, EM weights (`T5_M1+M2`)"]
    assert row[-3] == "(the reference)"
    # the mixture drops words: worse than the best single model, significantly; its interval excludes 0
    cell = row[-4]
    assert cell.startswith("vs M2_sanitized: WER +") and " *; ppl " in cell, cell
    low = float(cell.split("[")[1].split(",")[0])
    assert low > 0
    t2 = {r[0]: r for r in section_rows(text, "## Table 2")}
    assert t2["M1 word 3-gram, original (`M1_original`)"][6] == "(the baseline)"
    assert t2["M1 word 3-gram, sanitized (`M1_sanitized`)"][6].startswith("vs M1_original: WER +")
    # the best by WER: M2_sanitized (no errors) against the next lowest (M1_original), significant
    assert ("Lowest dev WER of the 5 models: `M2_sanitized` (M2 class 3-gram, sanitized), WER 0.00% [0.00, 0.00]; "
            "the next lowest: `M1_original`") in text
    assert "significant at 0.05: `M2_sanitized` has the lowest dev WER" in text
    assert "Lowest dev perplexity: `M1_original`" in text          # the per-word files' lowest (k = 0)
    assert "models have a dev perplexity below `M1_original`" not in text
    assert "No model has a dev perplexity below `M1_original`'s" in text


# ------------------------------------------------------------------ fmp report: client-level statistics
# three evaluation clients: A (6 reference words), B (8), C (5); errors per client of each system
FMP_REF = {"A_1": "a b c d", "A_2": "e f", "B_1": "g h i", "B_2": "j k l m n", "C_1": "o p q r s"}
FMP_HYPS = {   # system: hypotheses (errors per client A/B/C)
    "baseline": {"A_1": "a x c d", "A_2": "e y", "B_1": "g h z", "B_2": "j k l m n", "C_1": "o p q r t"},  # 2/1/1
    "firstpass": {"A_1": "x x c d", "A_2": "e y", "B_1": "g h z", "B_2": "j k l m n", "C_1": "o p q r t"},  # 3/1/1
    "fmp-T1": dict(FMP_REF),                                                                          # 0/0/0
    "fmp-T2": {"A_1": "a b c d", "A_2": "e y", "B_1": "g h z", "B_2": "j k l m x", "C_1": "o p q r t"},   # 1/2/1
}
FMP_P = {"firstpass": 0.04, "fmp-T1": 0.01, "fmp-T2": 0.03}   # their (made-up) MAPSSWE p vs the baseline


def _fmp_client_out(tmp_path: Path) -> Path:
    out = _fmp_out(tmp_path, old=False)
    (out / "data" / "eval").mkdir(parents=True)
    (out / "data" / "eval.ref").write_text("".join(f"{u} {t}\n" for u, t in FMP_REF.items()))
    (out / "data" / "eval" / "part-0.tsv").write_text(
        "utt_id\tclient\trank\tam_score\tlm_score\ttext\n"
        + "".join(f"{u}\t{u[0]}\t1\t-1.0\t-1.0\t{t}\n" for u, t in FMP_REF.items()))
    for name, hyps in FMP_HYPS.items():
        (out / "runs" / name / "hyp.txt").write_text("".join(f"{u} {t}\n" for u, t in hyps.items()))
        report = json.loads((out / "runs" / name / "wer.json").read_text())
        if name in FMP_P:
            report["compare"]["p_value"] = FMP_P[name]
        (out / "runs" / name / "wer.json").write_text(json.dumps(report))
    (out / "runtime.tsv").write_text("5\t1795848053\tNNLM_SHARE=0.5 bin/fmp-experiment D O\n")
    (out / "code.tsv").write_text("1795848053\t" + "e" * 40 + "\tclean\n")
    return out


def test_fmp_report_client_level_tables_by_hand(tmp_path):
    """Client-level intervals, the per-client table, the exact sign test and Holm's adjustment of
    the FMP report, against numbers worked by hand (issue 38 at the sampled unit, issue 41)."""
    out = _fmp_client_out(tmp_path)
    args = _fmp_args(out, str(AMI))
    args[args.index("--eval-clients") + 1] = "A B C"
    assert fmp.main(args) == 0
    text = (out / "results.md").read_text()
    head = "\n".join(text.splitlines()[:12])
    assert "**Not the full defaults**: mode full with `NNLM_SHARE=0.5`." in head
    assert "Code: commit eeeeeeeeeeee (clean tree)." in text
    t2 = {r[0]: r for r in section_rows(text, "## Table 2: rounds")}
    # the columns the table always had come first, unchanged in number; two are added
    assert len(t2["FMP T=1"]) == 7 and t2["FMP T=1"][4].startswith("31.44")
    # Holm over the table's 3 MAPSSWE tests (0.04, 0.01, 0.03): 3 x 0.01 = 0.03; 2 x 0.03 = 0.06;
    # max(0.06, 1 x 0.04) = 0.06
    assert "MAPSSWE p, Holm (family of 3)" in text
    assert t2["FMP T=1"][6] == "0.030 *" and t2["FMP T=2"][6] == "0.060" and t2["first-pass 1-best"][6] == "0.060"
    assert t2["NNLM baseline (unadapted)"][6] == ""
    # client-level intervals: a resample's WER is a word-weighted mean of the clients' WERs, so it
    # lies between the lowest (B: 1/8) and the highest (A: 2/6); T=1 removes every error, so each
    # resample's difference lies between the clients' changes (-100/8 and -200/6)
    cell = t2["NNLM baseline (unadapted)"][5]
    point, low, high = re.match(r"([\d.]+) \[([\d.]+), ([\d.]+)\]$", cell).groups()
    assert float(point) == pytest.approx(100 * 4 / 19, abs=0.006)
    assert 12.5 - 0.006 <= float(low) <= float(high) <= 100 * 2 / 6 + 0.006 and float(low) < float(point) < float(high)
    diff = re.search(r"diff ([-+][\d.]+) \[([-+][\d.]+), ([-+][\d.]+)\]", t2["FMP T=1"][5]).groups()
    assert float(diff[0]) == pytest.approx(-100 * 4 / 19, abs=0.006)
    assert -100 * 2 / 6 - 0.006 <= float(diff[1]) <= float(diff[2]) <= -12.5 + 0.006
    # rows without hypotheses in OUT: no client-level cell, and no per-client table for Table 3
    assert t2["FMP T=1"][5] != "–" and section_rows(text, "## Table 3")[0][5] == "–"
    assert "### Table 3 per client" not in text
    # per client: the change in WER points, counts, the exact sign test, Holm over the 3 sign tests
    pc = {r[0]: r for r in section_rows(text, "### Table 2 per client")}
    t1 = pc["FMP T=1"]
    assert t1[5:8] == [f"{-200 / 6:+.2f}", f"{-100 / 8:+.2f}", f"{-100 / 5:+.2f}"]
    assert t1[2] == "3 / 0 / 0 vs NNLM baseline"
    assert t1[3] == f"p = {2 * 0.5 ** 3:.3f} vs NNLM baseline"          # 2 P(X <= 0), X ~ Bin(3, 1/2)
    t2pc = pc["FMP T=2"]
    assert t2pc[5:8] == [f"{-100 / 6:+.2f}", f"{100 / 8:+.2f}", "+0.00"] and t2pc[2] == "1 / 1 / 1 vs NNLM baseline"
    assert t2pc[3] == "p = 1.000 vs NNLM baseline"                          # min(1, 2 P(X <= 1)), n = 2
    fp = pc["first-pass 1-best"]
    assert fp[2] == "0 / 1 / 2 vs NNLM baseline" and fp[3] == "p = 1.000 vs NNLM baseline"
    # Holm over (1.0, 0.25, 1.0): 3 x 0.25 = 0.75, then 1.0
    assert "sign test p, Holm (family of 3)" in text
    assert t1[4] == "0.750" and t2pc[4] == "1.000" and fp[4] == "1.000"
    assert t1[1] == t2["FMP T=1"][5].split("diff ")[1] + " vs NNLM baseline"
    # each client-level report is kept beside the run
    saved = json.loads((out / "runs" / "fmp-T1" / "wer-client.json").read_text())
    assert saved["bootstrap"]["unit"] == "client" and saved["bootstrap"]["units"] == 3
    assert saved["compare"]["units"]["improve"] == 3


def test_fmp_report_mode_without_recorded_command(tmp_path):
    out = _fmp_out(tmp_path, old=False)
    assert fmp.main(_fmp_args(out, str(AMI))) == 0
    text = (out / "results.md").read_text()
    assert "the command was not recorded" in text and "Not the full defaults" not in text
    assert "client-level: WER % [95% CI]" in text and "### Table 2 per client" not in text
    (out / "runtime.tsv").write_text("5\t1\tOMP_NUM_THREADS=1 bin/fmp-experiment D O\n")
    assert fmp.main(_fmp_args(out, str(AMI))) == 0
    assert "Mode: full (the recipe's full defaults, unchanged)." in (out / "results.md").read_text()
    assert fmp.main(["--reduced", "1"] + _fmp_args(out, str(AMI))) == 0
    assert "\nMode: reduced.\n" in (out / "results.md").read_text()


def test_fl_report_client_level_section_against_score_wer_and_holm(tmp_path):
    """The FL report's client-level section (issue 41: paper 001's rows at the unit that was
    sampled): each row scored with the evaluation meetings as the bootstrap unit, its sign test
    over meetings, and both families Holm-adjusted, checked against score-wer's own report and
    a hand computation of Holm's step-down."""
    from asrpriv.reports.fl import _client_section
    from asrpriv.stats.multiple import holm_adjust

    out = tmp_path / "out"
    (out / "data").mkdir(parents=True)
    ref, nbest = [], ["utt_id\tclient\trank\tam_score\tlm_score\ttext"]
    hyps = {"pretrained": [], "fl-token": [], "nonnlm": []}
    for m in range(4):
        for u in range(5):
            utt = f"M{m}_{u:02d}"
            words = ["alpha", "beta", "gamma", "delta"]
            ref.append(f"{utt} {' '.join(words)}")
            nbest.append(f"{utt}\tM{m}\t1\t-1\t-1\t{' '.join(words)}")
            hyps["pretrained"].append(f"{utt} {' '.join(words[:3] + ['x'] if u < 2 else words)}")
            hyps["fl-token"].append(f"{utt} {' '.join(words[:3] + ['x'] if u < 1 or m == 3 else words)}")
            hyps["nonnlm"].append(f"{utt} {' '.join(['y'] + words[1:3] + ['x'] if u < 3 else words)}")
    (out / "data" / "eval.ref").write_text("\n".join(ref) + "\n")
    (out / "data" / "eval.tsv").write_text("\n".join(nbest) + "\n")
    wer = {}
    for name, lines in hyps.items():
        d = out / "runs" / name
        d.mkdir(parents=True)
        (d / "hyp.txt").write_text("\n".join(lines) + "\n")
        cmd = ["score-wer", "-q", "--ref", str(out / "data" / "eval.ref"), "--hyp", str(d / "hyp.txt"),
               "--bootstrap", "100", "--seed", "1", "--format", "json"]
        if name != "pretrained":
            cmd += ["--compare", str(out / "runs" / "pretrained" / "hyp.txt")]
        result = run_cli(cmd)
        assert result.exit_code == 0, result.stderr
        wer[name] = json.loads(result.stdout)
    L = []
    _client_section(L, str(out), ["nonnlm", "fl-token"], wer)
    text = "\n".join(L)
    assert "evaluation meetings (4 of them)" in text and "2 MAPSSWE tests, 2 sign tests" in text
    rows = {r[0]: r for r in ([c.strip() for c in line.strip().strip("|").split("|")] for line in L
                              if line.startswith("| ") and "WER" not in line)}
    # nonnlm: every meeting worse (1 error more per utterance in 3 of 5); fl-token: 3 better, 1 worse
    nonnlm, fl_row = rows["No NNLM (first-pass 1-best)"], rows["FL fine-tuned (token weighted)"]
    assert nonnlm[2] == "0 / 4 / 0" and fl_row[2] == "3 / 1 / 0"
    client = json.loads((out / "runs" / "fl-token" / "wer-client.json").read_text())
    assert client["bootstrap"]["unit"] == "client" and client["compare"]["units"]["units"] == 4
    assert fl_row[1].startswith(f"{100 * client['wer']:.2f} [") or fl_row[1].startswith(f"{client['wer']:.2f} [")
    # Holm over the two rows' MAPSSWE p-values, by hand
    ps = [wer["nonnlm"]["compare"]["p_value"], wer["fl-token"]["compare"]["p_value"]]
    lo, hi = sorted(ps)
    hand = [min(1.0, 2 * lo), min(1.0, max(2 * lo, hi))]
    assert sorted(holm_adjust(ps)) == pytest.approx(hand)
    # the sign test over 4 meetings, 4 of 4 worse: two-sided 2 x 0.5^4 = 0.125
    assert nonnlm[3].startswith("0.125")


def test_fl_report_without_dp_rows_says_so(tmp_path):
    """DP_MODES empty (e.g. a single FL row at 1,000 rounds): Table 5 says there are no DP rows
    instead of an empty table."""
    out = _fl_out(tmp_path)
    args = _fl_args(out)
    args[args.index("--dp-modes") + 1] = ""
    assert fl.main(args) == 0
    text = (out / "results.md").read_text()
    section = text.split("## Table 5", 1)[1].split("\n## ", 1)[0]
    assert "No DP rows in this run" in section and "| Model | z |" not in section
