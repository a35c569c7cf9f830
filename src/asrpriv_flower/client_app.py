"""The Flower ClientApp: one client's update of a round, by asrpriv's own client code.

``train``: rebuild the global model from the message (checked like a model file; its
fingerprint must be the one the server announced), fine-tune it on this client's part of the
adaptation data with :func:`asrpriv.federated.client.client_update` (the training loop, seed,
confidence losses and ``--clip`` of ``finetune-lm --by-client``), reply with the delta
``init - new`` and the delta file's metadata (:mod:`asrpriv_flower.records`).

``query``: (also imports torch and the training code, so that a worker's start-up is not
charged to round 1's timeout) say which client this node is: ``node_config["client"]`` on a deployed SuperNode
(``flower-supernode --node-config 'client="ES2002a"'``), else the simulation's
``partition-id`` (the server maps it to its sorted client list).

Data: the client reads its sentences from our files (``--train`` TSV or Kaldi text with the
client column or ``--utt2client``), grouped by :func:`asrpriv.federated.by_client.group_by_client`
exactly as ``finetune-lm --by-client`` does; each worker process reads a file once (cache).

``test-fault`` in a message's config (tests only; never set by ``fl-simulate``) makes the
client raise or sleep, to exercise the server's handling of failed clients.
"""

from __future__ import annotations

import json
import time

_DATA: dict = {}
_INIT: dict = {}


def client_groups(cfg) -> dict:
    """The clients' data of the training input named in ``cfg`` (cached per process)."""
    key = (cfg["train"], bool(cfg["ids"]), cfg.get("utt2client", ""), int(cfg["max-words"]))
    if key not in _DATA:
        from asrpriv.federated.by_client import group_by_client
        from asrpriv.nnlm.data import read_corpus

        corpus = read_corpus(key[0], ids=key[1], max_words=key[3])
        client_of = None
        if key[2]:
            from asrpriv.io.kaldi import read_map

            client_of = read_map(key[2], "client")
        _DATA.clear()
        _DATA[key] = group_by_client(corpus, key[0], client_of)
    return _DATA[key]


def init_model(record, cfg, device: str):
    """The round's global model as an :class:`asrpriv.federated.client.InitModel`.

    Cached by fingerprint: a worker that trains several clients of a round builds the module
    and fingerprints the weights once (the cached fingerprint was computed from the weights
    themselves, so an equal announced fingerprint means equal weights).
    """
    from asrpriv.errors import AsrprivError
    from asrpriv.federated.client import init_from_payload

    from asrpriv_flower.records import model_payload, record_state

    announced = cfg["model-fingerprint"]
    cached = _INIT.get("init")
    if cached is not None and cached.fingerprint == announced and cached.device == device:
        return cached
    _INIT.clear()
    payload = model_payload(record_state(record), list(cfg["vocab"]), json.loads(cfg["model-config"]))
    payload.update(json.loads(cfg.get("model-privacy", "{}")))  # its privacy record, as in its file
    init = init_from_payload(payload, f"global model of round {cfg['round']}", device)
    if init.fingerprint != announced:
        raise AsrprivError(f"the received model's fingerprint {init.fingerprint[:12]} is not the "
                           f"announced {announced[:12]}")
    _INIT["init"] = init
    return init


def train_message(msg, context):
    """Handle a ``train`` message: one client update; reply delta + metadata (or skipped)."""
    import torch
    from flwr.app import ConfigRecord, Message, MetricRecord, RecordDict

    from asrpriv.federated import client

    from asrpriv_flower.records import dumps, state_record

    cfg = msg.content["config"]
    name = str(cfg["client"])
    fault = str(cfg.get("test-fault", ""))
    if fault == "raise":
        raise RuntimeError(f"client {name}: injected test fault")
    if fault.startswith("sleep:"):
        time.sleep(float(fault.split(":", 1)[1]))
    own = context.node_config.get("client")
    if own is not None and str(own) != name:
        raise RuntimeError(f"this node holds client {own!r}, the server asked for {name!r}")
    groups = client_groups(cfg)
    if name not in groups:
        raise RuntimeError(f"client {name!r} has no utterance in {cfg['train']}")
    data = groups[name]
    torch.set_num_threads(int(cfg["threads"]))
    device = str(cfg.get("device", "cpu"))
    init = init_model(msg.content["model"], cfg, device)
    seed = int(cfg["seed"]) if "seed" in cfg else None
    clip = float(cfg["clip"]) if "clip" in cfg else None
    confidence, train_only = str(cfg["confidence"]), str(cfg["train-only"])
    try:
        update = client.client_update(init, data.sentences, data.confidences,
                                      settings=json.loads(cfg["settings"]), seed=seed, clip=clip,
                                      confidence=confidence, train_only=train_only)
    except ValueError as err:
        if "no training sentences" not in str(err):
            raise
        update = None
    if update is None or update.weight == 0:  # by_client skips such a client too
        meta = ConfigRecord({"client": name, "skipped": "no training words"})
        return Message(RecordDict({"meta": meta}), reply_to=msg)
    result = update.train
    keys = {"weight": int(update.weight),
            **client.delta_metadata(init, update, name, train_words=result.words,
                                    train_sentences=result.sentences, confidence=confidence,
                                    train_only=train_only, seed=seed,
                                    epochs_run=len(result.history))}
    content = RecordDict({
        "delta": state_record(update.delta),
        "meta": ConfigRecord({"client": name, "meta-json": dumps(keys)}),
        "metrics": MetricRecord({"num-examples": int(update.weight), "norm": float(update.norm)}),
    })
    return Message(content, reply_to=msg)


def query_message(msg, context):
    """Handle a ``query`` message: this node's client id or partition id."""
    from flwr.app import ConfigRecord, Message, RecordDict

    import asrpriv.federated.client  # noqa: F401  warm-up: torch and the training loop are
    import asrpriv.nnlm.train  # noqa: F401  imported before round 1's clock starts

    node = context.node_config
    answer = {"partition-id": int(node.get("partition-id", -1))}
    if node.get("client") is not None:
        answer["client"] = str(node["client"])
    return Message(RecordDict({"node": ConfigRecord(answer)}), reply_to=msg)


def make_client_app():
    """A fresh :class:`flwr.clientapp.ClientApp` with the ``train`` and ``query`` handlers."""
    from flwr.clientapp import ClientApp

    app = ClientApp()
    app.train()(train_message)
    app.query()(query_message)
    return app


#: for ``flwr run`` / ``flower-supernode`` (``clientapp = "asrpriv_flower.client_app:app"``)
def __getattr__(name):
    if name == "app":
        return make_client_app()
    raise AttributeError(name)
