"""The settings of ``asrpriv fl-simulate`` (:class:`FlSettings`), without flwr: the step's
entry (:func:`asrpriv_flower.simulate.simulate`) checks for Flower before it imports it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field



@dataclass
class FlSettings:
    """Everything a simulated run needs (the options of ``asrpriv fl-simulate``)."""

    init: str
    train: str
    run_dir: str
    rounds: int
    sample_rate: float
    ids: bool = False
    utt2client: str | None = None
    clients: str | None = None
    max_words: int = 1000
    sample_seed: int | None = None
    seed: int | None = None
    server: str = "fedadam"
    hparams: dict = field(default_factory=dict)
    clip: float | None = None
    noise_multiplier: float | None = None
    expected_clients: float | None = None
    expected_weight: float | None = None
    weight_cap: float | None = None
    noise_seed: int | None = None
    allow_seeded: bool = False
    training: dict = field(default_factory=dict)
    confidence: str = "none"
    train_only: str = "all"
    threads: int = 1
    device: str = "cpu"
    round_timeout: float | None = None
    save_deltas: bool = False
    #: tests only: "client" or "client@round" -> "raise" or "sleep:SECONDS" (sent in its message)
    test_faults: dict = field(default_factory=dict)

    def dp(self):
        """The server's :class:`asrpriv.federated.aggregate.DpSettings` (inactive without DP)."""
        from asrpriv.federated.aggregate import DpSettings

        if all(x is None for x in (self.noise_multiplier, self.expected_clients,
                                   self.expected_weight, self.weight_cap)):
            return DpSettings()
        return DpSettings(self.noise_multiplier, self.clip, self.expected_clients,
                          self.expected_weight, self.weight_cap, self.sample_rate)

    def round_seed(self, base: int | None, t: int) -> int | None:
        from asrpriv.federated.seeds import derive_seed  # the one rule: base * 100000 + t

        return derive_seed(base, t)


def client_resources(cpus_per_client: float, gpus_per_client: float) -> tuple[int, str]:
    """A client's torch threads and device from Flower's ``client_resources``: one thread per
    whole CPU (at least one), cuda when it is given a GPU share."""
    return max(1, int(cpus_per_client)), "cuda" if gpus_per_client > 0 else "cpu"


def settings_json(settings: FlSettings) -> dict:
    """The run's settings as written to RUN/run.json (test faults left out)."""
    value = asdict(settings)
    value.pop("test_faults", None)
    return value
