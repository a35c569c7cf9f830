"""What a server round reads, and the checks on it: the model and the deltas' headers.

Every check that needs only a file's header (kind, vocabulary, config, parameter names,
shapes and dtypes, weight, init_fingerprint, privacy record) is made here before any value
is read; the values themselves (NaN, inf) are checked where they are streamed.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from asrpriv.errors import AsrprivError, InputError, arg

#: coordinates per slice when a file's tensors are streamed
SLICE = 1 << 18


def expand_deltas(args: list[str], allow_empty: bool = False) -> list[str]:
    """Delta paths from arguments: files, ``@LISTFILE`` (one path a line, ``#`` comments) and
    directories (their ``*.delta.pt``, sorted by name).

    ``allow_empty``: a directory without deltas (a round's empty cohort) adds none, and no
    delta at all is no error (the server round under DP then releases the noise alone).
    """
    from asrpriv.io.lines import iter_lines

    paths: list[str] = []
    for arg in args:
        if arg.startswith("@"):
            listed = [line.strip() for _, line in iter_lines(arg[1:])]
            paths.extend(p for p in listed if p and not p.startswith("#"))
        elif os.path.isdir(arg):
            found = sorted(name for name in os.listdir(arg) if name.endswith(".delta.pt"))
            if not found and not allow_empty:
                raise InputError(arg, None, "directory holds no *.delta.pt file")
            paths.extend(os.path.join(arg, name) for name in found)
        else:
            paths.append(arg)
    if not paths and not allow_empty:
        raise AsrprivError("no delta given")
    seen: set[str] = set()
    for path in paths:
        key = os.path.realpath(path)
        if key in seen:
            raise InputError(path, None, "given twice (a client would count twice)")
        seen.add(key)
    return paths


def all_finite(tensor) -> bool:
    """No NaN or inf in ``tensor``. A plain sum propagates both (about 40x cheaper than
    ``isfinite().all()``); only a non-finite sum, which finite values can also reach by
    overflow, is checked element by element."""
    if math.isfinite(float(tensor.sum())):
        return True
    return bool(tensor.isfinite().all())


def check_finite(path: str, name: str, file, tensor) -> None:
    """Refuse ``tensor`` of ``file`` (a TorchFile) if any value is NaN or inf, slice by slice."""
    if tensor.is_floating_point() and not all(all_finite(part)
                                              for part in file.slices(tensor, SLICE)):
        raise InputError(path, None, f"parameter {name} holds NaN or inf")


@dataclass
class Spec:
    shape: tuple
    dtype: object
    floating: bool


class ModelRef:
    """The model the round starts from: what every delta must match.

    Opens ``path`` (kept open until :meth:`close`: the optimizer reads theta from ``file``),
    checks every value is finite and fingerprints it, streamed in slices.
    """

    def __init__(self, path: str) -> None:
        from asrpriv.nnlm.modelfile import open_model_file

        self.path = path
        self.file = open_model_file(path)
        try:
            self._check()
        except BaseException:
            self.file.close()
            raise

    def _check(self) -> None:
        from asrpriv.federated.fingerprint import Fingerprint
        from asrpriv.nnlm.modelfile import vocab_and_config
        from asrpriv.provenance import payload_state

        path, payload = self.path, self.file.obj
        if payload["kind"] != "model":
            raise InputError(path, None, f"is a {payload['kind']} file, expected the current "
                                         f"global model ({arg('model')})")
        self.vocab, self.config = vocab_and_config(payload, path)
        #: its privacy state (:mod:`asrpriv.privacy.state`)
        self.privacy = payload_state(payload, path)
        #: name -> Spec, in the file's order
        self.specs = {name: Spec(t.shape, t.dtype, t.is_floating_point())
                      for name, t in payload["state_dict"].items()}
        fingerprint = Fingerprint(self.config, self.vocab.words)
        for name in sorted(self.specs):
            tensor = payload["state_dict"][name]
            fingerprint.tensor(name, tensor)
            for part in self.file.slices(tensor, SLICE):
                if tensor.is_floating_point() and not all_finite(part):
                    raise InputError(path, None, f"parameter {name} holds NaN or inf")
                fingerprint.update(part)
        self.fingerprint = fingerprint.hexdigest()

    def close(self) -> None:
        self.file.close()

    def check_delta(self, path: str, payload: dict) -> float:
        """Validate a delta's header against the model; returns its weight (words)."""
        from asrpriv.nnlm.modelfile import completed_config, vocab_and_config

        if payload["kind"] != "delta":
            raise InputError(path, None, f"is a {payload['kind']} file, expected a delta "
                                         "(finetune-lm --delta-out / --by-client)")
        if payload.get("vocab") == self.vocab.words:  # the model's (checked) words: no rebuild
            config = completed_config(payload, path)
        else:
            vocab, config = vocab_and_config(payload, path)
            raise InputError(path, None, f"vocabulary differs from the model's ({self.path}): "
                                         f"{len(vocab)} vs {len(self.vocab)} words")
        if config != self.config:
            diff = sorted(k for k in set(config) | set(self.config)
                          if config.get(k) != self.config.get(k))
            raise InputError(path, None, f"model config differs from {self.path} in {', '.join(diff)}")
        state = payload["state_dict"]
        if state.keys() != self.specs.keys():
            missing = sorted(set(self.specs) ^ set(state))
            raise InputError(path, None, f"parameters differ from the model's (e.g. {missing[0]})")
        for name, tensor in state.items():
            ref = self.specs[name]
            if tensor.shape != ref.shape or tensor.dtype != ref.dtype:
                raise InputError(path, None, f"parameter {name}: shape/dtype {tuple(tensor.shape)} "
                                             f"{tensor.dtype}, the model has {tuple(ref.shape)} "
                                             f"{ref.dtype}")
        from asrpriv.nnlm.modelfile import delta_weight

        return delta_weight(payload, path)


def init_fingerprint(payload: dict, path: str) -> str:
    """The fingerprint of the model a delta was fine-tuned from."""
    fp = payload.get("init_fingerprint")
    if not isinstance(fp, str) or len(fp) != 64:
        raise InputError(path, None, "records no init_fingerprint (the fingerprint of the model "
                                     "it was fine-tuned from); make it with this version's "
                                     "finetune-lm")
    return fp


def recorded_clip(payload: dict) -> float | None:
    """The L2 bound the delta's client clipped it to (``clip_l2``), if it records one."""
    value = payload.get("clip_l2")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)
