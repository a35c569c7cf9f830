"""Our own Flower Strategy: asrpriv's sampling and server round, files written every round.

Round t (1-based, as ``aggregate``'s state counts it) of a run directory RUN:

1. ``configure_train``: the cohort is :func:`asrpriv.federated.rounds.sample_cohort` (the
   Poisson sample of ``fl-rounds``) of the population with rate q, round index t and
   ``--sample-seed`` -- the same clients as
   ``asrpriv sample-clients --rate q --round t --seed S`` -- written to
   ``RUN/round-t/clients.txt``; each sampled client's node gets the global model
   ``RUN/model-(t-1).pt`` (as Flower arrays) and its training settings, with training seed
   ``seed * 100000 + t`` (``bin/fl-finetune-experiment``'s rule).
2. ``aggregate_train``: replies are decoded into the delta files' dicts, sorted by client id
   (the order in which ``aggregate DIR`` reads ``DIR/<client>.delta.pt``), and handed to
   :func:`asrpriv.federated.rounds.server_round` (``fl-rounds``' server round), i.e. to
   :func:`asrpriv.federated.aggregate.run_round` -- the function ``asrpriv aggregate --server``
   runs: weighted FedAvg / FedAdam (paper 001 Eq. 5-8, state in ``RUN/state.pt``), server-side
   clipping, the Gaussian mechanism on the clipped sum with the fixed denominator *before* the
   optimizer (noise seed ``noise_seed * 100000 + t`` when given), the privacy history. It
   writes ``RUN/model-t.pt`` (atomically) and then the state; ``--save-deltas`` also keeps
   ``RUN/round-t/deltas/<client>.delta.pt``.

Failed clients: a client whose reply is an error (its ClientApp raised), that did not reply
within the round timeout, or whose delta fails the checks of ``aggregate`` (shape, dtype,
NaN/inf, weight, fingerprint) is dropped from the round and listed in
``RUN/round-t/report.json`` (``dropped``: client and reason). The round goes on with the
others. With DP this is covered by the fixed-denominator rule: the noise is calibrated to C
and the denominator D is fixed in advance, so a client that drops out only removes its
(clipped, capped) term from S -- the release's sensitivity and the accountant's event
(Poisson rate q, noise multiplier z) stay what they are, i.e. the accounting is conservative.
A round in which nobody contributes: with noise, the noise alone is released (S = 0); without
DP, the model is carried over unchanged (``model-t.pt`` = ``model-(t-1).pt``, state untouched),
as ``fl-rounds`` does for an empty cohort.

``report.json`` holds who was sampled and who dropped: like ``clients.txt`` it is the server's
private record (amplification by sampling assumes the cohort stays secret); the model file gets
only the public ``federated_round`` keys.
"""

from __future__ import annotations

import json
import os
import time

from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict
from flwr.serverapp.strategy import Strategy

from asrpriv.errors import AsrprivError
from asrpriv.federated.rounds import model_path, round_dir, write_json  # noqa: F401 - re-exported
from asrpriv_flower.settings import FlSettings  # noqa: F401 - the settings live there (no flwr)


def connect_nodes(grid, population: list[str], timeout: float = 120.0) -> dict[str, int]:
    """Wait for one node per client, ask each which client it holds (``query``): client -> node.

    A node answers with ``node_config["client"]`` (a deployed SuperNode) or its simulation
    ``partition-id``, an index into the sorted ``population``.
    """
    node_of: dict[str, int] = {}
    deadline = time.monotonic() + timeout
    while len(nodes := list(grid.get_node_ids())) < len(population):
        if time.monotonic() > deadline:
            raise AsrprivError(f"only {len(nodes)} of {len(population)} client nodes "
                               f"connected within {timeout:g} s")
        time.sleep(0.05)
    messages = [Message(RecordDict({"config": ConfigRecord({"ask": "client"})}),
                        dst_node_id=node, message_type="query") for node in nodes]
    for reply in grid.send_and_receive(messages, timeout=timeout):
        if reply.has_error():
            raise AsrprivError(f"node {reply.metadata.src_node_id} did not say which client "
                               f"it holds: {reply.error.reason}")
        answer = reply.content["node"]
        name = answer.get("client")
        if name is None:
            pid = int(answer["partition-id"])
            if not 0 <= pid < len(population):
                raise AsrprivError(f"node {reply.metadata.src_node_id}: partition id {pid} is "
                                   f"out of range (clients: {len(population)})")
            name = population[pid]
        if name in node_of:
            raise AsrprivError(f"client {name!r} is held by two nodes")
        node_of[str(name)] = reply.metadata.src_node_id
    missing = [c for c in population if c not in node_of]
    if missing:
        raise AsrprivError(f"{len(missing)} client(s) have no node (e.g. {missing[0]!r})")
    return node_of


class AsrprivStrategy(Strategy):
    """Poisson-sampled rounds of paper 001 with asrpriv's aggregation (see the module doc).

    Args:
        settings: the run's :class:`FlSettings`.
        population: every client id, sorted (the sampling population).
        first_round: the round index t of Flower's round 1 (> 1 when a run is resumed).
        talk: a ``talk(line)`` for progress lines (stderr).
    """

    def __init__(self, settings: FlSettings, population: list[str], first_round: int = 1,
                 talk=lambda s: None) -> None:
        self.s = settings
        self.population = list(population)
        self.first_round = first_round
        self.talk = talk
        self.node_of: dict[str, int] = {}
        self.sent: dict[int, str] = {}
        self.cohort: list[str] = []
        self.reports: list[dict] = []
        self.started = 0.0
        self._model: dict | None = None

    # ------------------------------------------------------------------ nodes
    def connect(self, grid, timeout: float = 120.0) -> None:
        """Wait for the nodes, ask each which client it holds (``query``), map client -> node."""
        self.node_of = connect_nodes(grid, self.population, timeout)

    # ------------------------------------------------------------------ train
    def round_of(self, server_round: int) -> int:
        return self.first_round + server_round - 1

    def configure_train(self, server_round, arrays, config, grid):
        from asrpriv.federated.fingerprint import model_fingerprint
        from asrpriv.federated.rounds import sample_cohort
        from asrpriv.nnlm.modelfile import read_model_file

        from asrpriv_flower.records import dumps, state_record

        t = self.round_of(server_round)
        self.started = time.monotonic()
        s = self.s
        payload = read_model_file(model_path(s.run_dir, t - 1))
        self._model = payload
        fingerprint = model_fingerprint(payload["config"], payload["vocab"], payload["state_dict"])
        self.cohort = sample_cohort(s, self.population, t)
        model = state_record(payload["state_dict"])
        common = {"round": t, "model-config": dumps(payload["config"]),
                  "vocab": list(payload["vocab"]), "model-fingerprint": fingerprint,
                  "model-privacy": dumps({k: payload[k] for k in ("private_raw", "privacy_history",
                                                                  "seeded") if k in payload}),
                  "train": os.path.abspath(s.train), "ids": bool(s.ids),
                  "utt2client": os.path.abspath(s.utt2client) if s.utt2client else "",
                  "max-words": int(s.max_words), "settings": dumps(s.training),
                  "confidence": s.confidence, "train-only": s.train_only,
                  "threads": int(s.threads), "device": s.device}
        seed = s.round_seed(s.seed, t)
        if seed is not None:
            common["seed"] = seed
        if s.clip is not None:
            common["clip"] = float(s.clip)
        self.sent = {}
        messages = []
        for name in self.cohort:
            cfg = dict(common, client=name)
            fault = s.test_faults.get(f"{name}@{t}", s.test_faults.get(name))
            if fault:
                cfg["test-fault"] = fault
            node = self.node_of[name]
            self.sent[node] = name
            messages.append(Message(RecordDict({"model": model, "config": ConfigRecord(cfg)}),
                                    dst_node_id=node, message_type="train", group_id=str(t)))
        return messages

    def aggregate_train(self, server_round, replies):
        from asrpriv.federated.rounds import server_round as finish_round

        from asrpriv_flower.records import delta_payload, record_state

        t = self.round_of(server_round)
        s = self.s
        model = self._model
        dropped: list[dict] = []
        skipped: list[str] = []
        payloads: dict[str, dict] = {}
        answered = set()
        for reply in replies:
            node = reply.metadata.src_node_id
            name = self.sent.get(node)
            if name is None or node in answered:
                continue
            answered.add(node)
            if reply.has_error():
                dropped.append({"client": name, "reason": f"error: {reply.error.reason}"})
                continue
            try:
                meta = reply.content["meta"]
                if str(meta["client"]) != name:
                    raise ValueError(f"reply names client {meta['client']!r}")
                if "skipped" in meta:
                    skipped.append(name)
                    continue
                keys = json.loads(str(meta["meta-json"]))
                payloads[name] = delta_payload(record_state(reply.content["delta"]), model["vocab"],
                                               model["config"], keys)
            except (KeyError, ValueError, TypeError) as err:
                dropped.append({"client": name, "reason": f"bad reply: {err}"})
        for node, name in self.sent.items():
            if node not in answered:
                dropped.append({"client": name, "reason": "no reply within "
                                f"{s.round_timeout:g} s" if s.round_timeout else "no reply"})

        summary = finish_round(s, t, self.cohort, payloads, dropped, skipped, self.started,
                               self.talk, prog="fl-simulate")
        self.reports.append(summary)
        out = model_path(s.run_dir, t)
        from asrpriv.nnlm.modelfile import read_model_file

        new_state = read_model_file(out)["state_dict"]
        metrics = MetricRecord({"contributed": len(summary["contributed"]),
                                "dropped": len(summary["dropped"])})
        return ArrayRecord(torch_state_dict=new_state), metrics

    # ------------------------------------------------------------------ no federated evaluation
    def configure_evaluate(self, server_round, arrays, config, grid):
        return []

    def aggregate_evaluate(self, server_round, replies):
        return None

    def summary(self) -> None:
        self.talk(f"fl-simulate: {self.s.rounds} round(s) from round {self.first_round}, "
                  f"{self.s.server}, q {self.s.sample_rate:g} of {len(self.population)} clients")
