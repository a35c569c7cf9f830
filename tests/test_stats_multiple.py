"""Holm's step-down adjustment against a hand-worked case and statsmodels' definition."""

import pytest

from asrpriv.stats.multiple import holm_adjust


def test_holm_hand_worked():
    # m = 4; sorted 0.01, 0.02, 0.03, 0.5 -> 4*0.01=0.04, 3*0.02=0.06, 2*0.03=0.06, 1*0.5=0.5
    assert holm_adjust([0.03, 0.5, 0.01, 0.02]) == pytest.approx([0.06, 0.5, 0.04, 0.06])


def test_holm_monotone_and_capped():
    # 3 * 0.4 = 1.2 is capped at 1; the step-down max keeps later values >= earlier ones
    assert holm_adjust([0.4, 0.45, 0.001]) == pytest.approx([0.8, 0.8, 0.003])
    assert holm_adjust([0.9, 0.9]) == pytest.approx([1.0, 1.0])


def test_holm_none_is_not_counted():
    out = holm_adjust([0.01, None, 0.04])
    assert out[1] is None and out[0] == pytest.approx(0.02) and out[2] == pytest.approx(0.04)


def test_holm_brute_force_definition():
    pvals = [0.001, 0.2, 0.015, 0.04, 0.03]
    m = len(pvals)
    order = sorted(range(m), key=lambda i: pvals[i])
    for pos, i in enumerate(order):
        expected = max(min(1.0, (m - j) * pvals[order[j]]) for j in range(pos + 1))
        assert holm_adjust(pvals)[i] == pytest.approx(expected)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), "0.1"])
def test_holm_refuses_bad_values(bad):
    with pytest.raises(ValueError):
        holm_adjust([0.1, bad])
