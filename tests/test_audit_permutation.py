"""Permutation tests and bootstrap intervals of the leakage audit (issue 29), against independent
computations: every permutation enumerated (exact p-values), 004's own formulas looped in Python
(asrpriv.audit.metrics, asrpriv.audit.rank_test) on permuted labels, planted structure, and the
uniformity of p under the null."""

from __future__ import annotations

import itertools
import json
import random

import numpy as np
import pytest

from asrpriv.audit import permutation as perm
from asrpriv.audit.gram import centred_gram
from asrpriv.audit.metrics import score_clusters
from asrpriv.audit.rank_test import rank_test
from conftest import run_proc


def _se(p: float, n: int) -> float:
    return max(np.sqrt(p * (1 - p) / n), 1.0 / n)


# --- cluster statistics ------------------------------------------------------------------------

def test_vectorized_statistics_equal_metrics_on_every_row():
    rng = np.random.default_rng(0)
    labels = [f"s{i % 7}" for i in range(30)]
    assignment = [int(c) for c in rng.integers(0, 9, 30)]
    perms = np.stack([rng.permutation(30) for _ in range(50)])
    got = perm.cluster_statistics(assignment, labels, [perms[:17], perms[17:]])   # two chunks
    for row, p in enumerate(perms):
        s = score_clusters(assignment, [labels[k] for k in p])
        assert got["purity"][row] == pytest.approx(s.purity, abs=1e-12)
        assert got["pure_clusters"][row] == s.pure_clusters
        assert got["entropy"][row] == pytest.approx(s.entropy, abs=1e-12)


def test_purity_p_exact_by_enumerating_every_permutation():
    assignment = [0, 0, 0, 1, 1, 1, 2, 2]
    labels = ["a", "a", "b", "b", "b", "c", "c", "c"]          # exact p: 0.164 and 0.293
    observed = score_clusters(assignment, labels)
    everything = list(itertools.permutations(range(8)))          # 40,320
    at_least = {"purity": 0, "pure": 0}
    for p in everything:
        s = score_clusters(assignment, [labels[k] for k in p])
        at_least["purity"] += s.purity >= observed.purity - 1e-12
        at_least["pure"] += s.pure_clusters >= observed.pure_clusters
    exact = {k: v / len(everything) for k, v in at_least.items()}
    assert 0.1 < exact["purity"] < 0.2 and 0.25 < exact["pure"] < 0.35   # a case worth testing
    # the vectorized statistics over the same 40,320 permutations count exactly the same
    stats = perm.cluster_statistics(assignment, labels, [np.asarray(everything)])
    assert int(np.sum(stats["correct"] >= round(observed.purity * 8))) == at_least["purity"]
    assert int(np.sum(stats["pure_clusters"] >= observed.pure_clusters)) == at_least["pure"]
    # the Monte Carlo test estimates the exact p
    n = 20000
    test = perm.cluster_test(assignment, labels, n, np.random.default_rng(1))
    for name, key in (("purity", "purity"), ("pure_clusters", "pure")):
        assert abs(test[name].p - exact[key]) < 4 * _se(exact[key], n), (name, test[name].p, exact[key])
    assert test["purity"].observed == observed.purity
    assert test["pure_clusters"].observed == observed.pure_clusters


def test_perfectly_pure_clusters_get_the_smallest_p():
    labels = [f"spk{i // 4}" for i in range(64)]
    assignment = [i // 4 for i in range(64)]
    tests = perm.cluster_tests(assignment, {"speaker": labels}, ["speaker"], 999, seed=3)
    t = tests["labels"]["speaker"]
    for name in ("purity", "pure_clusters", "entropy"):
        assert t[name]["p"] == 1 / 1000 and t[name]["extreme"] == 0, name
    assert t["purity"]["observed"] == 1.0 and t["pure_clusters"]["observed"] == 16
    lo, hi = t["purity"]["null_95"]
    assert lo <= t["purity"]["null_mean"] <= hi < 0.5      # chance purity of 16 clusters of 4: ~0.36
    assert tests["permutations"] == 999 and tests["seed"] == 3


def test_purity_p_is_uniform_under_the_null():
    rng = np.random.default_rng(5)
    ps = []
    for _ in range(300):
        labels = [f"s{k}" for k in rng.integers(0, 6, 40)]
        assignment = [int(c) for c in rng.integers(0, 8, 40)]
        ps.append(perm.cluster_test(assignment, labels, 99, rng)["purity"].p)
    ps = np.asarray(ps)
    # a valid p-value: P(p <= a) <= a (purity's null is discrete, so <= rather than =)
    for a in (0.05, 0.1, 0.5):
        assert np.mean(ps <= a) <= a + 3 * np.sqrt(a * (1 - a) / len(ps)), a
    assert 0.4 < ps.mean() < 0.65 and np.mean(ps <= 0.5) > 0.35


def test_seeded_and_independent_of_the_order_of_calls():
    labels = {"speaker": [f"s{i // 4}" for i in range(40)], "gender": ["F", "M"] * 20}
    assignment = [i // 5 for i in range(40)]
    one = perm.cluster_tests(assignment, labels, ["speaker", "gender"], 99, seed=7)
    two = perm.cluster_tests(assignment, labels, ["speaker", "gender"], 99, seed=7)
    assert one == two
    assert perm.cluster_tests(assignment, labels, ["speaker", "gender"], 99, seed=8) != one


# --- the rank test ------------------------------------------------------------------------------

def _tiny_distances(seed: int):
    x = np.random.default_rng(seed).normal(size=(6, 2))
    return centred_gram([x], 6).distances()


def test_rank_null_exact_by_enumerating_labellings_and_pairs():
    """3 classes of 2 among 6 items, distractors >= the 4 others: a class's rank is fixed by its
    labelling and which of its two items is the query; enumerate both (90 x 8) by hand."""
    d = _tiny_distances(0)
    labels = ["a", "a", "b", "b", "c", "c"]
    values = []
    for positions in itertools.permutations(range(6)):
        # one labelling per set partition with labelled classes: keep each pair sorted
        if not all(positions[2 * c] < positions[2 * c + 1] for c in range(3)):
            continue
        pairs = [(positions[2 * c], positions[2 * c + 1]) for c in range(3)]
        for flips in itertools.product((0, 1), repeat=3):
            ranks = []
            for (u, v), flip in zip(pairs, flips):
                i, j = (v, u) if flip else (u, v)
                others = [k for k in range(6) if k not in (u, v)]
                closer = sum(d[i, k] < d[i, j] for k in others)
                ties = sum(d[i, k] == d[i, j] for k in others)
                ranks.append(1 + closer + 0.5 * ties)
            values.append(np.mean(ranks))
    values = np.asarray(values)
    assert len(values) == 90 * 8
    n = 20000
    null = perm.rank_null(d, labels, n, np.random.default_rng(2), distractors=10, repeats=1)
    for q in np.unique(values):
        exact = np.mean(values <= q + 1e-12)
        assert abs(np.mean(null <= q + 1e-12) - exact) < 4 * _se(exact, n), q
    # the observed statistic of rank_test itself is one draw of the same distribution
    observed = rank_test(d, labels, random.Random(0), distractors=10, repeats=1).mean_rank
    assert np.any(np.isclose(values, observed))


def test_rank_null_matches_rank_test_on_permuted_labels():
    """With fewer distractors than other items (hypergeometric draws) and several repeats: the
    vectorized null against 004's test looped in Python on permuted labels."""
    x = np.random.default_rng(3).normal(size=(40, 5))
    d = centred_gram([x], 40).distances()
    labels = [f"s{i // 4}" for i in range(40)]
    rng = random.Random(4)
    looped = []
    for _ in range(1500):
        shuffled = labels[:]
        rng.shuffle(shuffled)
        looped.append(rank_test(d, shuffled, rng, distractors=7, repeats=3).mean_rank)
    fast = perm.rank_null(d, labels, 1500, np.random.default_rng(5), distractors=7, repeats=3)
    from scipy.stats import ks_2samp

    assert ks_2samp(looped, fast).pvalue > 0.001
    assert abs(np.mean(looped) - np.mean(fast)) < 0.1 and abs(np.mean(fast) - 4.5) < 0.1  # chance (7+2)/2


def test_rank_p_on_planted_and_on_structureless_items():
    rng = np.random.default_rng(6)
    labels = [f"s{i // 2}" for i in range(120)]
    centres = np.repeat(rng.normal(size=(60, 50)), 2, axis=0)
    d = centred_gram([centres + 0.01 * rng.normal(size=(120, 50))], 120).distances()
    result = rank_test(d, labels, random.Random(0))
    extra = perm.rank_tests(d, labels, result.mean_rank, result.per_class, 999, seed=1)
    assert result.mean_rank == 1.0 and extra["permutation"]["p"] == 1 / 1000
    assert abs(extra["permutation"]["null_mean"] - 25.5) < 0.5
    assert extra["bootstrap_ci95"] == [1.0, 1.0] and extra["bootstrap_resamples"] == 999
    ps = []
    for seed in range(60):
        x = np.random.default_rng(100 + seed).normal(size=(40, 8))
        d = centred_gram([x], 40).distances()
        lab = [f"s{i // 4}" for i in range(40)]
        r = rank_test(d, lab, random.Random(seed), distractors=9, repeats=5)
        ps.append(perm.rank_tests(d, lab, r.mean_rank, r.per_class, 199, seed, 9, 5)["permutation"]["p"])
    ps = np.asarray(ps)
    assert np.mean(ps <= 0.1) <= 0.1 + 3 * np.sqrt(0.09 / len(ps)) and 0.3 < ps.mean() < 0.7


def test_bootstrap_interval_of_a_mean():
    values = np.random.default_rng(8).normal(10.0, 2.0, 400)
    lo, hi = perm.bootstrap_interval(values, 2000, np.random.default_rng(9))
    half = 1.96 * values.std(ddof=1) / np.sqrt(len(values))
    assert lo < values.mean() < hi
    assert abs((hi - lo) / 2 - half) < 0.15 * half
    assert perm.bootstrap_interval([3.0] * 5, 100, np.random.default_rng(0)) == (3.0, 3.0)


# --- in the step --------------------------------------------------------------------------------

def test_step_adds_the_tests_and_changes_nothing_else(tmp_path):
    rng = np.random.default_rng(10)
    rows = ["item\tspeaker\tgender"]
    files = []
    centres = rng.normal(size=(8, 20))
    for i in range(32):
        path = tmp_path / f"it{i}.npy"
        np.save(path, (centres[i // 4] + 0.3 * rng.normal(size=20)).astype(np.float32))
        files.append(str(path))
        rows.append(f"it{i}\tspk{i // 4}\t{'FM'[(i // 4) % 2]}")
    (tmp_path / "labels.tsv").write_text("\n".join(rows) + "\n")
    common = ["cluster-weights", "--labels", str(tmp_path / "labels.tsv"), "--method", "constrained",
              "--size", "4", "--rank-label", "speaker", "--rank-distractors", "9", "--seed", "1"]
    reports = {}
    for n in ("0", "199"):
        run_proc([*common, "--permutations", n, "--out", str(tmp_path / n), *files], check=True)
        reports[n] = json.loads((tmp_path / n / "report.json").read_text())
    off, on = reports["0"], reports["199"]
    assert "permutation" not in off and "permutation" not in off["rank"]
    # every key and value of the report without tests is unchanged with them
    for key, value in off.items():
        if key == "rank":
            assert {k: on["rank"][k] for k in value} == value
        else:
            assert on[key] == value, key
    t = on["permutation"]
    assert t["permutations"] == 199 and t["seed"] == 1 and set(t["labels"]) == {"speaker", "gender"}
    assert t["labels"]["speaker"]["purity"]["observed"] == off["labels"]["speaker"]["purity"]
    assert t["labels"]["speaker"]["purity"]["p"] == 1 / 200          # planted speakers
    r = on["rank"]
    assert r["permutation"]["p"] == 1 / 200 and r["permutation"]["permutations"] == 199
    assert r["bootstrap_ci95"][0] <= r["mean_rank"] <= r["bootstrap_ci95"][1]
    md = (tmp_path / "199" / "report.md").read_text()
    assert "(p 0.005" in md and "199 permutations" in md and "Bootstrap 95% interval" in md
    # an audit made without tests gets the same cluster tests and rank interval afterwards,
    # from its saved assignment and the labels (what the leakage report does for old audits)
    from asrpriv.audit.permutation import add_saved_tests

    late = add_saved_tests(json.loads(json.dumps(off)), str(tmp_path / "0" / "assignments.tsv"),
                           str(tmp_path / "labels.tsv"), count=199)
    assert late["permutation"].pop("post_hoc") is True
    assert late["permutation"] == on["permutation"]
    assert late["rank"]["bootstrap_ci95"] == on["rank"]["bootstrap_ci95"]
    assert "permutation" not in late["rank"]          # needs the distances: not made afterwards
