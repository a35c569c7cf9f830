"""The client side of a federated round (paper 001): fine-tune a copy of the global model, send a delta.

For each client, :func:`client_update` resets one in-memory model to the initial weights (a
copy kept by :func:`load_init`: no file re-read, no rebuild), runs the training loop of
``finetune-lm`` (:func:`asrpriv.nnlm.train.train_lm`; paper 001's client recipe is SGD lr 1.0,
1 epoch, batch 8 sentences, the confidence losses of Eq. 2-4 in :mod:`asrpriv.nnlm.losses`),
and returns the delta ``init - new`` (paper 001's sign, Delta = theta_t - theta_i) with:

* ``weight``: the client's training words (``</s>`` not counted; after ``hard:C`` dropping) --
  w_i of Eq. 5;
* ``norm``: the delta's L2 norm over all parameters, before clipping;
* ``clip_l2``: the bound C when the delta was clipped to L2 norm <= C over *all* parameters
  together (:mod:`asrpriv.federated.clip`), else None.

:func:`write_delta` writes the delta file that ``aggregate`` reads: the model-file format of
:mod:`asrpriv.nnlm.modelfile` (``kind`` "delta") with ``weight``, ``init_fingerprint`` (the
:mod:`asrpriv.federated.fingerprint` of the initial model; aggregate refuses deltas of another
model) and ``clip_l2`` when clipped.

Repeatability: with the same ``seed``, a client's update is the same bit for bit (CPU, same
thread count) whether it runs alone (``finetune-lm --init --delta-out``) or among many
(``--by-client``): :func:`asrpriv.nnlm.train.train_lm` reseeds the batch order and dropout
from ``seed`` at the start of every call, and the weights are reset exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from asrpriv.nnlm.runtime import check_device
from asrpriv.federated.clip import check_clip

#: the training settings of paper 001's client (``finetune-lm --recipe client-001``)
CLIENT_RECIPE = "client-001"


@dataclass
class InitModel:
    """The initial (global) model of a round, loaded once for every client.

    Attributes:
        model: the torch module that every client update trains (reset before each).
        vocab, config: its vocabulary and completed config.
        state: a copy of the initial weights (on ``device``), never trained.
        fingerprint: :func:`asrpriv.federated.fingerprint.model_fingerprint` of the initial
            model (hex SHA-256), the ``init_fingerprint`` of every delta.
        path: the file it came from; device: "cpu" or "cuda".
    """

    model: Any
    vocab: Any
    config: dict
    state: dict
    fingerprint: str
    path: str = ""
    device: str = "cpu"
    privacy: Any = None  # its asrpriv.privacy.state.PrivacyState


@dataclass
class ClientResult:
    """One client's update.

    Attributes:
        delta: ``init - new`` per parameter (CPU tensors, the parameters' dtype), clipped when
            ``clip_l2`` is set.
        weight: the client's training words (Eq. 5's w_i).
        norm: L2 norm of the delta over all parameters before clipping.
        clip_l2: the L2 bound C applied, or None.
        train: the :class:`asrpriv.nnlm.train.TrainResult` of the run.
        model_state: the trained model snapped to ``init - delta`` before clipping (only with
            ``keep_model=True``: the single-client mode writes it with ``-o``).
    """

    delta: dict
    weight: int
    norm: float
    clip_l2: float | None
    train: Any = None
    model_state: dict | None = field(default=None, repr=False)


def load_init(path: str, device: str = "cpu") -> InitModel:
    """Load the initial model once: module, vocabulary, config, a copy of its weights, fingerprint.

    A delta file (or anything but a model file) is refused with a one-line error
    (:func:`asrpriv.nnlm.modelfile.load_model`).
    """
    from asrpriv.nnlm import modelfile

    check_device(device)
    return init_from_payload(modelfile.read_model_file(path), str(path), device)


def init_from_payload(payload: dict, label: str, device: str = "cpu") -> InitModel:
    """:func:`load_init` on a model payload in memory (the model-file dict: ``kind`` "model",
    ``config``, ``vocab``, ``state_dict``), e.g. the global model received from a server;
    checked like a file (``label`` names it in errors)."""
    from asrpriv.nnlm import modelfile
    from asrpriv.provenance import payload_state

    check_device(device)
    privacy = payload_state(payload, label)
    return _init_of(*modelfile.model_from_payload(payload, label, device), label, device, privacy)


def reload_init(init: InitModel, path: str) -> InitModel:
    """:func:`load_init` of the next model of the same run: the weights of ``path`` copied
    into ``init.state`` in place (no rebuild, no reallocation: a worker process that shares
    ``init.state`` sees them; :func:`client_update` resets the module from it before each
    client), with their own fingerprint and privacy.

    ``path`` is checked as :func:`load_init` checks it (a model file, finite weights); one
    whose config, vocabulary or parameter shapes differ from ``init``'s is loaded afresh.
    ``init`` is spent: use the returned model (it shares ``init``'s module and tensors).
    """
    import torch

    from asrpriv.federated.fingerprint import model_fingerprint
    from asrpriv.nnlm import modelfile
    from asrpriv.provenance import payload_state

    payload = modelfile.read_model_file(path)
    state = payload.get("state_dict")
    same = (payload.get("kind") == "model" and payload.get("vocab") == init.vocab.words
            and isinstance(state, dict) and state.keys() == init.state.keys()
            and all(isinstance(state[k], torch.Tensor) and state[k].shape == v.shape
                    and state[k].dtype == v.dtype for k, v in init.state.items()))
    if same:
        same = modelfile.completed_config(payload, str(path)) == init.config
    if not same:
        return init_from_payload(payload, str(path), init.device)
    privacy = payload_state(payload, str(path))
    with torch.no_grad():
        for name, tensor in init.state.items():
            tensor.copy_(state[name])
    fingerprint = model_fingerprint(init.config, init.vocab.words, init.state)
    return InitModel(init.model, init.vocab, init.config, init.state, fingerprint, str(path),
                     init.device, privacy)


def _init_of(model, vocab, config, path: str, device: str, privacy) -> InitModel:
    from asrpriv.federated.fingerprint import model_fingerprint

    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    fingerprint = model_fingerprint(config, vocab.words, state)
    return InitModel(model, vocab, config, state, fingerprint, path, device, privacy)


def refuse_seeded_init(init: InitModel, allowed: bool) -> None:
    """A start model made with seeded test noise is refused unless ``allowed`` (AsrprivError)."""
    from asrpriv.provenance import Inputs

    Inputs(allowed).add(init.path, init.privacy)


def delta_privacy(init: InitModel, client: str = "", public: bool = False):
    """The state of one client's delta: its start model's, plus the client's un-noised update
    (unit client); public text adds nothing.

    The part names no client (``client`` is not recorded): a delta is the same file whether
    ``finetune-lm --delta-out`` or ``--by-client`` wrote it, and a FedAvg sum of many clients
    records one part, "un-noised client updates", not a list of who took part.
    """
    from asrpriv.privacy.state import PUBLIC, combine, raw_state

    del client
    if public:
        return combine([init.privacy, PUBLIC])
    return combine([init.privacy, raw_state("client update", "client")])


def client_update(init: InitModel, sentences: Sequence[Sequence[str]],
                  confidences: Sequence[Sequence[float]] | None = None, *,
                  settings: dict | None = None, seed: int | None, clip: float | None = None,
                  confidence: str | None = None, train_only: str | None = None,
                  keep_model: bool = False, valid: Sequence[Sequence[str]] | None = None,
                  delta_out: dict | None = None,
                  on_step: Callable[[int, float], None] | None = None,
                  on_epoch: Callable[[dict], None] | None = None) -> ClientResult:
    """Fine-tune ``init``'s model on one client's sentences; return its (clipped) delta.

    Args:
        init: from :func:`load_init`; its model is reset to ``init.state`` in place first.
        sentences: the client's sentences (word lists); ``confidences``: one float per word
            for the confidence losses.
        settings: training settings as in :data:`asrpriv.nnlm.train.RECIPES` (optimizer, lr,
            epochs, batch_size, batch_by, loss_norm, max_grad_norm), optionally with
            ``confidence`` ("none", "hard:C", "utterance", "token"; Eq. 2-4) and ``train_only``;
            default: the ``client-001`` recipe with confidence "none".
        seed: seeds batch order and dropout (the same seed gives the same update as the
            single-client mode); None = fresh randomness.
        clip: C > 0: clip the whole delta to L2 norm <= C (all parameters as one vector).
        confidence, train_only: override ``settings``' values.
        keep_model: also return the trained model's state (``ClientResult.model_state``).
        valid: validation sentences (single-client mode: LR decay, early stop, best epoch).
        delta_out: CPU tensors (one per parameter) to write the delta into instead of new
            ones (a worker's shared buffer); the same values.

    Raises:
        ValueError: no training sentences (e.g. all dropped by ``hard:C``), bad settings.
    """
    from asrpriv.federated.clip import clip_l2, l2_norm
    from asrpriv.nnlm import train

    merged = dict(train.RECIPES[CLIENT_RECIPE])
    merged.update(settings or {})
    mode = confidence if confidence is not None else merged.pop("confidence", "none")
    merged.pop("confidence", None)
    only = train_only if train_only is not None else merged.pop("train_only", "all")
    merged.pop("train_only", None)
    if clip is not None:
        check_clip(clip)
    model = init.model
    with _no_grad():
        for name, tensor in model.state_dict().items():
            tensor.copy_(init.state[name])
    try:
        result = train.train_lm(model, init.vocab, sentences, confidences, confidence=mode,
                                train_only=only, seed=seed, valid=valid, on_step=on_step, on_epoch=on_epoch,
                                **merged)
    finally:
        for p in model.parameters():
            p.grad = None
    delta, snapped = train.make_delta(init.state, model.state_dict(), snap=keep_model,
                                      out=delta_out)
    if clip is None:
        norm = l2_norm(delta)
    else:
        norm, _ = clip_l2(delta, clip)
    return ClientResult(delta, result.words, norm, None if clip is None else float(clip), result,
                        snapped if keep_model else None)


def delta_metadata(init: InitModel, result: ClientResult, client: str = "", public: bool = False,
                   **extra: Any) -> dict:
    """The federated keys of a delta file (docs/FORMATS.md) plus ``extra``, then its privacy
    record (:func:`delta_privacy`)."""
    from asrpriv.privacy.state import to_payload

    meta = {"init_fingerprint": init.fingerprint}
    if client:  # the holder's assertion of whose update this is (one per client in a DP round)
        meta["client"] = str(client)
    if result.clip_l2 is not None:
        meta["clip_l2"] = float(result.clip_l2)
    meta.update(extra)
    meta.update(to_payload(delta_privacy(init, client, public)))
    return meta


def write_delta(path: str, init: InitModel, result: ClientResult, client: str = "",
                public: bool = False, **extra: Any) -> None:
    """Write ``result`` as a delta file (atomically; byte-reproducible).

    Keys: the model-file layout with ``kind`` "delta", ``weight`` (words),
    ``init_fingerprint``, ``clip_l2`` when clipped, and ``extra`` (e.g. train_words, seed).
    """
    from asrpriv.nnlm import modelfile

    meta = delta_metadata(init, result, client, public, **extra)
    from asrpriv.privacy.state import HEADER_KEYS

    for key in HEADER_KEYS:
        meta.pop(key, None)
    modelfile.save_delta(path, result.delta, init.vocab, init.config, weight=result.weight,
                         privacy=delta_privacy(init, client, public), **meta)


def _no_grad():
    import torch

    return torch.no_grad()
