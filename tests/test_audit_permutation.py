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


# --- at the sampled unit (issue 38) ---------------------------------------------------------------

def test_scheme_of_each_kind_of_column():
    speaker = ["a", "a", "b", "b", "c", "c"]
    assert perm.scheme_of(speaker, None) == "items"
    assert perm.scheme_of(speaker, speaker) == "items"                       # the unit itself
    assert perm.scheme_of(["x", "x", "y", "y", "z", "z"], speaker) == "items"  # renames the unit
    assert perm.scheme_of(["F", "F", "M", "M", "F", "F"], speaker) == "units"  # gender
    assert perm.scheme_of(["m1", "m2", "m1", "m1", "m3", "m3"], speaker) == "blocks"  # meeting


def test_block_permutations_move_whole_units_uniformly():
    # units: a (2 items), b (3), c (2), d (2): b has no partner of its size and stays put
    units = ["a", "b", "a", "c", "b", "c", "d", "b", "d"]
    rows = next(perm.block_permutations(units, 6000, np.random.default_rng(0), 6000))
    members = {u: [i for i, v in enumerate(units) if v == u] for u in "abcd"}
    seen = {}
    for row in rows:
        assert sorted(row) == list(range(9))                       # a permutation of the items
        assert [row[i] for i in members["b"]] == members["b"]
        image = []
        for u in "acd":
            source = [row[i] for i in members[u]]
            owner = units[source[0]]
            assert source == members[owner], (u, source)          # a whole unit, in item order
            image.append(owner)
        seen[tuple(image)] = seen.get(tuple(image), 0) + 1
    assert len(seen) == 6                                          # 3! orders of a, c, d
    for count in seen.values():
        assert abs(count / 6000 - 1 / 6) < 4 * np.sqrt((1 / 6) * (5 / 6) / 6000)


def test_unit_permutation_p_exact_by_enumerating_the_units():
    """Gender constant per speaker, 6 speakers of unequal sizes: the p-value of purity under
    the units scheme is the share of the 6! speaker relabellings at least as pure (counted by
    hand with 004's formula), and every relabelling keeps a speaker's items together."""
    units = ["s1"] * 2 + ["s2"] * 3 + ["s3"] * 2 + ["s4"] * 4 + ["s5"] * 1 + ["s6"] * 3
    gender_of = {"s1": "F", "s2": "F", "s3": "M", "s4": "M", "s5": "F", "s6": "M"}
    labels = [gender_of[u] for u in units]
    assignment = [0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 2, 2, 2]
    observed = score_clusters(assignment, labels).purity
    speakers = sorted(gender_of)
    values = [gender_of[s] for s in speakers]
    hits = 0
    orders = list(itertools.permutations(range(6)))
    for order in orders:
        relabel = {s: values[o] for s, o in zip(speakers, order)}
        hits += score_clusters(assignment, [relabel[u] for u in units]).purity >= observed - 1e-12
    exact = hits / len(orders)
    assert 0.05 < exact < 0.9
    rows = np.concatenate(list(perm.relabellings(labels, units, 20000, np.random.default_rng(3), 5000)))
    for row in rows[:200]:
        for s in speakers:
            assert len({row[i] for i, u in enumerate(units) if u == s}) == 1
    test = perm.cluster_test(assignment, labels, 20000, np.random.default_rng(4), units)
    assert abs(test["purity"].p - exact) < 4 * _se(exact, 20000), (test["purity"].p, exact)


def _speaker_items(rng, speakers: int, per: int, dim: int, spread: float):
    """Items of speakers that each share a signal (a random centre), nothing else."""
    centres = rng.normal(size=(speakers, dim))
    x = np.repeat(centres, per, axis=0) + spread * rng.normal(size=(speakers * per, dim))
    return x, [f"s{i // per}" for i in range(speakers * per)]


def test_speaker_signal_rejects_at_the_item_level_not_at_the_speaker_level():
    """The check of issue 38: items of one speaker share a signal and the label is constant per
    speaker but has nothing to do with the signal. Clusters of one speaker's items are pure in
    gender, so permuting gender over the items finds structure (it rejects); permuting it over
    the speakers, which are what was sampled, does not."""
    from asrpriv.audit.clustering import constrained_clusters

    rng = np.random.default_rng(11)
    x, speaker = _speaker_items(rng, 30, 4, 20, 0.05)
    gender_of = dict(zip(sorted(set(speaker)), rng.permutation(["F"] * 15 + ["M"] * 15)))
    gender = [gender_of[s] for s in speaker]
    assignment = constrained_clusters(centred_gram([x], 120).squared_distances(), 4)
    assert score_clusters(assignment, speaker).purity == 1.0           # the speaker signal
    labels = {"speaker": speaker, "gender": gender}
    items = perm.cluster_tests(assignment, labels, ["speaker", "gender"], 999, seed=1)
    speakers = perm.cluster_tests(assignment, labels, ["speaker", "gender"], 999, seed=1, unit="speaker")
    assert items["labels"]["gender"]["purity"]["p"] == 1 / 1000          # rejects
    assert speakers["labels"]["gender"]["purity"]["p"] == 1.0            # every relabelling as pure
    assert speakers["labels"]["gender"]["permuted"] == "units" and speakers["unit"] == "speaker"
    # the speaker column itself is still tested over the items, and still leaks
    assert speakers["labels"]["speaker"]["permuted"] == "items"
    assert speakers["labels"]["speaker"]["purity"]["p"] == 1 / 1000


def test_speaker_level_p_is_valid_where_the_item_level_p_is_not():
    """Many replicates of noisier speaker signals (clusters mix speakers), gender and meetings
    independent of the vectors: the speaker-level p (gender over speakers, meetings by whole
    speakers) keeps P(p <= a) <= a, the item-level p rejects far more often than a."""
    from asrpriv.audit.clustering import constrained_clusters

    rng = np.random.default_rng(12)
    item_p, unit_p, block_p = [], [], []
    # AMI-like meetings: 4 series of 4 speakers, 2 meetings each, a speaker's subsets 1-2 / 3-4
    meeting = [f"series{i // 16}{'ab'[(i % 4) // 2]}" for i in range(64)]
    for _ in range(120):
        x, speaker = _speaker_items(rng, 16, 4, 10, 0.6)
        gender_of = dict(zip(sorted(set(speaker)), rng.permutation(["F"] * 8 + ["M"] * 8)))
        gender = [gender_of[s] for s in speaker]
        assignment = constrained_clusters(centred_gram([x], 64).squared_distances(), 4)
        item_p.append(perm.cluster_test(assignment, gender, 199, rng)["purity"].p)
        unit_p.append(perm.cluster_test(assignment, gender, 199, rng, speaker)["purity"].p)
        block_p.append(perm.cluster_test(assignment, meeting, 199, rng, speaker)["purity"].p)
    item_p, unit_p, block_p = np.asarray(item_p), np.asarray(unit_p), np.asarray(block_p)
    for a in (0.05, 0.1):
        assert np.mean(unit_p <= a) <= a + 3 * np.sqrt(a * (1 - a) / len(unit_p)), a
        assert np.mean(block_p <= a) <= a + 3 * np.sqrt(a * (1 - a) / len(block_p)), a
    assert np.mean(item_p <= 0.05) > 0.5            # anti-conservative: rejects most true nulls


def test_meeting_like_labels_permuted_by_whole_speakers():
    """A label that varies inside a speaker, as AMI's meetings do: 6 series of 4 speakers, each
    series 2 meetings, a speaker's subsets 1-2 in the first and 3-4 in the second. With only a
    speaker signal, permuted over the items it rejects (a speaker's cluster holds 2 + 2 items of
    one meeting), permuted by whole speakers it does not. With a meeting signal on top (the
    items of one meeting, 4 speakers, cluster together) it rejects by whole speakers too."""
    from asrpriv.audit.clustering import constrained_clusters

    rng = np.random.default_rng(13)
    x, speaker = _speaker_items(rng, 24, 4, 20, 0.05)
    meeting = [f"series{i // 16}{'ab'[(i % 4) // 2]}" for i in range(96)]
    assert perm.scheme_of(meeting, speaker) == "blocks"
    assignment = constrained_clusters(centred_gram([x], 96).squared_distances(), 4)
    assert score_clusters(assignment, meeting).purity == 0.5
    assert perm.cluster_test(assignment, meeting, 999, np.random.default_rng(0))["purity"].p == 1 / 1000
    assert perm.cluster_test(assignment, meeting, 999, np.random.default_rng(0), speaker)["purity"].p == 1.0
    codes = {m: k for k, m in enumerate(sorted(set(meeting)))}
    y = x + 5.0 * rng.normal(size=(len(codes), 20))[[codes[m] for m in meeting]]
    grouped = constrained_clusters(centred_gram([y], 96).squared_distances(), 4)
    assert score_clusters(grouped, meeting).purity > 0.9
    assert perm.cluster_test(grouped, meeting, 999, np.random.default_rng(0), speaker)["purity"].p == 1 / 1000


def test_rank_test_relabels_the_speaker_over_items_and_other_labels_by_speakers():
    rng = np.random.default_rng(14)
    x, speaker = _speaker_items(rng, 20, 4, 10, 0.05)
    d = centred_gram([x], 80).distances()
    gender_of = dict(zip(sorted(set(speaker)), rng.permutation(["F"] * 10 + ["M"] * 10)))
    gender = [gender_of[s] for s in speaker]
    r = rank_test(d, speaker, random.Random(0), distractors=9, repeats=5)
    by_items = perm.rank_tests(d, speaker, r.mean_rank, r.per_class, 199, 1, 9, 5, units=speaker)
    assert by_items["permutation"]["permuted"] == "items" and by_items["permutation"]["p"] == 1 / 200
    g = rank_test(d, gender, random.Random(0), distractors=9, repeats=5)
    # gender's pairs are often one speaker's items: over the items that looks like leakage
    loose = perm.rank_tests(d, gender, g.mean_rank, g.per_class, 199, 1, 9, 5)
    strict = perm.rank_tests(d, gender, g.mean_rank, g.per_class, 199, 1, 9, 5, units=speaker)
    assert strict["permutation"]["permuted"] == "blocks"
    assert strict["permutation"]["null_mean"] < loose["permutation"]["null_mean"]
    assert strict["permutation"]["p"] > loose["permutation"]["p"]


def test_step_unit_option_names_each_columns_relabelling(tmp_path):
    rng = np.random.default_rng(15)
    rows = ["item\tspeaker\tgender\tmeeting"]
    files = []
    centres = rng.normal(size=(10, 16))
    for i in range(40):
        path = tmp_path / f"it{i}.npy"
        np.save(path, (centres[i // 4] + 0.05 * rng.normal(size=16)).astype(np.float32))
        files.append(str(path))
        rows.append(f"it{i}\tspk{i // 4}\t{'FM'[(i // 4) % 2]}\tm{i // 8}{'ab'[(i % 4) // 2]}")
    (tmp_path / "labels.tsv").write_text("\n".join(rows) + "\n")
    run_proc(["cluster-weights", "--labels", str(tmp_path / "labels.tsv"), "--method", "constrained",
              "--size", "4", "--rank-label", "speaker", "--rank-distractors", "9", "--probe-label", "gender",
              "--unit", "speaker", "--seed", "1", "--permutations", "199", "--out", str(tmp_path / "out"),
              *files], check=True)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    t = report["permutation"]
    assert t["unit"] == "speaker" and report["settings"]["unit"] == "speaker"
    assert {c: t["labels"][c]["permuted"] for c in t["labels"]} == \
        {"speaker": "items", "gender": "units", "meeting": "blocks"}
    # one speaker per cluster: its gender is no evidence at the speaker level
    assert t["labels"]["speaker"]["purity"]["p"] == 1 / 200 and t["labels"]["gender"]["purity"]["p"] == 1.0
    assert report["rank"]["permutation"]["permuted"] == "items"
    probe = report["probe"]["gender"]
    assert probe["grouped_by"] == "speaker" and probe["groups"] == 10
    assert probe["interval"].startswith("cluster bootstrap over speaker (10 units")
    md = (tmp_path / "out" / "report.md").read_text()
    assert "`gender` over the speaker units" in md and "`meeting` by whole speakers" in md
    assert "Intervals: cluster bootstrap over speaker" in md
    # an audit whose tests permuted over the items gets them again at the speaker level
    from asrpriv.audit.permutation import add_saved_tests

    old = json.loads(json.dumps(report))
    old["permutation"].pop("unit")
    redone = add_saved_tests(old, str(tmp_path / "out" / "assignments.tsv"), str(tmp_path / "labels.tsv"),
                             unit="speaker")
    assert redone["permutation"].pop("post_hoc") is True and redone["permutation"] == t
