"""privacy.accounting and privacy-report against direct dp-accounting calls; Poisson sampling."""

from __future__ import annotations

import json

import pytest
from dp_accounting import dp_event, pld, rdp

from conftest import run_cli

from asrpriv.privacy import accounting
from asrpriv.privacy.history import History, Release, new_release_id

#: paper 001: q = 0.01, T = 1000, delta = 1e-5; dp-accounting 0.6's values (issue 15)
PAPER = {0.2: (253.0, 228.7), 0.5: (15.47, 13.36), 1.5: (1.013, 0.918)}


def direct(z, q, rounds, delta, which):
    event = dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(z)), rounds)
    accountant = (rdp.RdpAccountant() if which == "rdp"
                  else pld.PLDAccountant(value_discretization_interval=1e-4))
    accountant.compose(event)
    return accountant.get_epsilon(delta)


@pytest.mark.parametrize("z", [0.5, 1.5, pytest.param(0.2, marks=pytest.mark.slow)])
def test_paper_setting_equals_a_direct_dp_accounting_call(z):
    result = run_cli(["privacy-report", "--noise-multiplier", str(z), "--sample-rate", "0.01",
                      "--rounds", "1000", "--delta", "1e-5", "--json"])
    assert result.exit_code == 0, result.stderr
    got = json.loads(result.stdout)
    assert got["epsilon_rdp"] == pytest.approx(direct(z, 0.01, 1000, 1e-5, "rdp"), rel=1e-12)
    assert got["epsilon_pld"] == pytest.approx(direct(z, 0.01, 1000, 1e-5, "pld"), rel=1e-12)
    rdp_value, pld_value = PAPER[z]
    assert got["epsilon_rdp"] == pytest.approx(rdp_value, abs=0.0051 * max(1, rdp_value / 10))
    assert got["epsilon_pld"] == pytest.approx(pld_value, abs=0.0051 * max(1, pld_value / 10))


def test_paper_rdp_at_z02_without_pld():
    eps, order = accounting.epsilon_rdp_event(accounting.gaussian_event(0.2, 0.01, 1000), 1e-5)
    assert eps == pytest.approx(direct(0.2, 0.01, 1000, 1e-5, "rdp"), rel=1e-12)
    assert round(eps, 1) == 253.0 and eps > 248.6  # the paper's 248.6 is below the RDP bound


def _release(mechanism, partition="", **params):
    return Release(new_release_id(), mechanism, "client", params, partition)


def test_history_composes_laplace_and_gaussian_in_one_accountant():
    lap1 = _release("laplace", epsilon=0.5, sensitivity_l1=1.0, grid=0.25)
    lap2 = _release("laplace", epsilon=1.5, sensitivity_l1=2.0, grid=0.25)
    gauss = _release("gaussian", noise_multiplier=1.2, sensitivity_l2=0.5, sample_rate=0.02,
                     rounds=50)
    history = History().add(lap1).add(gauss).add(lap2)
    total = accounting.history_epsilon(history, 1e-6)
    events = [dp_event.LaplaceDpEvent(1 / 0.5), dp_event.LaplaceDpEvent(1 / 1.5),
              dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(
                  0.02, dp_event.GaussianDpEvent(1.2)), 50)]
    for which, value in (("rdp", total.epsilon_rdp), ("pld", total.epsilon_pld)):
        accountant = (rdp.RdpAccountant() if which == "rdp"
                      else pld.PLDAccountant(value_discretization_interval=1e-4))
        accountant.compose(dp_event.ComposedDpEvent(events))
        assert value == pytest.approx(accountant.get_epsilon(1e-6), rel=1e-6), which
    assert total.epsilon_pure is None


def test_laplace_only_history_and_parallel_groups():
    a = _release("laplace", partition="r0", epsilon=1.0, sensitivity_l1=1.0, grid=1.0)
    b = _release("laplace", partition="r1", epsilon=2.0, sensitivity_l1=1.0, grid=1.0)
    c = _release("laplace", partition="r1", epsilon=0.5, sensitivity_l1=1.0, grid=1.0)
    history = History.combine([History().add(a), History().add(b).add(c)], disjoint=True)
    total = accounting.history_epsilon(history, 1e-5)
    assert total.epsilon_pure == pytest.approx(2.5)  # max(1, 2 + 0.5)
    worst = rdp.RdpAccountant()
    worst.compose(dp_event.ComposedDpEvent([dp_event.LaplaceDpEvent(0.5),
                                            dp_event.LaplaceDpEvent(2.0)]))
    assert total.epsilon_rdp == pytest.approx(worst.get_epsilon(1e-5), rel=1e-9)
    worst_pld = pld.PLDAccountant(value_discretization_interval=1e-4)
    worst_pld.compose(dp_event.ComposedDpEvent([dp_event.LaplaceDpEvent(0.5),
                                                dp_event.LaplaceDpEvent(2.0)]))
    assert total.epsilon_pld == pytest.approx(worst_pld.get_epsilon(1e-5), rel=1e-6)
    assert not total.pld_note
    # a parallel group inside a sequence: RDP per order (max), PLD as an upper bound with a note
    d = _release("laplace", epsilon=0.3, sensitivity_l1=1.0, grid=1.0)
    nested = history.add(d)
    total2 = accounting.history_epsilon(nested, 1e-5)
    assert total2.epsilon_rdp > total.epsilon_rdp and total2.pld_note
    assert total2.epsilon_pure == pytest.approx(2.8)


def test_empty_and_mixed_unit_histories():
    assert accounting.history_epsilon(History(), 1e-5).epsilon_rdp == 0.0
    a = Release(new_release_id(), "laplace", "utterance", {"epsilon": 1.0, "sensitivity_l1": 1.0,
                                                           "grid": 1.0})
    b = _release("laplace", epsilon=1.0, sensitivity_l1=1.0, grid=1.0)
    total = accounting.history_epsilon(History().add(a).add(b), 1e-5)
    assert total.epsilon_rdp is None and "units" in total.error


def test_privacy_report_on_a_counts_file(tmp_path):
    from asrpriv.unigram.meta import with_history

    release = _release("laplace", epsilon=2.0, sensitivity_l1=1.0, grid=1.0)
    meta = with_history({"format": "asrpriv-counts/2", "unit": "client", "noise": "laplace"},
                        History().add(release))
    counts = tmp_path / "c.counts"
    counts.write_text("".join(f"#{k}={v}\n" for k, v in meta.items()) + "a\t3\n")
    result = run_cli(["privacy-report", str(counts)])
    assert result.exit_code == 0, result.stderr
    assert "laplace per client" in result.stdout and "2 (pure DP" in result.stdout
    result = run_cli(["privacy-report", str(counts), "--json", "--delta", "1e-6"])
    obj = json.loads(result.stdout)
    single = rdp.RdpAccountant()
    single.compose(dp_event.LaplaceDpEvent(0.5))
    assert obj["epsilon_rdp"] == pytest.approx(single.get_epsilon(1e-6), rel=1e-9)
    assert obj["epsilon_pure"] == 2.0


def test_privacy_report_usage_errors():
    result = run_cli(["privacy-report", "--noise-multiplier", "1", "--json"])
    assert result.exit_code == 2 and "--sample-rate" in result.stderr


def test_poisson_sampling_rate_binomial_test_and_reproducibility(tmp_path):
    from scipy import stats

    from asrpriv.federated.sampling import poisson_sample

    clients = [f"spk{i:05d}" for i in range(20000)]
    for seed in (4, None):
        chosen = poisson_sample(clients, 0.03, 7, seed)
        assert stats.binomtest(len(chosen), len(clients), 0.03).pvalue > 1e-4
    # over rounds each client is in about q of them, independently of the others
    rounds = [set(poisson_sample(clients[:2000], 0.1, t, 1)) for t in range(50)]
    per_client = [sum(c in r for r in rounds) for c in clients[:2000]]
    assert stats.chisquare(
        [per_client.count(k) for k in range(4)] + [sum(n >= 4 for n in per_client)],
        [2000 * stats.binom.pmf(k, 50, 0.1) for k in range(4)]
        + [2000 * stats.binom.sf(3, 50, 0.1)]).pvalue > 1e-4
    # seeded: repeatable, independent of the file's order and of other clients
    again = poisson_sample(list(reversed(clients)), 0.03, 7, 4)
    assert set(again) == set(poisson_sample(clients, 0.03, 7, 4))
    assert set(poisson_sample(clients[:100], 0.03, 7, 4)) == \
        set(poisson_sample(clients, 0.03, 7, 4)) & set(clients[:100])
    assert poisson_sample(clients, 0.03, 8, 4) != poisson_sample(clients, 0.03, 7, 4)
    # the command writes the same list
    listing = tmp_path / "clients.txt"
    listing.write_text("# all\n" + "\n".join(clients[:3000]) + "\n")
    result = run_cli(["sample-clients", "--rate", "0.05", "--round", "2", "--seed", "9",
                      str(listing)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split() == poisson_sample(clients[:3000], 0.05, 2, 9)
    listing.write_text("a\nb\na\n")
    result = run_cli(["sample-clients", "--rate", "0.5", "--round", "0", str(listing)])
    assert result.exit_code == 2 and "repeats" in result.stderr
