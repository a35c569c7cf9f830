"""What travels as Flower records: the global model down, a client's delta and metadata up.

Down (server -> client, message type ``train``): ``model`` = :class:`flwr.app.ArrayRecord` of
the global model's state dict, ``config`` = :class:`flwr.app.ConfigRecord` with the client's id,
the model config (JSON) and vocabulary, the model's fingerprint, the training settings (JSON),
the seed, the clip bound and where the client's data lie.

Up (client -> server): ``delta`` = ArrayRecord of ``init - new`` (float32, exactly the tensors
``finetune-lm --by-client`` writes), ``meta`` = ConfigRecord with ``client`` and ``meta-json``,
the JSON of the delta file's keys in file order (``weight`` = training words, ``init_fingerprint``,
``clip_l2`` when clipped, train_words, ...), and ``metrics`` = MetricRecord (``num-examples`` =
weight, ``norm`` = the delta's L2 norm before clipping).

Arrays go through numpy bytes: dtype, shape and every bit are kept.
"""

from __future__ import annotations

import json

from asrpriv.nnlm.modelfile import FORMAT, FORMAT_VERSION


def state_record(state: dict):
    """A torch state dict as an ArrayRecord (names and order kept)."""
    from flwr.app import ArrayRecord

    return ArrayRecord(torch_state_dict={k: v.detach().cpu().contiguous() for k, v in state.items()})


def record_state(record) -> dict:
    """An ArrayRecord back to a torch state dict (CPU tensors)."""
    return dict(record.to_torch_state_dict())


def model_payload(state: dict, vocab_words: list, config: dict) -> dict:
    """The model-file dict (:mod:`asrpriv.nnlm.modelfile`) of a model received in memory."""
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "kind": "model",
            "config": dict(config), "vocab": list(vocab_words), "state_dict": state}


def delta_payload(state: dict, vocab_words: list, config: dict, meta: dict) -> dict:
    """The delta-file dict that ``finetune-lm --by-client`` would write for this client:
    the same keys in the same order (so a saved copy is the same file)."""
    payload = {"format": FORMAT, "format_version": FORMAT_VERSION, "kind": "delta",
               "config": dict(config), "vocab": list(vocab_words), "state_dict": state}
    for key, value in meta.items():
        if key in payload:
            raise ValueError(f"delta metadata may not set {key!r}")
        payload[key] = value
    return payload


def dumps(value) -> str:
    return json.dumps(value, sort_keys=False, separators=(",", ":"))
