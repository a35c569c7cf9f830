"""count-unigrams, aggregate, add-noise, fma-adapt: hand-worked cases, properties, pipelines."""

from __future__ import annotations

import math
import random
import subprocess
import sys
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from asrpriv.io.counts import read_counts
from asrpriv.unigram.aggregate import sum_counts
from asrpriv.unigram.counting import bound_contribution, nbest_contribution, rank_kernel
from asrpriv.unigram.fma import FmaSettings, adaptation_factors
from conftest import AMI, assert_one_line_error, run_proc

NBEST = ("utt_id\tclient\trank\ttext\n"
         "u1\tA\t2\ta b\n"          # rank column out of file order on purpose
         "u1\tA\t1\ta a c\n"
         "u1\tA\t3\tb\n"
         "u2\tB\t1\tc d\n")


def _parse(stdout: bytes | str):
    text = stdout.decode() if isinstance(stdout, bytes) else stdout
    meta, counts = {}, {}
    for line in text.splitlines():
        if line.startswith("#"):
            k, _, v = line[1:].partition("=")
            meta[k] = v
        elif line:
            w, c = line.split("\t")
            counts[w] = float(c)
    return meta, counts


def test_rank_kernel_hand_worked():
    assert rank_kernel(1, 5.0) == 1.0
    assert rank_kernel(2, 1.0) == pytest.approx(math.exp(-0.5))
    assert rank_kernel(3, 2.0) == pytest.approx(math.exp(-4 / 8))
    assert rank_kernel(2, 0.1) < 1e-20


def test_count_unigrams_nbest_hand_worked(tmp_path):
    path = tmp_path / "n.tsv"
    path.write_text(NBEST)
    k2, k3 = math.exp(-1 / 2), math.exp(-4 / 2)  # sigma = 1
    expected = {"a": 2 + k2, "b": k2 + k3, "c": 1 + 1, "d": 1}
    for args, stdin in (([str(path)], None), ([], NBEST)):
        proc = run_proc(["count-unigrams", "--sigma", "1", *args], input=stdin, check=True)
        meta, counts = _parse(proc.stdout)
        assert counts.keys() == expected.keys()
        for w in expected:
            assert counts[w] == pytest.approx(expected[w], rel=1e-12)
        assert meta["sigma"] == "1.0" and "max_l1" not in meta


def test_count_unigrams_top_and_file_order(tmp_path):
    path = tmp_path / "n.tsv"
    path.write_text(NBEST.replace("\trank", "\tx").replace("\t2\ta b", "\t9\ta b").replace("\t1\t", "\t9\t").replace("\t3\t", "\t9\t"))
    # no rank column: file order; --top 1 keeps the first row of each utterance
    proc = run_proc(["count-unigrams", "--top", "1", str(path)], check=True)
    assert _parse(proc.stdout)[1] == {"a": 1, "b": 1, "c": 1, "d": 1}


def test_bound_contribution_clips_to_l1_on_grid():
    counts = {"a": 3.0, "b": 1.0}
    bounded, clipped = bound_contribution(counts, 2.0, 2 ** -10)
    assert clipped
    assert sum(bounded.values()) <= 2.0
    assert bounded["a"] == pytest.approx(1.5, abs=2 ** -10) and bounded["b"] == pytest.approx(0.5, abs=2 ** -10)
    assert all((v / 2 ** -10).is_integer() for v in bounded.values())
    same, clipped = bound_contribution({"a": 1.0}, 2.0, 2 ** -10)
    assert same == {"a": 1.0} and not clipped


def test_count_unigrams_bounds_per_utterance_and_per_client(tmp_path):
    path = tmp_path / "n.tsv"
    path.write_text(NBEST)
    proc = run_proc(["count-unigrams", "--sigma", "0.1", "--max-l1", "2", str(path)], check=True)
    meta, counts = _parse(proc.stdout)
    # u1's 1-best 'a a c' (L1 3) is scaled to 2: a 4/3, c 2/3 (floored to the grid); u2 'c d' (L1 2) kept
    assert meta["unit"] == "utterance" and meta["max_l1"] == "2.0"
    assert counts["a"] == math.floor(4 / 3 * 1024) / 1024
    assert counts["c"] == math.floor(2 / 3 * 1024) / 1024 + 1
    assert counts["d"] == 1
    proc = run_proc(["count-unigrams", "--sigma", "0.1", "--unit", "client", "--max-l1", "1", str(path)], check=True)
    meta, counts = _parse(proc.stdout)
    assert meta["unit"] == "client"
    assert sum(counts.values()) <= 2.0 + 1e-12  # two clients, each <= 1


def test_by_client(tmp_path):
    path = tmp_path / "n.tsv"
    path.write_text(NBEST)
    out = tmp_path / "clients"
    run_proc(["count-unigrams", "--sigma", "0.1", "--by-client", str(out), str(path)], check=True)
    assert sorted(p.name for p in out.iterdir()) == ["A.counts", "B.counts"]
    a = read_counts(str(out / "A.counts"))[1]
    assert a["a"] == 2 and a["c"] == 1 and a["b"] == pytest.approx(math.exp(-1 / 0.02) + math.exp(-4 / 0.02))
    # same split from --utt2client on text
    text = tmp_path / "t.txt"
    text.write_text("u1 x y\nu2 y\n")
    u2c = tmp_path / "u2c"
    u2c.write_text("u1 A\nu2 B\n")
    out2 = tmp_path / "clients2"
    run_proc(["count-unigrams", "--text", "--ids", "--utt2client", str(u2c), "--by-client", str(out2),
              str(text)], check=True)
    assert read_counts(str(out2 / "B.counts"))[1] == {"y": 1}


def test_count_text_plain_and_ids(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("the cat\nthe  dog the\n\n")
    proc = run_proc(["count-unigrams", "--text", str(text)], check=True)
    meta, counts = _parse(proc.stdout)
    assert counts == {"the": 3, "cat": 1, "dog": 1} and meta["units"] == "2"
    proc = run_proc(["count-unigrams", "--text", "--ids"], input="u1 the cat\nu2 the\n", check=True)
    assert _parse(proc.stdout)[1] == {"the": 2, "cat": 1}


def test_count_text_matches_brute_force_on_real_data():
    from collections import Counter

    proc = run_proc(["count-unigrams", "--text", "--ids", str(AMI / "train_text")], check=True)
    _, counts = _parse(proc.stdout)
    brute = Counter()
    for line in open(AMI / "train_text", encoding="utf-8"):
        brute.update(line.split()[1:])
    assert counts == dict(brute)
    assert sum(counts.values()) == 807031


# ---------------------------------------------------------------- aggregate

counts_st = st.dictionaries(st.sampled_from([f"w{i}" for i in range(12)]),
                            st.integers(min_value=0, max_value=5000).map(lambda k: k * 2 ** -10),
                            max_size=12)


@settings(max_examples=200, deadline=None)
@given(counts_st, counts_st, counts_st)
def test_sum_is_associative_and_commutative(a, b, c):
    assert sum_counts([sum_counts([a, b]), c]) == sum_counts([a, sum_counts([b, c])])
    assert sum_counts([a, b, c]) == sum_counts([c, a, b])


def test_aggregate_tree_equals_flat(tmp_path):
    rng = random.Random(7)
    files = []
    for i in range(6):
        path = tmp_path / f"c{i}.counts"
        path.write_text("#unit=utterance\n#max_l1=5\n#grid=0.0009765625\n#units=3\n" +
                        "".join(f"w{j}\t{rng.randrange(5000) * 2 ** -10!r}\n" for j in range(rng.randrange(1, 9))))
        files.append(str(path))
    flat = run_proc(["aggregate", *files], check=True).stdout
    left = tmp_path / "left.counts"
    run_proc(["aggregate", *files[:3], "-o", str(left)], check=True)
    right = run_proc(["aggregate", *files[3:]], check=True).stdout
    tree = run_proc(["aggregate", str(left), "-"], input=right, check=True).stdout
    assert tree == flat
    meta, _ = _parse(flat)
    # issue 37: not proven disjoint, so the bounds add up: 6 * 5, the same in every tree
    assert meta["units"] == "18" and meta["max_l1"] == "30"


def test_aggregate_refuses_incompatible(tmp_path):
    a = tmp_path / "a.counts"
    a.write_text("#unit=utterance\n#max_l1=5\nx\t1\n")
    b = tmp_path / "b.counts"
    b.write_text("#unit=client\n#max_l1=5\nx\t1\n")
    c = tmp_path / "c.counts"
    c.write_text("#unit=utterance\n#max_l1=7\nx\t1\n")
    assert_one_line_error(run_proc(["aggregate", str(a), str(b)]), "different unit")
    # different bounds are summed (issue 37): one utterance may be in both, 5 + 7
    assert _parse(run_proc(["aggregate", str(a), str(c)], check=True).stdout)[0]["max_l1"] == "12"


def test_aggregate_epsilon_ledger(tmp_path):
    """Epsilons of real add-noise releases: sequential adds, --disjoint (proven by partition
    labels) takes the maximum. Hand-written noisy files without a history are refused."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("x\ny\n")
    made = {}
    for name, eps in (("a", "0.5"), ("b", "1")):
        raw = tmp_path / f"{name}.raw"
        run_proc(["count-unigrams", "--text", "--max-l1", "5", "--partition", f"part-{name}",
                  "-o", str(raw)], input="x x\n", check=True)
        made[name] = tmp_path / f"{name}.counts"
        run_proc(["add-noise", "--epsilon", eps, "--vocab", str(vocab), "-o", str(made[name]),
                  str(raw)], check=True)
    a, b = made["a"], made["b"]
    meta, _ = _parse(run_proc(["aggregate", str(a), str(b)], check=True).stdout)
    assert meta["epsilon"] == "1.5"
    meta, _ = _parse(run_proc(["aggregate", "--disjoint", str(a), str(b)], check=True).stdout)
    assert meta["epsilon"] == "1" and meta["partition"] == "part-a,part-b"
    clean = tmp_path / "clean.counts"
    clean.write_text("#unit=utterance\n#max_l1=5\n#grid=0.0009765625\nx\t1\n")
    assert_one_line_error(run_proc(["aggregate", str(a), str(clean)]), "different noise")
    forged = tmp_path / "forged.counts"
    forged.write_text("#unit=utterance\n#max_l1=5\n#grid=0.0009765625\n#noise=laplace\n"
                      "#epsilon=0.5\nx\t1\n")
    assert_one_line_error(run_proc(["aggregate", str(forged)]), "forged.counts:4:", "privacy_history")


# ---------------------------------------------------------------- add-noise

def test_discrete_laplace_has_calibrated_scale():
    """Many draws with a fixed seed: variance, mean |Z| and a KS test against Laplace(b)."""
    from scipy import stats

    from asrpriv.privacy.laplace import discrete_laplace

    rng = random.Random(12345)
    b = Fraction(40)  # in grid steps; large enough that the lattice is fine
    draws = [discrete_laplace(rng, b) for _ in range(20000)]
    n = len(draws)
    mean = sum(draws) / n
    var = sum((d - mean) ** 2 for d in draws) / (n - 1)
    # exact discrete Laplace variance: 2 e^{-1/b} / (1 - e^{-1/b})^2
    q = math.exp(-1 / float(b))
    exact_var = 2 * q / (1 - q) ** 2
    assert abs(mean) < 4 * math.sqrt(exact_var / n)
    assert var == pytest.approx(exact_var, rel=0.05)
    assert var == pytest.approx(2 * float(b) ** 2, rel=0.06)
    jitter = random.Random(1)
    continuous = [d + jitter.random() - 0.5 for d in draws]
    assert stats.kstest(continuous, stats.laplace(scale=float(b)).cdf).pvalue > 0.001


def test_discrete_laplace_small_scale_pmf():
    """At scale 1 the pmf is checkable exactly: P(0) = (1-q)/(1+q), q = e^-1."""
    from asrpriv.privacy.laplace import discrete_laplace

    rng = random.Random(99)
    draws = [discrete_laplace(rng, Fraction(1)) for _ in range(40000)]
    q = math.exp(-1)
    for z in (0, 1, -1, 2):
        expected = (1 - q) / (1 + q) * q ** abs(z)
        observed = draws.count(z) / len(draws)
        assert observed == pytest.approx(expected, abs=4 * math.sqrt(expected / len(draws)))


def _bounded_counts(tmp_path, name, text):
    path = tmp_path / name
    proc = run_proc(["count-unigrams", "--text", "--max-l1", "3", "-o", str(path)], input=text, check=True)
    return path


def test_add_noise_keys_never_depend_on_private_data(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"w{i}\n" for i in range(50)) + "secret\n")
    a = _bounded_counts(tmp_path, "a.counts", "w1 w2\nw3 secret\n")
    b = _bounded_counts(tmp_path, "b.counts", "w7\nnot_in_vocab w9 w9\n")
    outs = []
    for path in (a, b):
        proc = run_proc(["add-noise", "--epsilon", "1", "--vocab", str(vocab), str(path)], check=True)
        meta, counts = _parse(proc.stdout)
        outs.append((meta, counts))
        assert "units" not in meta and meta["noise"] == "laplace"
    assert list(outs[0][1]) == list(outs[1][1]) == sorted(f"w{i}" for i in range(50)) + ["secret"] or \
        sorted(outs[0][1]) == sorted(outs[1][1])
    assert sorted(outs[0][1]) == sorted([f"w{i}" for i in range(50)] + ["secret"])
    assert set(outs[0][0]) == set(outs[1][0])
    assert all(v >= 0 for _, c in outs for v in c.values())


def test_add_noise_refuses_without_bound_and_records_override(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("a\nb\n")
    unbounded = tmp_path / "u.counts"
    run_proc(["count-unigrams", "--text", "-o", str(unbounded)], input="a b\n", check=True)
    assert_one_line_error(run_proc(["add-noise", "--epsilon", "1", "--vocab", str(vocab), str(unbounded)]),
                          "no contribution bound")
    proc = run_proc(["add-noise", "--epsilon", "1", "--sensitivity", "2", "--vocab", str(vocab),
                     "--seed", "1", str(unbounded)], check=True)
    meta, _ = _parse(proc.stdout)
    assert meta["sensitivity_source"] == "override" and meta["sensitivity"] == "2"
    assert b"NOT private" in proc.stderr


def test_add_noise_scale_seed_and_ledger(tmp_path):
    vocab = tmp_path / "vocab.txt"
    words = [f"w{i}" for i in range(3000)]
    vocab.write_text("\n".join(words) + "\n")
    counts = _bounded_counts(tmp_path, "c.counts", "w1 w2 w3\n")
    args = ["add-noise", "--epsilon", "0.5", "--vocab", str(vocab), "--seed", "3", "--no-clamp", str(counts)]
    first = run_proc(args, check=True).stdout
    # seeded = repeatable noise (each run is still its own release, with a fresh id)
    assert _parse(run_proc(args, check=True).stdout)[1] == _parse(first)[1]
    meta, noisy = _parse(first)
    assert meta["epsilon"] == "0.5" and meta["noise_scale"] == "6"  # 3 / 0.5
    noise = [noisy[w] - (1.0 if w in ("w1", "w2", "w3") else 0.0) for w in words]
    var = sum(x * x for x in noise) / len(noise)
    assert var == pytest.approx(2 * 6 ** 2, rel=0.1)
    assert all((x * 1024).is_integer() for x in noise)  # on the grid: no float low-bit leak
    again = tmp_path / "again.counts"
    again.write_bytes(first)
    meta2, _ = _parse(run_proc(["add-noise", "--epsilon", "0.25", "--vocab", str(vocab), "--seed", "4",
                                "--allow-seeded-test-noise", str(again)], check=True).stdout)
    assert meta2["epsilon"] == "0.75"


def test_unseeded_noise_differs(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("a\nb\nc\n")
    counts = _bounded_counts(tmp_path, "c.counts", "a b\n")
    one = run_proc(["add-noise", "--epsilon", "0.1", "--no-clamp", "--vocab", str(vocab), str(counts)], check=True)
    two = run_proc(["add-noise", "--epsilon", "0.1", "--no-clamp", "--vocab", str(vocab), str(counts)], check=True)
    assert one.stdout != two.stdout
    assert b"NOT private" not in one.stderr


# ---------------------------------------------------------------- fma-adapt

def test_factors_hand_worked():
    u = {"a": 2.0, "b": 1.0, "c": 1.0}          # u = .5 .25 .25
    qbar = {"a": 1.0, "b": 3.0}                 # qbar = .25 .75 0
    q = {"c": 2.0, "zzz": 5.0}                  # q over background vocab = 0 0 1 (zzz ignored)
    f = adaptation_factors(u, qbar, q, FmaSettings(alpha=0.5, beta=0.25, lam=2.0))
    g = {"a": 0.25 * 0.5 + 0.5 * 0.25, "b": 0.25 * 0.25 + 0.5 * 0.75, "c": 0.25 * 0.25 + 0.25 * 1.0}
    for w, uw in (("a", 0.5), ("b", 0.25), ("c", 0.25)):
        assert f[w] == pytest.approx(2.0 * math.log(g[w] / uw), rel=1e-12)
    assert set(f) == {"a", "b", "c"}


def test_factors_smoothing_and_identity():
    u = {"a": 1.0, "b": 3.0}
    f = adaptation_factors(u, None, None, FmaSettings(alpha=0, beta=0, lam=1))
    assert f == {"a": 0.0, "b": 0.0}
    f = adaptation_factors(u, None, {"a": 1.0}, FmaSettings(alpha=0, beta=0.5, lam=1, smoothing=1.0))
    q = {"a": 2 / 3, "b": 1 / 3}
    for w in u:
        uw = u[w] / 4
        assert f[w] == pytest.approx(math.log(0.5 * uw + 0.5 * q[w]) - math.log(uw))


@pytest.mark.parametrize("args, what", [
    (["--alpha", "0.8", "--beta", "0.3"], "alpha + --beta must be <= 1"),
    (["--alpha", "-0.1", "--beta", "0"], "--alpha must be"),
    (["--alpha", "0.5", "--beta", "0"], None),
])
def test_fma_adapt_usage_errors(tmp_path, args, what):
    u = tmp_path / "u.counts"
    u.write_text("a\t1\nb\t2\n")
    g = tmp_path / "g.counts"
    g.write_text("a\t1\n")
    proc = run_proc(["fma-adapt", "--background", str(u), "--global", str(g), *args])
    if what is None:
        assert proc.returncode == 0
    else:
        assert_one_line_error(proc, what)


def test_fma_adapt_zero_background_and_no_mass(tmp_path):
    u = tmp_path / "u.counts"
    u.write_text("a\t1\nb\t0\n")
    assert_one_line_error(run_proc(["fma-adapt", "--background", str(u), "--alpha", "0", "--beta", "0"]),
                          "u(w) = 0")
    u.write_text("a\t1\nb\t1\n")
    q = tmp_path / "q.counts"
    q.write_text("a\t1\n")
    assert_one_line_error(run_proc(["fma-adapt", "--background", str(u), "--personal", str(q),
                                    "--alpha", "0", "--beta", "1"]), "g(w) = 0")


# ---------------------------------------------------------------- the pipeline

def test_pipeline_count_aggregate_noise_adapt(tmp_path):
    """count-unigrams | aggregate | add-noise | fma-adapt on the real AMI dev N-best lists."""
    nbest = AMI / "dev" / "nbest.tsv"
    bg = tmp_path / "u.counts"
    # background from the non-scenario meetings (free topics), as in the FMP experiment
    non_scenario = "".join(line for line in open(AMI / "train_text", encoding="utf-8")
                           if line[:2] in ("EN", "IB", "IN"))
    run_proc(["count-unigrams", "--text", "--ids", "--public", "-o", str(bg)], input=non_scenario, check=True)
    py = f"{sys.executable} -m asrpriv"
    cmd = (f"{py} count-unigrams --sigma 1 --max-l1 20 {nbest} | {py} aggregate | "
           f"{py} add-noise --epsilon 10 --vocab {bg} --seed 5 -q | "
           f"{py} fma-adapt --background {bg} --global - --alpha 0.5 --beta 0 --lambda 1 "
           "--allow-seeded-test-noise")
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split("\t") for line in proc.stdout.splitlines() if not line.startswith("#")]
    background = read_counts(str(bg))[1]
    assert len(rows) == len(background)
    factors = {w: float(f) for w, f in rows}
    # words of the scenario meetings' task get boosted relative to the free-topic background
    assert factors["remote"] > 0 and factors["control"] > 0
    assert all(math.isfinite(v) for v in factors.values())


# ---------------------------------------------------------------- split-nbest

def test_split_nbest_parts_per_client(tmp_path):
    rows = ["utt_id\tclient\trank\ttext"]
    for client, n in (("A", 5), ("B", 3)):
        for i in range(1, n + 1):
            rows += [f"{client}{i}\t{client}\t1\tw{i}", f"{client}{i}\t{client}\t2\tv{i}"]
    src = tmp_path / "n.tsv"
    src.write_text("\n".join(rows) + "\n")
    out = tmp_path / "parts"
    run_proc(["split-nbest", "--parts", "3", "-o", str(out), str(src)], check=True)
    ids = []
    for k in range(3):
        lines = (out / f"part-{k}.tsv").read_text().splitlines()
        assert lines[0] == rows[0]
        ids.append(sorted({line.split("\t")[0] for line in lines[1:]}))
    # A: 5 utterances -> 2, 2, 1; B: 3 -> 1, 1, 1; time order kept
    assert ids == [["A1", "A2", "B1"], ["A3", "A4", "B2"], ["A5", "B3"]]
    run_proc(["split-nbest", "--clients", "B", "--max-per-client", "2", "-o", str(out / "b")],
             input=src.read_text(), check=True)
    kept = (out / "b" / "part-0.tsv").read_text().splitlines()[1:]
    assert sorted({line.split("\t")[0] for line in kept}) == ["B1", "B2"]
