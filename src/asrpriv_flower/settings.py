"""The settings of ``asrpriv fl-simulate`` (:class:`FlSettings`), without flwr: the step's
entry (:func:`asrpriv_flower.simulate.simulate`) checks for Flower before it imports it.

:class:`FlSettings` is the library's :class:`asrpriv.federated.rounds.RoundSettings`, the
settings of ``fl-rounds`` too: the two faces run the same sampling and server round."""

from __future__ import annotations

from asrpriv.federated.rounds import settings_json  # noqa: F401
from asrpriv.federated.rounds import RoundSettings as FlSettings  # noqa: F401 - one dataclass


def client_resources(cpus_per_client: float, gpus_per_client: float) -> tuple[int, str]:
    """A client's torch threads and device from Flower's ``client_resources``: one thread per
    whole CPU (at least one), cuda when it is given a GPU share."""
    return max(1, int(cpus_per_client)), "cuda" if gpus_per_client > 0 else "cpu"
