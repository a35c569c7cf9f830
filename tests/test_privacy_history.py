"""The privacy history: releases, their composition tree, JSON round trip, pure-DP epsilon."""

import json
import math

import pytest

from asrpriv.privacy.history import History, Release, new_release_id


def lap(eps, partition="", seeded=False, unit="utterance"):
    return Release(new_release_id(), "laplace", unit,
                   {"epsilon": eps, "sensitivity_l1": 20.0, "grid": 2.0 ** -10}, partition, seeded)


def test_sequential_adds_parallel_takes_max():
    a, b, c = lap(1.0, "alice"), lap(0.5, "bob"), lap(0.25)
    par = History.combine([History().add(a), History().add(b)], disjoint=True)
    assert par.epsilon_pure() == 1.0
    seq = par.add(c)
    assert seq.epsilon_pure() == 1.25
    assert History.combine([History().add(a), History().add(b)], disjoint=False).epsilon_pure() == 1.5
    assert History().epsilon_pure() == 0.0


def test_reuse_counts_once_but_disjoint_reuse_refused():
    a = lap(1.0, "alice")
    h = History().add(a)
    assert History.combine([h, h], disjoint=False).epsilon_pure() == 1.0
    assert h.add(a).epsilon_pure() == 1.0
    with pytest.raises(ValueError, match="two inputs"):
        History.combine([h, h], disjoint=True)


def test_disjoint_needs_labels_and_distinct_labels():
    with pytest.raises(ValueError, match="no partition label"):
        History.combine([History().add(lap(1.0)), History().add(lap(1.0, "x"))], disjoint=True)
    with pytest.raises(ValueError, match="not disjoint"):
        History.combine([History().add(lap(1.0, "x,y")), History().add(lap(1.0, "y"))], disjoint=True)


def test_pruned_reuse_inside_parallel_group_stays_sound():
    # units of r1 are charged by the first input; r2 (disjoint from r1) adds in sequence
    r1, r2, r3 = lap(1.0, "a"), lap(2.0, "b"), lap(0.5, "c")
    first = History.combine([History().add(r1), History().add(r3)], disjoint=True)   # max 1
    second = History.combine([History().add(r1), History().add(r2)], disjoint=True)  # max 2
    both = History.combine([first, second], disjoint=False)
    assert len(both) == 3
    # per-unit worst case: a unit of 'b' sees r2 only (2.0); tree gives max(1, .5) + 2 = 3 >= 2
    assert both.epsilon_pure() == 3.0


def test_json_round_trip_and_refusals():
    g = Release(new_release_id(), "gaussian", "client",
                {"noise_multiplier": 1.1, "sensitivity_l2": 0.5, "sample_rate": 0.1, "rounds": 30})
    h = History.combine([History().add(lap(1.0, "a", seeded=True)), History().add(lap(2.0, "b"))],
                        disjoint=True).add(g)
    text = h.to_json()
    assert "\t" not in text and "\n" not in text
    back = History.from_json(text)
    assert back == h and back.to_json() == text and back.seeded
    with pytest.raises(ValueError, match="non-Laplace"):
        back.epsilon_pure()
    obj = json.loads(text)
    for bad in ("{", "[]", text.replace('"asrpriv-history/1"', '"x"'),
                text.replace("1.1", "NaN"), text.replace("1.1", "-1.1"),
                text.replace('"client"', '"banana"'), text.replace('"gaussian"', '"magic"'),
                text.replace("0.1", "1.5")):
        with pytest.raises(ValueError):
            History.from_json(bad)
    obj["releases"][1]["id"] = obj["releases"][0]["id"]
    with pytest.raises(ValueError):
        History.from_json(json.dumps(obj))


@pytest.mark.parametrize("params", [
    {"epsilon": -1.0, "sensitivity_l1": 1.0, "grid": 1.0},
    {"epsilon": math.inf, "sensitivity_l1": 1.0, "grid": 1.0},
    {"epsilon": math.nan, "sensitivity_l1": 1.0, "grid": 1.0},
    {"epsilon": 1.0, "sensitivity_l1": 0.0, "grid": 1.0},
    {"epsilon": 1.0, "sensitivity_l1": 1.0},
    {"epsilon": 1.0, "sensitivity_l1": 1.0, "grid": 1.0, "extra": 1},
    {"epsilon": True, "sensitivity_l1": 1.0, "grid": 1.0},
])
def test_bad_release_params_refused(params):
    with pytest.raises(ValueError):
        Release(new_release_id(), "laplace", "utterance", params)


def test_mixed_units_refused_in_pure_epsilon():
    h = History().add(lap(1.0)).add(lap(1.0, unit="client"))
    with pytest.raises(ValueError, match="mixes"):
        h.epsilon_pure()


def test_label_paths_nest():
    with pytest.raises(ValueError, match="overlap"):
        History.combine([History().add(lap(1.0, "r0")), History().add(lap(1.0, "r0/alice"))], disjoint=True)
    ok = History.combine([History().add(lap(1.0, "r0/alice")), History().add(lap(1.0, "r0/alicia"))],
                         disjoint=True)
    assert ok.epsilon_pure() == 1.0


def test_unseeded_json_never_mentions_seed():
    assert "seed" not in History().add(lap(1.0)).to_json()
    assert "seed" in History().add(lap(1.0, seeded=True)).to_json()
