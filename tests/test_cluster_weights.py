"""cluster-weights: 004's formulas by hand, the Gram route against direct vectors, planted groups."""

from __future__ import annotations

import json
import math
import os
import random

import numpy as np
import pytest

from asrpriv.audit import clustering
from asrpriv.audit.gram import centred_gram
from asrpriv.audit.metrics import cluster_entropy, score_clusters, size_histogram
from asrpriv.audit.rank_test import rank_test
from conftest import assert_one_line_error, run_proc


# --- purity and entropy (004 Eq. 4.3-4.5), by hand -------------------------------------------

def test_purity_and_entropy_hand_worked():
    # cluster 0: a a b  -> max 2, H = -(2/3 log2 2/3 + 1/3 log2 1/3) = 0.9183
    # cluster 1: b b    -> max 2, H = 0 (pure)
    # cluster 2: c      -> max 1, H = 0 (pure)
    assignment = [0, 0, 0, 1, 1, 2]
    labels = ["a", "a", "b", "b", "b", "c"]
    s = score_clusters(assignment, labels)
    h0 = -(2 / 3 * math.log2(2 / 3) + 1 / 3 * math.log2(1 / 3))
    assert s.purity == pytest.approx((2 + 2 + 1) / 6)
    assert s.entropy == pytest.approx(3 / 6 * h0)
    assert s.pure_clusters == 2 and s.clusters == 3
    assert cluster_entropy(["x", "y", "z", "w"]) == pytest.approx(2.0)  # 004's random: ~1.99
    assert size_histogram(assignment) == {1: 1, 2: 1, 3: 1}


# --- the Gram route ----------------------------------------------------------------------------

def _planted(groups: int, per_group: int, dim: int, spread: float, seed: int, offset: float = 50.0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(groups, dim))
    x = np.repeat(centres, per_group, axis=0) + spread * rng.normal(size=(groups * per_group, dim))
    return x + offset  # a large common component, as deltas from one model share
    

def test_gram_route_equals_direct_distances_and_ward():
    from scipy.cluster.hierarchy import linkage
    from scipy.spatial.distance import pdist, squareform

    x = _planted(6, 4, 3000, 0.7, seed=1)
    blocks = (x[:, i:i + 700] for i in range(0, x.shape[1], 700))  # uneven last block
    geometry = centred_gram(blocks, x.shape[0])
    direct = squareform(pdist(x))
    error = np.max(np.abs(geometry.distances() - direct) / np.maximum(direct, 1e-12) * (direct > 0))
    assert error < 1e-9, error  # relative error of the Gram route, float64 accumulation
    ours = clustering.ward_linkage(geometry.condensed_distances())
    theirs = linkage(x, method="ward")
    assert np.array_equal(ours[:, :2], theirs[:, :2])  # same merge order
    np.testing.assert_allclose(ours[:, 2], theirs[:, 2], rtol=1e-6)
    # the embedding is isometric
    emb = geometry.embedding()
    np.testing.assert_allclose(squareform(pdist(emb)), direct, rtol=1e-6, atol=1e-8)


# --- fixed-size clustering on planted groups -----------------------------------------------------

def test_fixed_size_methods_recover_planted_groups():
    x = _planted(8, 4, 200, 0.05, seed=2)
    truth = [i // 4 for i in range(32)]
    geometry = centred_gram([x], 32)
    constrained = clustering.constrained_clusters(geometry.squared_distances(), 4)
    assert score_clusters(constrained, [str(t) for t in truth]).purity == 1.0
    assert size_histogram(constrained) == {4: 8}
    divisive = clustering.divisive_clusters(geometry.distances(), 4, 1.5)
    assert max(size_histogram(divisive)) < 6
    assert score_clusters(divisive, [str(t) for t in truth]).purity == 1.0
    rand = clustering.random_clusters(32, 4, random.Random(0))
    assert size_histogram(rand) == {4: 8}
    assert score_clusters(rand, [str(t) for t in truth]).purity < 0.9


def test_constrained_closes_at_size_and_leftovers():
    # 10 points on a line: merges close clusters as soon as they reach 3
    x = np.array([[0.0], [0.1], [0.2], [5.0], [5.1], [5.2], [10.0], [10.1], [10.2], [20.0]])
    d2 = centred_gram([x], 10).squared_distances()
    got = clustering.constrained_clusters(d2, 3)
    assert got[:3] == [got[0]] * 3 and got[3:6] == [got[3]] * 3 and got[6:9] == [got[6]] * 3
    assert len(set(got)) == 4  # the lone point closes as it is


# --- rank test (004 §4.5) ------------------------------------------------------------------------

def test_rank_test_perfect_and_random():
    x = _planted(60, 2, 50, 0.01, seed=3)
    labels = [f"s{i // 2}" for i in range(120)]
    d = centred_gram([x], 120).distances()
    perfect = rank_test(d, labels, random.Random(0))
    assert perfect.mean_rank == 1.0 and perfect.chance_rank == 25.5
    noise = np.random.default_rng(4).normal(size=(120, 50))
    d = centred_gram([noise], 120).distances()
    chance = rank_test(d, labels, random.Random(0))
    assert 22.0 < chance.mean_rank < 29.0, chance.mean_rank


def test_kmeans_two_groups_and_probe():
    from asrpriv.audit.probe import linear_probe, wilson_interval

    x = _planted(2, 20, 30, 0.3, seed=5)
    gender = ["F"] * 20 + ["M"] * 20
    geometry = centred_gram([x], 40)
    got = clustering.kmeans_clusters(geometry.embedding(), 2, seed=0)
    assert score_clusters(got, gender).purity == 1.0
    probe = linear_probe(geometry.embedding(), gender, "gender", seed=0, bootstrap=200)
    assert probe.accuracy == 1.0 and probe.auc == 1.0
    noise = np.random.default_rng(6).normal(size=(40, 30))
    weak = linear_probe(centred_gram([noise], 40).embedding(), gender, "gender", seed=0,
                        bootstrap=200)
    assert weak.accuracy_ci[0] < 0.5 + 1e-9 < weak.accuracy_ci[1] or weak.accuracy < 0.75
    lo, hi = wilson_interval(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-4) and hi == pytest.approx(0.9433, abs=1e-4)


# --- the probe at the sampled unit (issue 38): grouped folds, cluster bootstrap --------------------

def test_grouped_folds_keep_each_speaker_in_one_fold_and_balance_classes():
    from asrpriv.audit.probe import probe_splits

    speaker = [f"s{i // 4}" for i in range(80)]
    gender = ["F" if (i // 4) % 3 == 0 else "M" for i in range(80)]          # 7 F, 13 M speakers
    splits = probe_splits(gender, speaker, 5, seed=3)
    assert len(splits) == 5
    tested = np.concatenate([test for _, test in splits])
    assert sorted(tested) == list(range(80))                                  # each item once
    for train, test in splits:
        assert not {speaker[i] for i in train} & {speaker[i] for i in test}  # no speaker split
        assert {gender[i] for i in train} == {"F", "M"}
        assert 1 <= sum(gender[i] == "F" for i in test) // 4 <= 2            # 7 F over 5 folds
    # item-level folds split speakers (what grouping is for)
    loose = probe_splits(gender, None, 5, seed=3)
    assert any({speaker[i] for i in train} & {speaker[i] for i in test} for train, test in loose)


def test_cluster_bootstrap_hand_worked():
    """Units A (2 items, both right), B (2 items, none), C (4 items, 2 right): a resample's
    accuracy is its drawn units' right items over their items, counted with multiplicity."""
    from asrpriv.audit.probe import cluster_bootstrap

    correct = [1, 1, 0, 0, 1, 0, 1, 0]
    unit = [0, 0, 1, 1, 2, 2, 2, 2]
    weights = [[1, 1, 1],        # the sample itself: 4 / 8
               [2, 1, 0],        # A A B: 4 / 6
               [0, 0, 3],        # C C C: 6 / 12
               [0, 3, 0],        # B B B: 0 / 6
               [1, 0, 2]]        # A C C: 6 / 10
    got = cluster_bootstrap(correct, unit, weights)["accuracy"]
    assert got == pytest.approx([0.5, 4 / 6, 0.5, 0.0, 0.6], abs=1e-12)
    # the AUC of a resample weights each item by its unit's draw count
    seen = []
    cluster_bootstrap(correct, unit, [[2, 1, 0]], auc_of=lambda w: seen.append(list(w)) or 0.5)
    assert seen == [[2, 2, 1, 1, 0, 0, 0, 0]]


def test_cluster_bootstrap_distribution_equals_the_enumerated_one():
    """4 units: every one of the 4^4 ordered draws of 4 units has probability 1/256; the Monte
    Carlo resamples' accuracy takes each value as often as the enumeration says, and the
    percentile interval is the enumerated distribution's 2.5% and 97.5% points."""
    import itertools

    from asrpriv.audit.probe import cluster_bootstrap, percentile_interval, resample_weights

    right = [3, 0, 1, 2]            # right items of each unit
    sizes = [3, 2, 4, 2]            # its items
    correct = [1] * 3 + [0] * 2 + [1, 0, 0, 0] + [1, 1]
    unit = [0] * 3 + [1] * 2 + [2] * 4 + [3] * 2
    exact = {}
    for draw in itertools.product(range(4), repeat=4):
        value = round(sum(right[g] for g in draw) / sum(sizes[g] for g in draw), 12)
        exact[value] = exact.get(value, 0) + 1 / 256
    n = 40000
    got = cluster_bootstrap(correct, unit, resample_weights(4, n, np.random.default_rng(5)))["accuracy"]
    rounded = np.round(got, 12)
    assert set(np.unique(rounded)) <= set(exact)
    for value, prob in exact.items():
        assert abs(np.mean(rounded == value) - prob) < 4 * math.sqrt(prob * (1 - prob) / n) + 1e-9, value
    values = sorted(exact)
    cdf = np.cumsum([exact[v] for v in values])
    lo = values[int(np.searchsorted(cdf, 0.025))]
    hi = values[int(np.searchsorted(cdf, 0.975))]
    assert all(abs(c - q) > 0.004 for c in cdf for q in (0.025, 0.975))   # not on a jump's edge
    assert percentile_interval(got) == pytest.approx((lo, hi), abs=1e-12)


def test_cluster_interval_wider_than_the_item_interval_by_hand():
    """20 speakers of 10 items, the probe right on every item of half of them and wrong on every
    item of the rest: the items are 200 but the independent draws 20. A resample's accuracy is
    (speakers right drawn) / 20 ~ Binomial(20, 1/2) / 20, whose 2.5% and 97.5% points are 6 and
    14 (P(X <= 5) = 0.0207, P(X <= 6) = 0.0577): [0.30, 0.70]. Wilson over the 200 items
    claims [0.4314, 0.5686]."""
    from scipy.stats import binom

    from asrpriv.audit.probe import cluster_bootstrap, percentile_interval, resample_weights, wilson_interval

    assert binom.cdf(5, 20, 0.5) < 0.025 < binom.cdf(6, 20, 0.5)
    unit = np.repeat(np.arange(20), 10)
    correct = (unit % 2 == 0).astype(int)
    draws = cluster_bootstrap(correct, unit, resample_weights(20, 20000, np.random.default_rng(6)))
    assert percentile_interval(draws["accuracy"]) == pytest.approx((0.30, 0.70), abs=1e-12)
    lo, hi = wilson_interval(100, 200)
    assert (lo, hi) == pytest.approx((0.4314, 0.5686), abs=1e-4)


def test_probe_grouped_by_speaker_does_not_score_by_recognising_speakers():
    """Speakers with a strong signal of their own and a label drawn per speaker, unrelated to
    the signal: folds over the items let the probe recognise the held-out items' speakers (high
    accuracy); folds grouped by speaker leave it at chance, and its interval, a bootstrap over
    the 30 speakers, is wider than the item-level Wilson interval and covers 0.5."""
    from asrpriv.audit.probe import linear_probe

    rng = np.random.default_rng(7)
    x = np.repeat(rng.normal(size=(30, 60)), 4, axis=0) + 0.05 * rng.normal(size=(120, 60))
    speaker = [f"s{i // 4}" for i in range(120)]
    label_of = dict(zip(sorted(set(speaker)), rng.permutation(["F"] * 15 + ["M"] * 15)))
    label = [label_of[s] for s in speaker]
    embedding = centred_gram([x], 120).embedding()
    loose = linear_probe(embedding, label, "gender", seed=0, bootstrap=200)
    tight = linear_probe(embedding, label, "gender", seed=0, groups=speaker, grouped_by="speaker",
                         bootstrap=500)
    assert loose.accuracy > 0.9 and loose.grouped_by is None and "Wilson" in loose.interval
    assert tight.accuracy < 0.75 and tight.accuracy_ci[0] < 0.5 < tight.accuracy_ci[1]
    assert tight.groups == 30 and "cluster bootstrap over speaker (30 units" in tight.interval
    assert tight.auc_ci[0] < 0.5 < tight.auc_ci[1]
    from asrpriv.audit.probe import wilson_interval

    w = wilson_interval(round(tight.accuracy * 120), 120)
    assert tight.accuracy_ci[1] - tight.accuracy_ci[0] > w[1] - w[0]


# --- the step on real file kinds -----------------------------------------------------------------

def _write_deltas(tmp_path, groups=3, per_group=4, seed=0, tamper=None):
    import torch

    from asrpriv.nnlm.model import build_model, make_config
    from asrpriv.nnlm.modelfile import save_delta
    from asrpriv.nnlm.vocab import Vocabulary

    vocab = Vocabulary(["<unk>", "<s>", "</s>", "a", "b", "c"])
    config = make_config("lstm", len(vocab), emb_dim=8, hidden_dim=8, layers=1)
    torch.manual_seed(seed)
    base = build_model(config).state_dict()
    gen = torch.Generator().manual_seed(seed)
    direction = {k: torch.randn(v.shape, generator=gen) for k, v in base.items()}
    rows = ["item\tspeaker\tgender"]
    paths = []
    for g in range(groups):
        centre = {k: torch.randn(v.shape, generator=gen) for k, v in base.items()}
        for j in range(per_group):
            state = {k: centre[k] + 0.01 * torch.randn(v.shape, generator=gen) + 3 * direction[k]
                     for k, v in base.items()}
            if tamper and (g, j) == tamper[0]:
                state = tamper[1](state)
            name = f"spk{g}_{j}"
            path = tmp_path / f"{name}.delta.pt"
            save_delta(str(path), state, vocab, config, weight=10)
            paths.append(str(path))
            rows.append(f"{name}\tspk{g}\t{'F' if g % 2 else 'M'}")
    labels = tmp_path / "labels.tsv"
    labels.write_text("\n".join(rows) + "\n")
    return paths, str(labels)


def test_cli_on_delta_files_writes_every_output(tmp_path):
    paths, labels = _write_deltas(tmp_path)
    out = tmp_path / "out"
    proc = run_proc(["cluster-weights", "--labels", labels, "--method", "ward", "--clusters", "3",
                     "--rank-label", "speaker", "--rank-repeats", "5", "--seed", "1",
                     "--out", str(out), *paths], check=True)
    assert proc.stdout == b""
    assignments = (out / "assignments.tsv").read_text().splitlines()
    assert assignments[0] == "item\tcluster" and len(assignments) == 13
    report = json.loads((out / "report.json").read_text())
    assert report["labels"]["speaker"]["purity"] == 1.0
    assert report["labels"]["speaker"]["entropy"] == 0.0
    assert report["rank"]["mean_rank"] == 1.0
    assert (out / "dendrogram.png").read_bytes()[:4] == b"\x89PNG"
    assert "purity" in (out / "report.md").read_text()
    # the spilled route (tiny memory budget) and a layer pattern give the same clusters
    out2 = tmp_path / "out2"
    run_proc(["cluster-weights", "--labels", labels, "--method", "constrained", "--size", "4",
              "--layer", "rnn.*", "--memory", "16", "--out", str(out2), *paths], check=True)
    report2 = json.loads((out2 / "report.json").read_text())
    assert report2["labels"]["speaker"]["purity"] == 1.0 and report2["sizes"] == {"4": 3}


def test_spilled_blocks_equal_in_memory_blocks(tmp_path):
    from asrpriv.audit.items import VectorSource, expand_items

    paths, _ = _write_deltas(tmp_path, groups=2, per_group=2)
    source = VectorSource(expand_items(paths))
    whole = np.concatenate(list(source.iter_blocks(97, 1 << 30)), axis=1)
    spilled = np.concatenate(list(source.iter_blocks(97, 0)), axis=1)
    assert np.array_equal(whole, spilled)


def test_cli_on_counts_and_npy(tmp_path):
    rows = ["item\tclient"]
    paths = []
    rng = np.random.default_rng(0)
    for c in range(2):
        for j in range(3):
            name = f"c{c}_{j}"
            words = {f"w{k}": int(rng.integers(0, 3)) + (20 if (k % 2) == c else 0) for k in range(12)}
            p = tmp_path / f"{name}.counts"
            p.write_text("".join(f"{w}\t{v}\n" for w, v in sorted(words.items())))
            paths.append(str(p))
            rows.append(f"{name}\tclient{c}")
            np.save(tmp_path / f"{name}.npy", np.array(list(words.values()), dtype=np.float32))
    (tmp_path / "labels.tsv").write_text("\n".join(rows) + "\n")
    for files in (paths, [p.replace(".counts", ".npy") for p in paths]):
        out = tmp_path / ("o" + str(len(files)) + files[0][-3:])
        run_proc(["cluster-weights", "--labels", str(tmp_path / "labels.tsv"), "--method",
                  "kmeans", "--clusters", "2", "--seed", "0", "--out", str(out), *files],
                 check=True)
        assert json.loads((out / "report.json").read_text())["labels"]["client"]["purity"] == 1.0


def test_bad_inputs_one_line_errors(tmp_path):
    paths, labels = _write_deltas(tmp_path, groups=2, per_group=2,
                                  tamper=((1, 1), lambda s: {k: (v[:1] if v.dim() else v)
                                                             for k, v in s.items()}))
    out = tmp_path / "out"
    # a file whose parameter shapes differ: it does not even pass the model-file check
    proc = run_proc(["cluster-weights", "--labels", labels, "--out", str(out), *paths])
    assert_one_line_error(proc, "spk1_1")
    assert not out.exists()
    (tmp_path / "ok").mkdir()
    paths, labels = _write_deltas(tmp_path / "ok")
    proc = run_proc(["cluster-weights", "--labels", labels, "--layer", "nothing.*",
                     "--out", str(out), *paths])
    assert_one_line_error(proc, "--layer", "matches no parameter")
    short = tmp_path / "short.tsv"
    short.write_text("\n".join(open(labels).read().splitlines()[:-1]) + "\n")
    proc = run_proc(["cluster-weights", "--labels", str(short), "--out", str(out), *paths])
    assert_one_line_error(proc, "short.tsv", "no labels")
    assert not out.exists()
    proc = run_proc(["cluster-weights", "--labels", labels, "--unit", "accent", "--out", str(out), *paths])
    assert_one_line_error(proc, "no label column 'accent'")
    assert not out.exists()
