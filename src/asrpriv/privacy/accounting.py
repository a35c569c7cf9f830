"""(epsilon, delta) of privacy histories with Google's ``dp-accounting`` (RDP and PLD).

Each release of a :class:`asrpriv.privacy.history.History` becomes a ``DpEvent``:

- ``gaussian`` (noise_multiplier z, sample_rate q, rounds T):
  ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z)), T)``; q = 1 drops the
  sampling (``GaussianDpEvent(z)`` composed T times). The sensitivity is already folded into z
  (noise std = z * sensitivity_l2), so it does not enter the accountant.
- ``laplace`` (epsilon): ``LaplaceDpEvent(1 / epsilon)`` (noise scale b over sensitivity 1).

Both under add/remove-one-unit adjacency (the accountants' default neighbouring relation),
which is how the releases are calibrated (``unit`` = utterance or client; a history that mixes
units has no single epsilon and is refused).

**RDP** (:class:`dp_accounting.rdp.RdpAccountant`, its default orders): the history's tree is
evaluated per order -- a release's RDP curve from the accountant, ``seq`` = sum of the curves,
``par`` = their maximum order by order (parallel composition holds per order) -- then converted
to epsilon at ``delta`` by ``rdp_privacy_accountant.compute_epsilon`` (the accountant's own
conversion). For a tree without ``par`` this is exactly the accountant fed every event.

**PLD** (:class:`dp_accounting.pld.PLDAccountant`, value_discretization_interval 1e-4): a
``seq`` of events is composed in one accountant (identical releases grouped into one
``SelfComposedDpEvent``, which the accountant composes by repeated squaring); a top-level
``par`` takes the worst child's epsilon. A ``par`` nested inside a ``seq`` has no PLD here;
it is composed as if sequential, which can only over-state epsilon (reported as
``pld_note``).

Paper 001's numbers (q = 0.01, T = 1000, delta = 1e-5, z = 0.2 / 0.5 / 1.5): the paper prints
epsilon 248.6 / 14.2 / 0.9; dp-accounting 0.6 gives 253.0 / 15.47 / 1.013 by RDP and
228.7 / 13.36 / 0.918 by PLD. 248.6 is below the RDP bound at every order (the minimum over a
fine grid of orders down to 1.01 is 252.93), so no grid of orders reproduces it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from asrpriv.privacy.history import History, Release

from asrpriv.errors import arg

#: PLD discretization of the privacy-loss values (dp-accounting's default)
PLD_DISCRETIZATION = 1e-4


def release_event(release: Release):
    """The ``DpEvent`` of one release (see the module docstring)."""
    from dp_accounting import dp_event

    p = release.params
    if release.mechanism == "laplace":
        return dp_event.LaplaceDpEvent(1.0 / float(p["epsilon"]))
    if release.mechanism == "gaussian":
        return gaussian_event(float(p["noise_multiplier"]), float(p["sample_rate"]),
                              int(p["rounds"]))
    raise ValueError(f"no accountant event for mechanism {release.mechanism!r}")


def gaussian_event(z: float, q: float, rounds: int):
    """T rounds of the Poisson-subsampled Gaussian mechanism with noise multiplier z, rate q."""
    from dp_accounting import dp_event

    if not z > 0 or not 0 < q <= 1 or rounds < 1:
        raise ValueError("need z > 0, 0 < q <= 1 and rounds >= 1")
    one = dp_event.GaussianDpEvent(z)
    if q < 1:
        one = dp_event.PoissonSampledDpEvent(q, one)
    return dp_event.SelfComposedDpEvent(one, int(rounds))


def _check_delta(delta: float) -> None:
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")


def epsilon_rdp_event(event, delta: float) -> tuple[float, float]:
    """(epsilon, optimal order) of one event by RDP at the default orders."""
    from dp_accounting import rdp

    _check_delta(delta)
    accountant = rdp.RdpAccountant()
    accountant.compose(event)
    eps, order = accountant.get_epsilon_and_optimal_order(delta)
    return float(eps), float(order)


def epsilon_pld_event(event, delta: float) -> float:
    """epsilon of one event by PLD (discretization :data:`PLD_DISCRETIZATION`)."""
    from dp_accounting import pld

    _check_delta(delta)
    accountant = pld.PLDAccountant(value_discretization_interval=PLD_DISCRETIZATION)
    accountant.compose(event)
    return float(accountant.get_epsilon(delta))


def gaussian_epsilons(z: float, q: float, rounds: int, delta: float) -> dict:
    """epsilon at ``delta`` of T rounds of the Poisson-subsampled Gaussian, by RDP and by PLD."""
    event = gaussian_event(z, q, rounds)
    eps_rdp, order = epsilon_rdp_event(event, delta)
    return {"noise_multiplier": z, "sample_rate": q, "rounds": int(rounds), "delta": delta,
            "epsilon_rdp": eps_rdp, "rdp_order": order,
            "epsilon_pld": epsilon_pld_event(event, delta)}


@dataclass
class HistoryEpsilon:
    """The total epsilon of a history at ``delta`` (None where undefined, with a note)."""

    delta: float
    epsilon_rdp: float | None
    epsilon_pld: float | None
    epsilon_pure: float | None = None
    pld_note: str = ""
    error: str = ""

    def as_dict(self) -> dict:
        out = {"delta": self.delta, "epsilon_rdp": self.epsilon_rdp,
               "epsilon_pld": self.epsilon_pld}
        if self.epsilon_pure is not None:
            out["epsilon_pure"] = self.epsilon_pure
        if self.pld_note:
            out["pld_note"] = self.pld_note
        if self.error:
            out["error"] = self.error
        return out


def _key(release: Release) -> tuple:
    return (release.mechanism, tuple(sorted(release.params.items())))


def history_epsilon(history: History, delta: float, pld_too: bool = True) -> HistoryEpsilon:
    """Total epsilon of ``history`` at ``delta`` by RDP and PLD (see the module docstring).

    The empty history costs 0. A history mixing adjacency units gets None with ``error``.
    """
    _check_delta(delta)
    if history.tree is None:
        return HistoryEpsilon(delta, 0.0, 0.0, 0.0)
    if len(history.units()) > 1:
        return HistoryEpsilon(delta, None, None, None,
                              error=f"the history mixes adjacency units {sorted(history.units())}: "
                                    "no single epsilon")
    pure = None
    if all(r.mechanism == "laplace" for r in history.releases):
        pure = history.epsilon_pure()
    eps_rdp = _rdp_tree(history, delta)
    eps_pld, note = _pld_tree(history, delta) if pld_too else (None, "")
    return HistoryEpsilon(delta, eps_rdp, eps_pld, pure, note)


def _rdp_tree(history: History, delta: float) -> float:
    import numpy as np
    from dp_accounting import rdp
    from dp_accounting.rdp import rdp_privacy_accountant

    cache: dict[tuple, np.ndarray] = {}
    orders = None

    def curve(tree) -> np.ndarray:
        nonlocal orders
        if isinstance(tree, int):
            release = history.releases[tree]
            key = _key(release)
            if key not in cache:
                accountant = rdp.RdpAccountant()
                accountant.compose(release_event(release))
                cache[key] = accountant.rdp
                orders = accountant.orders
            return cache[key]
        kind, children = tree
        curves = [curve(child) for child in children]
        return np.sum(curves, axis=0) if kind == "seq" else np.max(curves, axis=0)

    total = curve(history.tree)
    eps, _ = rdp_privacy_accountant.compute_epsilon(orders, total, delta)
    return float(eps)


def _pld_tree(history: History, delta: float) -> tuple[float, str]:
    from dp_accounting import dp_event

    note = []

    def events(tree) -> list:
        """The releases under ``tree`` as events (a nested par flattened: an upper bound)."""
        if isinstance(tree, int):
            return [history.releases[tree]]
        kind, children = tree
        if kind == "par":
            note.append("a parallel composition inside a sequential one was composed "
                        "sequentially (PLD upper bound)")
        return [r for child in children for r in events(child)]

    def seq_epsilon(releases: list[Release]) -> float:
        groups: dict[tuple, list] = {}
        for release in releases:
            groups.setdefault(_key(release), [release, 0])[1] += 1
        parts = [dp_event.SelfComposedDpEvent(release_event(r), n) for r, n in groups.values()]
        event = parts[0] if len(parts) == 1 else dp_event.ComposedDpEvent(parts)
        return epsilon_pld_event(event, delta)

    tree = history.tree
    if isinstance(tree, tuple) and tree[0] == "par":
        eps = max(seq_epsilon(events(child)) for child in tree[1])
    else:
        eps = seq_epsilon(events(tree))
    return eps, "; ".join(dict.fromkeys(note))


def describe_release(release: Release) -> str:
    """One line for a human: mechanism, unit, parameters, partition, seeded mark."""
    params = ", ".join(f"{k}={_num(v)}" for k, v in sorted(release.params.items()))
    part = f", partition {release.partition}" if release.partition else ""
    seeded = ", SEEDED (not private)" if release.seeded else ""
    return f"{release.release_id[:8]} {release.mechanism} per {release.unit}: {params}{part}{seeded}"


def _num(value) -> str:
    return f"{value:.6g}" if isinstance(value, float) and not math.isnan(value) else str(value)


def check_sample_rate(q: float, what: str | None = None) -> None:
    """The one check of a Poisson sampling rate q (each client takes part in a round with
    probability q, as the accountant assumes): a number in (0, 1], else :class:`AsrprivError`
    naming ``what`` (default: ``sample_rate``). Used by aggregate, sample-clients and
    fl-simulate."""
    from asrpriv.errors import AsrprivError

    what = what or arg("sample_rate")
    if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 < q <= 1:
        raise AsrprivError(f"{what} must be in (0, 1]")
