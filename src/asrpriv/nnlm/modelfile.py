"""Model files: config + vocabulary + state dict in one ``torch.save`` dict of plain data.

A file holds only tensors, str, int, float, bool, lists and dicts, so that it loads with
``torch.load(weights_only=True)``: a file whose unpickling would need code (a crafted pickle
with ``__reduce__``, any custom class) is refused with a one-line error and nothing of it runs.

Layout (``format_version`` 1)::

    {"format": "asrpriv-nnlm", "format_version": 1,
     "kind": "model" | "delta",
     "config": {"arch": "transformer" | "lstm", "vocab_size": V, ...},
     "vocab": [word, ...],                # id = position; <unk>, <s>, </s> first
     "state_dict": {name: tensor, ...},
     ...extra keys}                       # a delta adds "weight": number of training words

A delta's state dict is ``init - new`` (paper 001's sign, Delta = theta_t - theta_i), in the
parameters' dtype.
"""

from __future__ import annotations

import os
import pickle
from typing import Any

import torch

from asrpriv.errors import InputError
from asrpriv.io.output import atomic_path
from asrpriv.nnlm.model import build_model, make_config
from asrpriv.nnlm.vocab import Vocabulary

FORMAT = "asrpriv-nnlm"
FORMAT_VERSION = 1
KINDS = ("model", "delta")

__all__ = ["load_model", "save_model", "build_model", "read_model_file", "open_model_file",
           "save_delta", "is_model_file", "FORMAT", "FORMAT_VERSION"]


def _plain_state(state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Detached CPU tensors that own their storage (no views into a larger tensor, no grads).

    A tensor that already is one, and shares its storage with no other entry, is kept as it
    is: a copy would write the same bytes, and cost one model's worth of memory at the end
    of a server round (where the moments are in memory too).
    """
    plain, seen = {}, set()
    for name, tensor in state_dict.items():
        if not (_owns_storage(tensor) and tensor.untyped_storage().data_ptr() not in seen):
            tensor = tensor.detach().to("cpu").clone().contiguous()
        seen.add(tensor.untyped_storage().data_ptr())
        plain[name] = tensor
    return plain


def _owns_storage(tensor: torch.Tensor) -> bool:
    return (type(tensor) is torch.Tensor and tensor.device.type == "cpu"
            and not tensor.requires_grad and tensor.is_contiguous() and tensor.numel() > 0
            and tensor.storage_offset() == 0 and not tensor.is_conj() and not tensor.is_neg()
            and tensor.untyped_storage().nbytes() == tensor.numel() * tensor.element_size())


def save_model(path: str, model_or_state: Any, vocab: Vocabulary, config: dict,
               kind: str = "model", *, privacy=None, **extra: Any) -> None:
    """Write a model (or a delta with ``kind="delta"``) file atomically.

    Args:
        path: the output file (written atomically), or ``-`` for standard output.
        model_or_state: an ``nn.Module`` or a state dict of tensors.
        vocab: its vocabulary (``len(vocab) == config["vocab_size"]``).
        config: the model config (:func:`asrpriv.nnlm.model.make_config`).
        kind: "model" or "delta".
        privacy: the file's :class:`asrpriv.privacy.state.PrivacyState`, derived from the
            step's inputs (:class:`asrpriv.provenance.Inputs`), stored as ``private_raw``,
            ``privacy_history``, ``seeded``. None records nothing, which reads back as
            "unrecorded": NOT private -- a writer that forgets can never claim a guarantee.
        extra: more plain values to store (a delta's ``weight`` = number of training words).
    """
    from asrpriv.privacy.state import HEADER_KEYS, to_payload

    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")
    if len(vocab) != config["vocab_size"]:
        raise ValueError(f"vocabulary has {len(vocab)} words, config says {config['vocab_size']}")
    state = model_or_state.state_dict() if hasattr(model_or_state, "state_dict") else model_or_state
    payload = {"format": FORMAT, "format_version": FORMAT_VERSION, "kind": kind,
               "config": dict(config), "vocab": list(vocab.words), "state_dict": _plain_state(state)}
    for key, value in extra.items():
        if key in payload or key in HEADER_KEYS:
            raise ValueError(f"extra key {key!r} is reserved")
        payload[key] = value
    if privacy is not None:
        payload.update(to_payload(privacy))
    if str(path) == "-":
        from asrpriv.io.output import stdout_stream

        stream = stdout_stream(binary=True)
        stream.write(model_bytes(payload))
        stream.flush()
        return
    write_payload(path, payload)


def write_payload(path: str, payload: dict) -> None:
    """``torch.save(payload)`` to ``path`` atomically and byte-reproducibly, streamed.

    Saved to an open file object, torch names the zip archive's folder ``archive`` (as for
    an in-memory buffer) instead of a name derived from the random temporary file name, so
    identical payloads give identical files -- without holding the bytes in memory (a
    ``BytesIO`` and its copy cost up to three models' worth at the end of a server round).
    """
    with atomic_path(path) as tmp:
        dump_payload(tmp, payload)


def dump_payload(path: str, payload: dict) -> None:
    """``torch.save(payload)`` into the file ``path`` as it is (not atomically), through a file
    object: the bytes do not depend on the file's name (see :func:`write_payload`)."""
    with open(path, "wb") as f:
        torch.save(payload, f)


def model_bytes(payload: dict) -> bytes:
    """The bytes of ``torch.save(payload)``, the same for the same payload wherever it goes.

    ``torch.save`` to a file name stores a name derived from that file (here the random
    temporary name of the atomic write) as the zip archive's folder; saved to an in-memory
    buffer the folder is always ``archive``, so identical weights give identical files
    (byte-reproducible outputs, checksummable).
    """
    import io

    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


def save_delta(path: str, delta_state: dict[str, torch.Tensor], vocab: Vocabulary, config: dict,
               weight: int, *, privacy=None, **extra: Any) -> None:
    """Write a delta (``init - new``) with its weight (number of training words)."""
    save_model(path, delta_state, vocab, config, kind="delta", weight=int(weight),
               privacy=privacy, **extra)


def delta_weight(payload: dict, path: str) -> float:
    """A delta's ``weight`` (the client's number of training words): a finite number > 0.

    NaN, infinite, zero, negative and non-numeric weights are an InputError: the server
    weights the client's update by it.
    """
    import math

    weight = payload.get("weight")
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) \
            or not math.isfinite(weight) or weight <= 0:
        raise InputError(path, None, f"bad client weight {weight!r} (expected the client's "
                                     "number of training words, > 0)")
    return float(weight)


def is_model_file(path: str) -> bool:
    """True if ``path`` looks like a torch file (zip, or a bare pickle), not ARPA or kenlm binary:
    :func:`asrpriv.io.sniff.is_torch_file` (a bare pickle goes through :func:`read_model_file`
    and is refused there rather than handed to another reader)."""
    from asrpriv.io.sniff import is_torch_file

    return is_torch_file(path)


def read_any_payload(path: str, mmap: bool = False, map_location: str = "cpu") -> dict:
    """``torch.load(weights_only=True)`` of an asrpriv torch file (model, delta, server
    state), refusing what would unpickle code; the layout is not checked here. ``mmap``:
    map the tensors instead of reading them (for reading the metadata only);
    ``map_location="meta"``: read no tensor data at all (:func:`open_model_file`).

    Raises:
        AsrprivError: refused, or not a readable torch file.
    """
    import warnings

    from asrpriv.io.lines import require_regular_file

    require_regular_file(path, "a model file")  # no FIFO: it is sniffed, then loaded
    _refuse_other_formats(path)
    try:
        with warnings.catch_warnings():  # e.g. "Detected pickle protocol 4": noise on stderr
            warnings.simplefilter("ignore")
            try:
                payload = torch.load(path, map_location=map_location, weights_only=True,
                                     mmap=mmap)
            except RuntimeError:
                if not mmap:
                    raise
                payload = torch.load(path, map_location=map_location,
                                     weights_only=True)  # old format
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except pickle.UnpicklingError as err:
        if "weights only" in str(err).lower() or "weights_only" in str(err).lower():
            raise InputError(path, None, "refused: loading it would unpickle code or objects that "
                                         "a model file never holds (read with weights_only=True)"
                             ) from None
        raise InputError(path, None, "not a PyTorch model file") from None
    except Exception as err:  # noqa: BLE001 - any failure to parse untrusted bytes
        if isinstance(err, MemoryError):
            raise
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise InputError(path, None, f"not a readable PyTorch model file ({first})") from None
    if not isinstance(payload, dict):
        raise InputError(path, None, "not an asrpriv torch file (not a dict)")
    return payload


def read_model_file(path: str) -> dict:
    """Load and validate a model or delta file; returns its dict (tensors on CPU).

    Raises:
        AsrprivError: the file would need code to unpickle (refused), is not a torch file,
            or does not have the asrpriv layout.
    """
    payload = _checked_layout(read_any_payload(path), path)
    for name, tensor in payload["state_dict"].items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise InputError(path, None, f"state dict entry {name!r} holds NaN or infinite values")
    return payload


def open_model_file(path: str):
    """A model or delta file validated like :func:`read_model_file`, its tensors read on demand.

    Returns an :class:`asrpriv.io.torchfile.TorchFile` whose ``obj`` is the payload with
    ``meta`` tensors (shapes and dtypes; their values come from its ``slices``), so that a
    file is streamed without a second copy. The values are NOT checked for NaN or inf here:
    the caller checks what it reads. Close it (or use it as a context manager).
    """
    from asrpriv.io.torchfile import TorchFile

    return TorchFile.open(path, lambda where: _checked_layout(
        read_any_payload(path, map_location=where), path))


def _checked_layout(payload: dict, path: str) -> dict:
    """The asrpriv model-file layout (format marker, version, keys, kind, tensors)."""
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise InputError(path, None, f"not an {FORMAT} model file (no format marker)")
    if payload.get("format_version") != FORMAT_VERSION:
        raise InputError(path, None, f"unsupported model file version {payload.get('format_version')!r}")
    for key, kind in (("config", dict), ("vocab", list), ("state_dict", dict)):
        if not isinstance(payload.get(key), kind):
            raise InputError(path, None, f"model file lacks its {key}")
    if payload.get("kind") not in KINDS:
        raise InputError(path, None, f"unknown model file kind {payload.get('kind')!r}")
    for name, tensor in payload["state_dict"].items():
        if not isinstance(tensor, torch.Tensor):
            raise InputError(path, None, f"state dict entry {name!r} is not a tensor")
    return payload


#: first bytes of files that people give where a model file is expected
_OTHER_FORMATS = ((b"mmap lm http://kheafield.com/code", "a KenLM binary n-gram LM; give it with --ngram"),
                  (b"\\data\\", "an ARPA n-gram LM, not a neural model file; give it with --ngram"))


def _refuse_other_formats(path: str) -> None:
    """Name ARPA and KenLM files for what they are (a torch error would call them a pickle)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return  # torch.load reports it
    if head[:2] == b"\x1f\x8b":  # gzip: an .arpa.gz
        import gzip
        import zlib

        try:
            with gzip.open(path, "rb") as f:
                head = f.read(4096)
        except (OSError, EOFError, zlib.error):
            return
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    for magic, what in _OTHER_FORMATS:
        if stripped.startswith(magic):
            raise InputError(path, None, f"is {what}")
    what = _text_kind(head)
    if what is not None:
        raise InputError(path, None, f"is {what}, not a neural model file (a model file is a "
                                     "binary PyTorch file written by finetune-lm)")


def _text_kind(head: bytes) -> str | None:
    """What a text file given as a model file is (counts, N-best TSV, text), else None."""
    if not head or b"\x00" in head or head[:1] == b"\x80" or head[:2] == b"PK":
        return None
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        if len(head) < 4096:
            return None
        try:  # the read may have cut a multi-byte character at the end
            text = head[:-3].decode("utf-8")
        except UnicodeDecodeError:
            return None
    lines = [line for line in text.lstrip("\ufeff").splitlines() if line.strip()]
    if not lines:
        return None
    first = lines[0]
    columns = first.split("\t")
    if "utt_id" in columns or "text" in columns:
        return "an N-best TSV (a header with utt_id, text)"
    if first.startswith("#") and (any("\t" in line for line in lines if not line.startswith("#"))
                                  or any(line.startswith(("#privacy", "#version", "#source", "#kind"))
                                         for line in lines)):
        return "a counts file ('#key=value' metadata, then word<TAB>count)"
    if len(columns) == 2 and all(len(line.split("\t")) == 2 for line in lines[:20]):
        return "a two-column table (counts or factors: word<TAB>value)"
    if len(columns) > 2:
        return "a tab-separated table"
    return "a text file"


def vocab_and_config(payload: dict, path: str) -> tuple[Vocabulary, dict]:
    """The vocabulary and the completed config of a loaded file."""
    try:
        vocab = Vocabulary(payload["vocab"])
    except (ValueError, KeyError, TypeError, OverflowError) as err:
        raise InputError(path, None, f"bad model config or vocabulary: {err}") from None
    config = completed_config(payload, path)
    if len(vocab) != config["vocab_size"]:
        raise InputError(path, None, f"vocabulary has {len(vocab)} words, config says "
                                     f"{config['vocab_size']}")
    return vocab, config


def completed_config(payload: dict, path: str) -> dict:
    """The completed, checked config of a loaded file (:func:`vocab_and_config` without the
    vocabulary)."""
    try:
        config = make_config(payload["config"]["arch"], payload["config"]["vocab_size"],
                             **{k: v for k, v in payload["config"].items()
                                if k not in ("arch", "vocab_size")})
    except (ValueError, KeyError, TypeError, OverflowError) as err:
        raise InputError(path, None, f"bad model config or vocabulary: {err}") from None
    _check_config(config, path)
    return config


def _check_config(config: dict, path: str) -> None:
    """Dimensions are positive, heads divide the width, dropout lies in [0, 1)."""
    for key in ("vocab_size", "emb_dim", "ffn_dim", "hidden_dim", "layers", "heads"):
        if key in config and not (isinstance(config[key], int) and config[key] >= 1):
            raise InputError(path, None, f"bad model config: {key} must be a positive integer, "
                                         f"got {config[key]!r}")
    if "heads" in config and config["emb_dim"] % config["heads"]:
        raise InputError(path, None, f"bad model config: emb_dim {config['emb_dim']} is not a "
                                     f"multiple of heads {config['heads']}")
    dropout = config.get("dropout", 0.0)
    if not (isinstance(dropout, float) and 0.0 <= dropout < 1.0):
        raise InputError(path, None, f"bad model config: dropout must lie in [0, 1), got {dropout!r}")


def _build_checked(config: dict, state: dict, path: str):
    """The model of ``config`` holding the weights of ``state``, after checking, without
    allocating, that ``state`` fits it.

    The shapes come from a model built on torch's ``meta`` device, so a config that claims
    huge dimensions never allocates memory; only a state dict that matches them is loaded.
    The weights are then put in place of the meta tensors (copies, in the module's dtypes:
    ``load_state_dict(assign=True)``), so nothing is initialised only to be overwritten: no
    draws from torch's generator, and no ``to_empty``, whose first use imports sympy (0.3 s of
    every step's start).
    """
    if config.get("layers", 0) > len(state):  # each layer holds tensors: a bogus count would
        raise InputError(path, None, f"bad model config: {config['layers']} layers, but the state "
                                     f"dict holds {len(state)} tensors")  # take ages to build
    try:
        model = build_model(config, device="meta")
        specs = model.state_dict()
    except (ValueError, RuntimeError, TypeError, ZeroDivisionError, OverflowError) as err:
        raise InputError(path, None, f"bad model config: {err}") from None
    missing = sorted(set(specs) - set(state))
    extra = sorted(set(state) - set(specs))
    if missing or extra:
        what = f"missing {missing[0]!r}" if missing else f"unexpected {extra[0]!r}"
        raise InputError(path, None, f"state dict does not match its config: {what}")
    for key, spec in specs.items():
        if tuple(state[key].shape) != tuple(spec.shape):
            raise InputError(path, None, f"state dict does not match its config: {key!r} has "
                                         f"shape {tuple(state[key].shape)}, config implies "
                                         f"{tuple(spec.shape)}")
    weights = {key: state[key].to(device="cpu", dtype=spec.dtype, copy=True)
               for key, spec in specs.items()}
    try:
        model.load_state_dict(weights, strict=True, assign=True)
    except RuntimeError as err:
        first = str(err).strip().splitlines()[0]
        raise InputError(path, None, f"state dict does not match its config: {first}") from None
    if config.get("tie_embeddings"):  # one tensor for both, as the module was built
        model.output.weight = model.embedding.weight
    return model


def load_model(path: str, device: str = "cpu"):
    """Load a model file: ``(model, vocab, config)``, the model in eval mode on ``device``.

    A delta file is refused here (it is not a model; add it to its init model first).
    """
    return model_from_payload(read_model_file(path), path, device)


def model_from_payload(payload: dict, path: str, device: str = "cpu"):
    """:func:`load_model` on a payload already in memory (``path`` names it in errors)."""
    if payload["kind"] != "model":
        raise InputError(path, None, f"is a {payload['kind']} file, not a model")
    vocab, config = vocab_and_config(payload, path)
    model = _build_checked(config, payload["state_dict"], path)
    model.to(device)
    model.eval()
    return model, vocab, config
