"""bin/leakage-audit (paper 004's audit, issue 18) end to end on a tiny slice of AMI and in its
reduced mode, and its report (asrpriv.reports.leakage) on a small synthetic layout: every table
row carries its permutation p-values and intervals (issue 29), the exact command and the run time."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import AMI, ROOT

NAME = "AMI text synthesized by flite, decoded by pocketsphinx 5.1.1 (synthetic speech)"
P_VALUE = re.compile(r"\(p [0-9][0-9.e-]*, Holm [0-9][0-9.e-]*[;)]")
RANK_CELL = re.compile(r"[0-9.]+ \[[0-9.]+, [0-9.]+\], p [0-9][0-9.e-]*, Holm [0-9][0-9.e-]* \(chance [0-9.]+\)")


def table_rows(text: str) -> list[tuple[str, str]]:
    """(header, row) of every data row of every Markdown table in TEXT."""
    lines = text.splitlines()
    rows = []
    for n, line in enumerate(lines):
        if line.startswith("|---"):
            header = lines[n - 1]
            for row in lines[n + 1:]:
                if not row.startswith("|"):
                    break
                rows.append((header, row))
    return rows


def assert_every_row_tested(text: str, tables: int = 4) -> None:
    """Every results table's row carries a p-value; the rank columns a bootstrap interval and a
    p-value. The Scale section's table (what the items cost: no estimate to test) is left out."""
    rows = table_rows(text.split("## Scale")[0])
    assert len({h for h, _ in rows}) == tables, {h for h, _ in rows}
    for header, row in rows:
        assert P_VALUE.search(row), row
        assert "(no test)" not in row, row
        if "mean speaker rank" in header:
            assert RANK_CELL.search(row), row
    assert "permutation test with N = " in text and "bootstrap 95% interval over speakers" in text
    assert "*gender* over the speaker units" in text and "*main meeting* by whole speakers" in text
    assert "Holm (1979) adjustment over the family of all m = " in text


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = f"{ROOT / 'src'}{os.pathsep}{env.get('PYTHONPATH', '')}"
    env["PYTHON"] = sys.executable
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _run(mode: str, out: Path, env: dict, timeout: int) -> subprocess.CompletedProcess:
    proc = subprocess.run(["bash", str(ROOT / "bin" / "leakage-audit"), mode, str(AMI), str(out)],
                          capture_output=True, text=True, env=env, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.mark.slow  # ~2-4 minutes on the shared 2 cores: about 15 processes that import torch and sklearn
def test_leakage_audit_tiny_slice(tmp_path):
    out = tmp_path / "out"
    proc = _run("--tiny", out, _env(), 600)
    results = (out / "results.md").read_text()
    assert results in proc.stdout
    assert_every_row_tested(results)
    for needle in ("Tables 4.8 / 4.9", "Method 2 (constrained)", "Table 4.12", "gender grouping", "leakage against DP noise",
                   "epsilon = 1", "z = 1"):
        assert needle in results, needle
    assert (out / "leakage_vs_noise.png").stat().st_size > 1000
    # items: 4 subsets of each of 6 speakers, 3 women and 3 men; gender = the id's first letter
    labels = [line.split("\t") for line in (out / "data" / "labels.tsv").read_text().splitlines()[1:]]
    assert len(labels) == 24 and sorted(l[2] for l in labels).count("F") == 12
    assert all(item.startswith(spk + "_") and spk[0] == g for item, spk, g, _ in labels)
    # one delta per item, audited per layer; the constrained clusters have size 4 (004 Method 2)
    assert len(list((out / "deltas-e1").glob("*.delta.pt"))) == 24
    rep = json.loads((out / "audit" / "e1-emb" / "constrained" / "report.json").read_text())
    assert rep["items"] == 24 and sum(int(k) * v for k, v in rep["sizes"].items()) == 24
    assert rep["layer"] == "embedding.*" and "rank" in rep and "gender" in rep["probe"]
    random_rep = json.loads((out / "audit" / "e1-emb" / "random" / "report.json").read_text())
    assert random_rep["labels"]["speaker"]["purity"] <= 1.0
    # the noised deltas carry their Gaussian release
    noisy = json.loads((out / "audit" / "dp-z1" / "constrained" / "report.json").read_text())
    assert noisy["items"] == 24


@pytest.mark.slow  # two --tiny runs: ~1.5-3 minutes on the shared 2 cores
def test_leakage_audit_jobs_change_nothing_but_time(tmp_path):
    """JOBS=2 (the methods of a clean audit, and the noise sets, two at a time) gives the audit
    reports, noisy counts and results of JOBS=1 on a seeded --tiny run; only the random release
    ids of the privacy histories differ (they are drawn afresh for every release)."""
    import re

    runs = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"jobs{jobs}"
        _run("--tiny", out, dict(_env(), JOBS=jobs, NOISE_SEED="5"), 600)
        runs[jobs] = out
    ids = re.compile(r'(\\?"id\\?":\\?")[0-9a-f]{32}')
    files = sorted(p.relative_to(runs["1"]) for p in runs["1"].rglob("*")
                   if p.is_file() and (p.name == "report.json" or p.suffix == ".counts"))
    assert len(files) > 40
    for rel in files:
        one, two = ((runs[j] / rel).read_text() for j in ("1", "2"))
        assert ids.sub("X", one) == ids.sub("X", two), rel
    # every table up to the Scale section (which times the run)
    strip = re.compile(r"^.*(seconds|Run time|started|invocation).*$", re.M)
    one, two = (strip.sub("", (runs[j] / "results.md").read_text()).split("## Scale")[0] for j in ("1", "2"))
    assert "leakage against DP noise" in one and one == two


@pytest.mark.slow  # ~10 minutes on 2 idle cores (23 under nice on 2 busy ones): ~50 processes that import torch
def test_leakage_audit_reduced_every_row_has_its_test(tmp_path):
    out = tmp_path / "out"
    env = _env()
    env["PERMUTATIONS"] = "199"
    env.pop("SEED", None)
    _run("--reduced", out, env, 1800)
    results = (out / "results.md").read_text()
    assert NAME in results and "uses the AMI transcripts (text)" in results
    assert_every_row_tested(results)
    assert "N = 199 permutations" in results and "smallest possible is 1 / (N + 1) = 0.005" in results
    # the exact command: the knobs that differ from --reduced's defaults, and the run time
    command = f"PYTHON={sys.executable} PERMUTATIONS=199 bin/leakage-audit --reduced {AMI} {out}"
    assert f"Made by `{command}`" in results and "Run time " in results
    assert "permutations=199" in (out / "audit" / "e1-emb.key").read_text()
    rep = json.loads((out / "audit" / "dp-z1" / "constrained" / "report.json").read_text())
    assert rep["permutation"]["permutations"] == 199 and rep["rank"]["permutation"]["permutations"] == 199
    # a second invocation reuses everything and is listed as a second part, the times summed
    proc = _run("--reduced", out, env, 600)
    assert "cluster-weights:" not in proc.stderr
    results = (out / "results.md").read_text()
    parts = (out / "runtime.tsv").read_text().splitlines()
    assert len(parts) == 2 and all(p.split("\t")[2] == command for p in parts)
    total = sum(int(p.split("\t")[0]) for p in parts)
    assert f"Made by `{command}`, in 2 invocations" in results
    assert f"Run time {total} s = " in results and "the sum of the 2 parts" in results
    assert_every_row_tested(results)


def test_leakage_report_on_a_synthetic_layout(tmp_path):
    """The report on real cluster-weights reports of planted items, in the recipe's layout, made
    in two recorded parts after an unrecorded one: every row tested, the parts listed and summed."""
    from asrpriv.audit.run import AuditRequest, run_audit
    from asrpriv.reports import leakage

    rng = np.random.default_rng(0)
    items = tmp_path / "items"
    items.mkdir()
    rows = ["item\tspeaker\tgender\tmeeting"]
    files = []
    centres = rng.normal(size=(8, 12))
    for i in range(32):
        spk = f"{'FM'[(i // 4) % 2]}spk{i // 4}"
        np.save(items / f"{spk}_{i % 4}.npy", (centres[i // 4] + 0.5 * rng.normal(size=12)).astype(np.float32))
        files.append(str(items / f"{spk}_{i % 4}.npy"))
        rows.append(f"{spk}_{i % 4}\t{spk}\t{spk[0]}\tm{i // 16}{'ab'[(i % 4) // 2]}")   # AMI-like meetings
    (items / "labels.tsv").write_text("\n".join(rows) + "\n")
    request = lambda **kw: AuditRequest(inputs=files, labels_path=str(items / "labels.tsv"), seed=1,  # noqa: E731
                                        permutations=99, **kw)
    made = {
        "constrained": run_audit(request(method="constrained", size=4, rank_label="speaker", rank_distractors=9,
                                         probe_labels=["gender"], unit="speaker"))["report"],
        "divisive": run_audit(request(method="divisive", size=4, unit="speaker"))["report"],
        # an audit as older code made it (every column permuted over the items): the report redoes
        # its cluster tests at the speaker from the saved assignment
        "random": run_audit(request(method="random", size=4))["report"],
        "kmeans2": run_audit(request(method="kmeans", clusters=2, unit="speaker"))["report"],
        "ward2": run_audit(request(method="ward", clusters=2, unit="speaker"))["report"],
    }
    assert made["random"]["permutation"]["unit"] is None
    out = tmp_path / "out"
    (out / "data").mkdir(parents=True)
    (out / "data" / "labels.tsv").write_text((items / "labels.tsv").read_text())
    assignment = run_audit(request(method="random", size=4))["assignment"]
    for name in ("e1-emb", "e1-all"):
        (out / "audit" / name / "random").mkdir(parents=True)
        (out / "audit" / name / "random" / "assignments.tsv").write_text(
            "item\tcluster\n" + "".join(f"{Path(f).stem}\t{c}\n" for f, c in zip(files, assignment)))
    names = ["e1-emb", "e1-all", "dp-z0", "dp-z1", "dp-z1-d2", "counts-clean", "counts-eps1", "counts-eps1-d2"]
    for name in names:
        for method, report in made.items():
            if method != "constrained" and not name.startswith("e1-"):
                continue
            (out / "audit" / name / method).mkdir(parents=True, exist_ok=True)
            (out / "audit" / name / method / "report.json").write_text(json.dumps(report))
        (out / "audit" / f"{name}.key").write_text("audit ...\n")
    old = time.time() - 7200                  # made by an invocation that recorded no run time
    (out / "deltas-e1.key").write_text("deltas ...\n")
    os.utime(out / "deltas-e1.key", (old, old))
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 600))
    (out / "runtime.tsv").write_text("seconds\tstarted\tcommand\n"
                                     f"3700\t{started}\tPERMUTATIONS=99 bin/leakage-audit --reduced D O\n"
                                     f"65\t{started}\tPERMUTATIONS=99 bin/leakage-audit --reduced D O\n")
    args = ["--data", str(AMI), "--mode", "reduced", "--epochs", "1", "--layers", "emb=embedding.* all=*",
            "--z", "1", "--clip", "0.5", "--audit-epoch", "1", "--epsilons", "1", "--max-l1", "15",
            "--nnlm-args", "--arch lstm", "--seconds", "65", "--command", "X", "--draws", "2", str(out)]
    assert leakage.main(args) == 0
    text = (out / "results.md").read_text()
    assert NAME in text and "uses the AMI transcripts (text)" in text
    assert_every_row_tested(text)
    assert "N = 99 permutations (seed 1)" in text and "1 / (N + 1) = 0.01" in text
    assert "*speaker* over the items" in text and "got their cluster tests afterwards" in text
    assert "cluster bootstrap over speaker (8 units, 1000 resamples)" in text
    assert "(0.50 here (speakers: 4 F, 4 M);" in text
    # the DP table: no clip, clip only, z = 1 (2 draws), counts clean, epsilon = 1 (2 draws)
    dp = [row for header, row in table_rows(text) if header.startswith("| Shared artefact")]
    assert len(dp) == 7 and all(RANK_CELL.search(row) for row in dp)
    assert [row.split(" | ")[1:3] for row in dp] == [
        ["none", "∞ (no noise)"], ["clip only", "∞ (clipping alone)"],
        ["z = 1, draw 1", "4.377 at δ = 1e-05 (per item)"], ["z = 1, draw 2", "4.377 at δ = 1e-05 (per item)"],
        ["none", "∞ (no noise)"], ["epsilon = 1, draw 1", "1 per utterance (pure)"],
        ["epsilon = 1, draw 2", "1 per utterance (pure)"]]
    # Holm over the family: every test the file shows, once (computed here from the reports)
    shown = {"e1-emb": {"random": [("speaker", "pure_clusters"), ("speaker", "purity"), ("meeting", "pure_clusters"),
                                   ("meeting", "purity")]}}
    shown["e1-emb"]["divisive"] = shown["e1-emb"]["random"]
    shown["e1-emb"]["constrained"] = shown["e1-emb"]["random"] + [("rank",)]
    for name in ("e1-emb", "e1-all"):
        shown.setdefault(name, {})
        shown[name]["kmeans2"] = shown[name]["ward2"] = [("gender", "purity")]
    shown["e1-all"]["constrained"] = [("speaker", "pure_clusters"), ("speaker", "purity"), ("rank",)]
    for name in names[2:]:
        shown[name] = {"constrained": [("speaker", "pure_clusters"), ("speaker", "purity"), ("rank",)]}
    family = {}
    for name, methods in shown.items():
        for method, keys in methods.items():
            r = leakage.load(str(out), name, method)
            for key in keys:
                family[(name, method, *key)] = (r["rank"]["permutation"]["p"] if key == ("rank",)
                                                else r["permutation"]["labels"][key[0]][key[1]]["p"])
    assert len(family) == 38 and "over the family of all m = 38 p-values" in text
    order = sorted(family, key=family.get)
    holm, running = {}, 0.0
    for i, key in enumerate(order):           # Holm (1979) step-down, by hand
        running = max(running, min(1.0, (len(order) - i) * family[key]))
        holm[key] = running
    z1 = dp[2]
    purity = family[("dp-z1", "constrained", "speaker", "purity")]
    assert f"(p {purity:.3g}, Holm {holm[('dp-z1', 'constrained', 'speaker', 'purity')]:.3g};" in z1
    assert f", Holm {holm[('dp-z1', 'constrained', 'rank')]:.3g} (chance" in z1
    smallest = order[0]
    assert holm[smallest] == pytest.approx(min(1.0, 38 * family[smallest]))
    # the parts, their sum, and the artefact older than both
    assert "Made by `PERMUTATIONS=99 bin/leakage-audit --reduced D O`, in 2 invocations" in text
    assert "3700 s + 65 s. Run time 3765 s = 1 h 2 min 45 s, the sum of the 2 parts" in text
    assert "some artefacts predate the first recorded invocation" in text and "LOWER BOUND" in text
    assert (out / "leakage_vs_noise.png").stat().st_size > 1000
    # one recorded invocation: 'Made by' that command; none: the command passed, this invocation's time
    (out / "runtime.tsv").write_text(f"seconds\tstarted\tcommand\n65\t{started}\tbin/leakage-audit D O\n")
    assert leakage.main(args) == 0
    text = (out / "results.md").read_text()
    assert "Made by `bin/leakage-audit D O`. Run time 65 s = 1 min 5 s (one invocation" in text
    (out / "runtime.tsv").unlink()
    assert leakage.main(args) == 0
    assert "Mode reduced. Made by `X`. Run time 65 s" in (out / "results.md").read_text()


def test_gaussian_row_epsilon_against_the_analytic_gaussian_mechanism():
    """One Gaussian release of noise multiplier z: the exact (epsilon, delta) curve is Balle &
    Wang's (2018, Thm. 8) delta(eps) = Phi(1/(2z) - eps z) - e^eps Phi(-1/(2z) - eps z); the
    report's PLD epsilon is pessimistic by at most its discretization (0.01)."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    from asrpriv.reports.leakage import gaussian_release_epsilon, noise_epsilon

    def exact(z: float, delta: float) -> float:
        curve = lambda eps: (norm.cdf(1 / (2 * z) - eps * z)  # noqa: E731
                             - np.exp(eps) * norm.cdf(-1 / (2 * z) - eps * z) - delta)
        return brentq(curve, 0.0, 100.0)

    for z in (0.5, 1.0, 2.0):
        got, want = gaussian_release_epsilon(z, 1e-5), exact(z, 1e-5)
        assert want - 1e-9 <= got <= want + 0.02, (z, got, want)
    assert abs(gaussian_release_epsilon(1.0, 1e-5) - 4.3772) < 0.01
    assert noise_epsilon("gaussian", "2", 1e-6).endswith("at δ = 1e-06 (per item)")
    assert noise_epsilon("laplace", "0.1", 1e-5) == "0.1 per utterance (pure)"
