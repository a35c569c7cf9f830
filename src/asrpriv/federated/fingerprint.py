"""The fingerprint of a model: which initial model a client's delta was computed from.

``model_fingerprint(config, vocab_words, state_dict)`` is the hex SHA-256 of, in order:

    b"asrpriv-fingerprint/1\n"
    json(config, sorted keys, no spaces) b"\n"
    json(vocabulary word list) b"\n"
    for each parameter name in sorted order:
        name b"\0" dtype-name b"\0" shape-as-json b"\0" raw little-endian bytes of the tensor

``config`` is the completed config (:func:`asrpriv.nnlm.modelfile.vocab_and_config`), so a file
that omits default options has the fingerprint of the same model written in full. Two models
have the same fingerprint iff they have the same architecture, vocabulary and weights bit for
bit (up to SHA-256 collisions).
"""

from __future__ import annotations

import hashlib
import json
import sys

PREFIX = b"asrpriv-fingerprint/1\n"


def model_fingerprint(config: dict, vocab_words, state_dict: dict) -> str:
    """Hex SHA-256 of a model's config, vocabulary and state dict (see the module docstring)."""
    import torch

    digest = hashlib.sha256(PREFIX)
    digest.update(json.dumps(config, sort_keys=True, separators=(",", ":")).encode())
    digest.update(b"\n")
    digest.update(json.dumps(list(vocab_words), ensure_ascii=False,
                             separators=(",", ":")).encode())
    digest.update(b"\n")
    for name in sorted(state_dict):
        tensor = state_dict[name].detach().to("cpu").contiguous()
        digest.update(name.encode() + b"\0" + str(tensor.dtype).encode() + b"\0"
                      + json.dumps(list(tensor.shape)).encode() + b"\0")
        raw = tensor.reshape(-1).view(torch.uint8).numpy()
        if sys.byteorder != "little" and tensor.element_size() > 1:
            raw = tensor.reshape(-1).numpy().byteswap().view("uint8")
        digest.update(memoryview(raw))
    return digest.hexdigest()
