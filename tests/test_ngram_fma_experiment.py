"""bin/ngram-fma-experiment end to end on a tiny slice of the bundled AMI data (shell-level test)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _table_helpers import dp_rows_with_few_draws, is_dp_row, rows_without_interval, section_rows, table_rows
from asrpriv.reports.common import DATA_NAME
from conftest import AMI, ROOT


def test_ngram_fma_experiment_tiny_slice(tmp_path):
    data = tmp_path / "data"
    (data / "adapt").mkdir(parents=True)
    (data / "dev").mkdir()
    lines = (AMI / "train_text").read_text().splitlines()
    background = [ln for ln in lines if ln[:2] in ("EN", "IB", "IN")][:1500]
    indomain = [ln for ln in lines if ln[:2] not in ("EN", "IB", "IN")][:1500]
    (data / "train_text").write_text("\n".join(background + indomain) + "\n")
    for name in ("decoder_1best.txt", "ref.txt"):
        kept = (AMI / "adapt" / name).read_text().splitlines()[:300]
        (data / "adapt" / name).write_text("\n".join(kept) + "\n")
    for name in ("nbest.tsv", "ref.txt"):
        shutil.copy(AMI / "dev" / name, data / "dev" / name)
    out = tmp_path / "out"
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env.update(PER_CLIENT="6", BETAS="0.5", SOURCES="b c", VARIANTS="reversed", NOISE_SEED="3",
               LM_WEIGHTS="4:8:2", WORD_PENALTIES="-1:0:1")
    proc = subprocess.run(["bash", str(ROOT / "bin" / "ngram-fma-experiment"), "--reduced", str(data), str(out)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = (out / "results.md").read_text()
    assert results in proc.stdout
    # every row of both tables with its 95% interval; the DP row with its 3 draws
    assert not rows_without_interval(results), rows_without_interval(results)
    assert not dp_rows_with_few_draws(results, 3), dp_rows_with_few_draws(results, 3)
    rows = section_rows(results, "## Every system")
    # first pass, background, in-domain, mixture; FMA on b; on a (built for c's comparison); on c
    assert len(rows) == 7, rows
    assert [r[1] for r in rows[4:]] == ["references", "1-best", "1-best + DP (eps 1)"]
    assert all(r[2:4] == ["reversed", "0.5"] and "**chosen**" in r[6] for r in rows[4:])   # one beta: chosen
    assert rows[0][8].startswith("vs unadapted background 3-gram: ")
    dp = rows[6]
    assert "(mean of 3 draws: " in dp[7] and is_dp_row("| " + " | ".join(dp) + " |")
    assert dp[8].startswith("vs FMA on (a) 1-best without noise, same variant and beta (")
    assert re.search(r"; \d of 3 draws significant \(p ", dp[8])
    chosen = section_rows(results, "## Chosen on the tuning clients")
    assert [r[0] for r in chosen] == ["none (unadapted background 3-gram)", "references", "1-best",
                                      "1-best + DP (eps 1)"]
    # the command (with the knobs set) and the run time from OUT/runtime.tsv
    assert "NOISE_SEED=3" in results and "bin/ngram-fma-experiment --reduced " in results
    assert "(one invocation, measured by the recipe; OUT/runtime.tsv)" in results
    assert ("seeded (NOISE_SEED=3; draw k uses seed(NOISE_SEED, 0, k) = NOISE_SEED * 100000 + k * 1000, "
            "asrpriv.federated.seeds): repeatable and NOT private") in results
    # draw d's noise is add-noise --seed seed(3, 0, d) of the one rule (asrpriv.federated.seeds),
    # written out: 3 * 100000 + d * 1000 (the counts alike; each release has its own random id)
    def noised(seed: int) -> list[str]:
        again = tmp_path / f"again-{seed}.counts"
        subprocess.run([sys.executable, "-m", "asrpriv", "add-noise", "-q", "--epsilon", "1", "--vocab",
                        str(out / "lm" / "vocab.txt"), "--seed", str(seed),
                        str(out / "counts" / "c.bounded.counts"), "-o", str(again)],
                       check=True, capture_output=True, env=env)
        return without_release_id(again)

    def without_release_id(path: Path) -> list[str]:
        return [ln for ln in path.read_text().splitlines() if not ln.startswith("#privacy_history=")]

    draws = [without_release_id(out / "counts" / f"c-d{d}.counts") for d in (1, 2, 3)]
    assert [noised(3 * 100000 + d * 1000) for d in (1, 2, 3)] == draws
    assert noised(3) != draws[0] and len({tuple(x) for x in draws}) == 3
    # every system scored on the same evaluation utterances (6 per evaluation client), with intervals
    reports = {p.parent.name: json.loads(p.read_text()) for p in (out / "runs").glob("*/wer.json")}
    assert len(reports) == 9 and len({r["ref_words"] for r in reports.values()}) == 1
    assert reports["background"]["sentences"] == 36  # 6 evaluation clients x 6
    assert all(r["bootstrap"]["resamples"] == 1000 for r in reports.values())
    assert reports["fma-b-reversed-0.5"]["compare"]["test"] == "mapsswe"
    assert reports["fma-b-reversed-0.5"]["compare"]["system_b"].endswith("background/hyp.txt")
    # each DP draw against FMA on (a) without noise; the draws are independent (different noise)
    for d in (1, 2, 3):
        assert reports[f"fma-c-reversed-0.5-d{d}"]["compare"]["system_b"].endswith("fma-a-reversed-0.5/hyp.txt")
        assert json.loads((out / "runs" / f"fma-c-reversed-0.5-d{d}" / "tune-wer.json").read_text())["sentences"] == 12
    counts = [(out / "counts" / f"c-d{d}.counts").read_text() for d in (1, 2, 3)]
    assert len(set(counts)) == 3
    # the DP-adapted ARPA carries the privacy history of the noisy counts (seeded: marked)
    header = [ln for ln in (out / "lm" / "fma-c-reversed-0.5-d1.arpa").read_text().splitlines()[:20]
              if ln.startswith("#")]
    assert any(ln.startswith("#privacy_history=") for ln in header) and "#seeded=1" in header
    ppl = json.loads((out / "runs" / "mixture" / "ppl.json").read_text())
    assert 1 < ppl["ppl"] < 5000


@pytest.mark.slow
def test_reduced_form_states_its_uncertainty(tmp_path):
    """Issue 29's check on `bin/ngram-fma-experiment --reduced` with its own defaults (secure noise):
    every table row has a 95% interval, every DP row >= 3 noise draws, the data is named."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["PYTHON"] = sys.executable
    script = ROOT / "bin" / "ngram-fma-experiment"
    for knob in set(re.findall(r"^#\s+([A-Z][A-Z0-9_]*)=", script.read_text(), re.M)) - {"PYTHON"}:
        env.pop(knob, None)                                   # the recipe's defaults, not the caller's
    out = tmp_path / "out"
    proc = subprocess.run(["bash", str(script), "--reduced", str(AMI), str(out)],
                          capture_output=True, text=True, env=env, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = (out / "results.md").read_text()
    assert any(is_dp_row(r) for r in table_rows(results))
    assert DATA_NAME in results
    assert not rows_without_interval(results), rows_without_interval(results)[:3]
    assert not dp_rows_with_few_draws(results, 3), dp_rows_with_few_draws(results, 3)[:3]
