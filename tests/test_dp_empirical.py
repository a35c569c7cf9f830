"""Empirical differential privacy of ``count-unigrams --max-l1 | add-noise`` (issue 14).

Neighbouring datasets D and D' = D + one utterance go through the real CLI pipeline. The
released noisy counts are sampled many times; for an output event E the privacy loss
ln(P[E | D'] / P[E | D]) is estimated with Clopper-Pearson intervals, and the interval's
lower bound must not exceed the claimed epsilon (it would prove a violation). The events are
the tails {noisy(w) >= c'(w)} and {noisy(w) < c'(w)} where w is the word the added utterance
puts its whole (clipped) contribution on: for discrete Laplace noise their loss is exactly
epsilon, so the test also checks that it has the resolution to see a violation: the same
estimator flags a mechanism with half the calibrated noise (true loss 2 epsilon).

Speed: a few releases go through the CLI (``add-noise --seed``) and are checked equal to the
library call :func:`laplace_counts` with the same seed; the many samples then call the library
directly with one fast (seeded, not private) stream.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest
from scipy import stats

from asrpriv.io.counts import parse_counts
from asrpriv.unigram.noise import laplace_counts
from asrpriv.privacy.randomness import noise_rng
from conftest import run_cli

BOUND = 4.0            # --max-l1: the per-utterance L1 bound, the sensitivity
WORD = "target"
D = "the cat sat\non the mat\ntarget of the day\n"
EXTRA = "target target target target target target\n"   # clipped to L1 4, all on WORD


def _counts(text: str):
    result = run_cli(["count-unigrams", "--text", "--max-l1", str(BOUND)], input=text)
    assert result.exit_code == 0, result.stderr
    return parse_counts("<cli>", enumerate(result.stdout.splitlines(), 1))


def _clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    lo = stats.beta.ppf(alpha / 2, k, n - k + 1) if k > 0 else 0.0
    hi = stats.beta.ppf(1 - alpha / 2, k + 1, n - k) if k < n else 1.0
    return lo, hi


def _loss_bounds(sample_d, sample_d2, threshold: float, alpha: float = 1e-3):
    """Lower confidence bounds and point estimates of the privacy loss of both tail events."""
    n1, n2 = len(sample_d2), len(sample_d)
    out = []
    for event in (lambda x: x >= threshold, lambda x: x < threshold):
        k1 = sum(map(event, sample_d2))
        k2 = sum(map(event, sample_d))
        for (ka, na), (kb, nb) in (((k1, n1), (k2, n2)), ((k2, n2), (k1, n1))):
            lo_a, _ = _clopper_pearson(ka, na, alpha)
            _, hi_b = _clopper_pearson(kb, nb, alpha)
            if lo_a > 0 and kb > 0:
                out.append((math.log(lo_a / hi_b), math.log((ka / na) / (kb / nb))))
    return out


def _samples(meta, counts, epsilon, n, rng, sensitivity=None):
    return [laplace_counts(meta, counts, [WORD], epsilon, rng, sensitivity)[1][WORD]
            for _ in range(n)]


@pytest.fixture(scope="module")
def neighbours():
    meta_d, counts_d = _counts(D)
    meta_d2, counts_d2 = _counts(D + EXTRA)
    # the neighbouring datasets differ by exactly the bound, all on WORD
    assert counts_d2[WORD] - counts_d[WORD] == BOUND
    assert {w: c for w, c in counts_d2.items() if w != WORD} == \
        {w: c for w, c in counts_d.items() if w != WORD}
    return (meta_d, counts_d), (meta_d2, counts_d2)


def test_cli_releases_equal_library_releases(neighbours, tmp_path):
    (meta, counts), _ = neighbours
    src = tmp_path / "d.counts"
    from asrpriv.io.counts import write_counts

    with open(src, "w") as stream:
        write_counts(stream, meta, counts)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text(f"{WORD}\n")
    for seed in (1, 2, 3):
        result = run_cli(["add-noise", "--epsilon", "0.5", "--vocab", str(vocab), "--seed", str(seed),
                          "-q", str(src)])
        assert result.exit_code == 0, result.stderr
        cli_value = parse_counts("<cli>", enumerate(result.stdout.splitlines(), 1))[1][WORD]
        lib_value = laplace_counts(meta, counts, [WORD], Fraction(1, 2), noise_rng(seed))[1][WORD]
        assert cli_value == lib_value


def _check(neighbours, epsilon: Fraction, n: int, seed: int):
    (meta_d, counts_d), (meta_d2, counts_d2) = neighbours
    rng = random.Random(seed)
    sample_d = _samples(meta_d, counts_d, epsilon, n, rng)
    sample_d2 = _samples(meta_d2, counts_d2, epsilon, n, rng)
    bounds = _loss_bounds(sample_d, sample_d2, counts_d2[WORD])
    assert max(lo for lo, _ in bounds) <= float(epsilon)       # no violation shown
    assert max(est for _, est in bounds) == pytest.approx(float(epsilon), abs=0.15)  # resolution


def _check_detects_half_noise(neighbours, epsilon: Fraction, n: int, seed: int):
    """A mis-scaled mechanism (noise for sensitivity BOUND / 2) is caught by the same estimator."""
    (meta_d, counts_d), (meta_d2, counts_d2) = neighbours
    unbounded = [{k: v for k, v in m.items() if k != "max_l1"} for m in (meta_d, meta_d2)]
    rng = random.Random(seed)
    half = Fraction(BOUND) / 2
    sample_d = _samples(unbounded[0], counts_d, epsilon, n, rng, sensitivity=half)
    sample_d2 = _samples(unbounded[1], counts_d2, epsilon, n, rng, sensitivity=half)
    bounds = _loss_bounds(sample_d, sample_d2, counts_d2[WORD])
    assert max(lo for lo, _ in bounds) > float(epsilon)


def test_privacy_loss_within_epsilon(neighbours):
    _check(neighbours, Fraction(1, 2), 12000, seed=7)


def test_estimator_detects_a_mis_scaled_mechanism(neighbours):
    _check_detects_half_noise(neighbours, Fraction(1, 2), 4000, seed=8)


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [Fraction(1, 4), Fraction(1), Fraction(2)])
def test_privacy_loss_within_epsilon_long(neighbours, epsilon):
    _check(neighbours, epsilon, 100000, seed=int(epsilon * 100))
    _check_detects_half_noise(neighbours, epsilon, 20000, seed=int(epsilon * 100) + 1)
