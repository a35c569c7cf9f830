"""Training and fine-tuning loop for word-level LMs (torch).

One function, :func:`train_lm`, serves training from scratch, fine-tuning, the 001 client
recipe (SGD lr 1.0, 1 epoch, batch 8) and the confidence losses (:mod:`asrpriv.nnlm.losses`).
Batches are whole sentences grouped by length (little padding, no per-token Python work);
each batch's loss is ``sum(weight * nll) / denominator`` (natural log).

Repeatability: with ``seed`` set, the batch order (numpy) and dropout (torch) are seeded, and
a CPU run is bit-for-bit repeatable at a fixed thread count.
"""

from __future__ import annotations

import copy
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from asrpriv.allocator import retain_freed_blocks
from asrpriv.nnlm import losses
from asrpriv.nnlm.model import build_model, make_config
from asrpriv.nnlm.score import encode_sentences, pad_batch
from asrpriv.nnlm.vocab import Vocabulary, build_vocabulary

from asrpriv.errors import arg

#: the recipes: ``finetune-lm --recipe NAME``; explicit options override them
RECIPES: dict[str, dict] = {
    # paper 001, client side: SGD lr 1.0, one epoch, batch 8, Eq. 2-4 normalisation
    "client-001": {"optimizer": "sgd", "lr": 1.0, "epochs": 1, "batch_size": 8,
                   "loss_norm": "utterance", "max_grad_norm": 0.0, "batch_by": "sentences"},
    # server-side (pre)training: Adam, token-mean loss, gradient clipping
    "server": {"optimizer": "adam", "lr": 1e-3, "epochs": 10, "batch_size": 32,
               "loss_norm": "token", "max_grad_norm": 1.0, "batch_by": "tokens"},
}


@dataclass
class TrainResult:
    """What a run did.

    Attributes:
        words: training words used (``</s>`` not counted; after hard thresholding) — the
            weight of a delta.
        sentences: training sentences used; dropped: sentences dropped by ``hard:C``.
        tokens: predicted targets per epoch (words + sentences).
        history: one dict per epoch: epoch, train_loss, train_ppl, lr, seconds, and
            valid_loss/valid_ppl (token-mean natural log) with ``valid``.
        best_epoch: the epoch whose weights were kept (with ``valid``), else the last.
    """

    words: int = 0
    sentences: int = 0
    dropped: int = 0
    tokens: int = 0
    history: list[dict] = field(default_factory=list)
    best_epoch: int = 0
    stopped_early: bool = False


def vocab_from_sentences(sentences: Sequence[Sequence[str]], vocab_size: int | None = None,
                         min_count: int = 1) -> Vocabulary:
    """A vocabulary of the most frequent words of ``sentences`` (see :func:`build_vocabulary`)."""
    counts: Counter = Counter()
    for s in sentences:
        counts.update(s)
    return build_vocabulary(counts, vocab_size, min_count)


def new_model(arch: str, vocab: Vocabulary, seed: int | None = None, **options):
    """``(model, config)``: a fresh model for ``vocab`` (options: emb_dim, layers, ...)."""
    config = make_config(arch, len(vocab), **options)
    if seed is not None:
        torch.manual_seed(seed)
    return build_model(config), config


def set_trainable(model: torch.nn.Module, train_only: str) -> list[torch.nn.Parameter]:
    """Freeze parameters for ``train_only`` ("all" or "output"); return the trainable ones.

    "output" trains ``output.weight`` and ``output.bias`` only (seed 003); it is refused for
    tied embeddings, where the output weight is the input embedding.
    """
    if train_only not in ("all", "output"):
        raise ValueError(f"train_only must be 'all' or 'output', got {train_only!r}")
    if train_only == "output":
        out = getattr(model, "output", None)
        emb = getattr(model, "embedding", None)
        if out is None:
            raise ValueError("the model has no output layer named 'output'")
        if emb is not None and out.weight is emb.weight:
            raise ValueError(f"{arg('train_only')} output: the output weight is tied to the input "
                             "embedding; use a model without tied embeddings")
    params = []
    for name, p in model.named_parameters():
        p.requires_grad_(train_only == "all" or name.startswith("output."))
        if p.requires_grad:
            params.append(p)
    return params


def _split_sorted(chunk: np.ndarray, lengths: np.ndarray, batch_size: int, by: str) -> list[np.ndarray]:
    """Split length-sorted sentence ids into ceil(n / batch_size) batches.

    ``by="sentences"``: batch_size sentences each. ``by="tokens"``: the same number of batches,
    but cut so that every batch's padded area (sentences x longest) is about equal — many
    short sentences or few long ones, batch_size sentences on average, little padding.
    """
    n = len(chunk)
    if by == "sentences" or n <= batch_size:
        return [chunk[i:i + batch_size] for i in range(0, n, batch_size)]
    k = -(-n // batch_size)
    lens = lengths[chunk]

    def cut(area: int) -> list[int]:
        starts, start = [0], 0
        for i in range(n):  # sorted ascending: the batch's longest is the current one
            if (i - start + 1) * lens[i] > area:
                start = i
                starts.append(i)
        return starts

    lo, hi = int(lens.max()), int(lens.max()) * n
    while lo < hi:  # the smallest area that needs at most k batches
        mid = (lo + hi) // 2
        if len(cut(mid)) <= k:
            hi = mid
        else:
            lo = mid + 1
    starts = cut(lo) + [n]
    return [chunk[a:b] for a, b in zip(starts, starts[1:])]


def _batches(lengths: np.ndarray, batch_size: int, rng: np.random.Generator | None,
             by: str = "sentences") -> list[np.ndarray]:
    """Sentence index batches of similar length; shuffled (pools of 50 batches) when ``rng``."""
    n = len(lengths)
    if rng is None:
        order = np.argsort(lengths, kind="stable")
        return [order[i:i + batch_size] for i in range(0, n, batch_size)]
    order = rng.permutation(n)
    pool = batch_size * 50
    batches = []
    for start in range(0, n, pool):
        chunk = order[start:start + pool]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches.extend(_split_sorted(chunk, lengths, batch_size, by))
    return [batches[i] for i in rng.permutation(len(batches))]


def _to_device(tensors: tuple, device: torch.device) -> tuple:
    """The batch's tensors on the model's device (no copy on CPU)."""
    if device.type == "cpu":
        return tensors
    return tuple(t.to(device, non_blocking=True) for t in tensors)


def _weights_batch(weights: list[np.ndarray], idx: np.ndarray, width: int) -> torch.Tensor:
    out = np.zeros((len(idx), width), dtype=np.float32)
    for row, i in enumerate(idx):
        w = weights[i]
        out[row, : len(w)] = w
    return torch.from_numpy(out)


def batch_loss(model: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor,
               weights: torch.Tensor, denominator: float, mask: torch.Tensor | None = None
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(loss, nll)``: loss = sum(weights * -ln p(target)) / denominator (natural log).

    ``weights=None`` means all weights 1 (then, with ``mask``, ``nll`` is the one-element sum).

    With ``mask`` (real targets), the output layer and softmax run only at real positions
    (padding costs no output-layer work) and ``nll`` is the flat vector of real targets'
    NLLs; without it, ``nll`` is [B, T].
    """
    if mask is None or not hasattr(model, "hidden"):
        if weights is None:
            weights = torch.ones(targets.shape, device=targets.device)
        logits = model(inputs)
        nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                              reduction="none").view_as(targets)
        if mask is not None:
            nll, weights = nll[mask], weights[mask]
        return (nll * weights).sum() / denominator, nll
    states = model.hidden(inputs, mask)
    if weights is None:  # uniform weights: one fused sum, no per-target vector
        total = F.cross_entropy(model.output(states), targets[mask], reduction="sum")
        return total / denominator, total.detach().reshape(1)
    nll = F.cross_entropy(model.output(states), targets[mask], reduction="none")
    return (nll * weights[mask]).sum() / denominator, nll


@torch.inference_mode()
def evaluate(model: torch.nn.Module, vocab: Vocabulary, sentences: Sequence[Sequence[str]],
             batch_size: int = 64) -> tuple[float, int]:
    """``(mean nll per target, targets)`` over ``sentences`` (natural log; ppl = exp(mean))."""
    was_training = model.training
    device = next(model.parameters()).device
    model.eval()
    seqs = encode_sentences(vocab, sentences)
    lengths = np.array([len(s) for s in seqs])
    total, count = 0.0, 0
    for idx in _batches(lengths, batch_size, None):
        inputs, targets, mask = _to_device(pad_batch([seqs[i] for i in idx], vocab.eos_id), device)
        _, nll = batch_loss(model, inputs, targets, None, 1.0, mask)
        total += float(nll.sum())
        count += int(mask.sum())
    model.train(was_training)
    return total / max(count, 1), count


def train_lm(model: torch.nn.Module, vocab: Vocabulary, sentences: Sequence[Sequence[str]],
             confidences: Sequence[Sequence[float]] | None = None, *,
             valid: Sequence[Sequence[str]] | None = None,
             confidence: str = "none",
             optimizer: str = "adam", lr: float = 1e-3, epochs: int = 1, batch_size: int = 32,
             loss_norm: str = "token", max_grad_norm: float = 0.0, train_only: str = "all",
             seed: int | None = None, lr_decay: float = 0.5, patience: int = 2,
             batch_by: str = "sentences",
             on_step: Callable[[int, float], None] | None = None,
             on_epoch: Callable[[dict], None] | None = None) -> TrainResult:
    """Train ``model`` in place on ``sentences`` (word lists); returns a :class:`TrainResult`.

    Args:
        model: a model from :mod:`asrpriv.nnlm.model` (fresh or loaded).
        vocab: its vocabulary (OOV words are trained as ``<unk>``).
        sentences: training sentences; ``confidences``: per-word confidences in [0, 1] for
            ``confidence`` other than "none" (see :mod:`asrpriv.nnlm.losses`).
        valid: validation sentences: each epoch's validation loss drives learning-rate decay
            (``lr *= lr_decay`` when it does not improve), early stopping (after ``patience``
            epochs without improvement) and keeping the best epoch's weights.
        confidence: "none", "hard:C", "utterance" or "token" (paper 001 Eq. 2-4).
        optimizer: "sgd" or "adam"; lr: its learning rate; epochs; batch_size: sentences.
        batch_by: "sentences" (every batch has batch_size sentences; 001's n_b) or "tokens"
            (as many batches, cut to equal padded area: batch_size sentences on average and
            about the same tokens per step, like a fixed-window loop, with little padding).
        loss_norm: "utterance" (Eq. 2-4: mean over transcripts of per-transcript means) or
            "token" (mean over all targets).
        max_grad_norm: clip the gradient's L2 norm (0 = no clipping).
        train_only: "all" or "output" (other parameters frozen, bitwise unchanged).
        seed: seeds batch order and dropout (None = fresh randomness).
        on_step: called as ``on_step(tokens_in_batch, running_train_ppl)`` after each step.
        on_epoch: called with each epoch's history dict.
    """
    mode, threshold = losses.parse_confidence(confidence)
    if mode != "none" and confidences is None:
        raise ValueError(f"{arg('confidence')} {confidence} needs a TSV input with a confidence column")
    if batch_by not in ("sentences", "tokens"):
        raise ValueError(f"batch_by must be sentences or tokens, got {batch_by!r}")
    if optimizer not in ("sgd", "adam"):
        raise ValueError(f"optimizer must be sgd or adam, got {optimizer!r}")
    if epochs < 1 or batch_size < 1 or lr <= 0:
        raise ValueError("epochs and batch size must be >= 1 and the learning rate > 0")
    result = TrainResult()
    sentences = list(sentences)
    conf = list(confidences) if confidences is not None else None
    if mode == "hard":
        keep = losses.keep_mask(conf, threshold)
        result.dropped = keep.count(False)
        sentences = [s for s, k in zip(sentences, keep) if k]
        conf = [c for c, k in zip(conf, keep) if k]
    result.sentences = len(sentences)
    result.words = sum(len(s) for s in sentences)
    result.tokens = result.words + result.sentences
    if not sentences:
        raise ValueError("no training sentences (after confidence thresholding)" if result.dropped
                         else "no training sentences")

    seqs = encode_sentences(vocab, sentences)
    weights = [losses.target_weights(len(s), conf[i] if conf is not None else None, mode, loss_norm)
               for i, s in enumerate(sentences)]
    lengths = np.array([len(s) for s in seqs])
    uniform = mode in ("none", "hard") and loss_norm == "token"  # every weight is 1
    rng = np.random.default_rng(seed)
    if seed is not None:
        torch.manual_seed(seed)
    params = set_trainable(model, train_only)
    device = next(model.parameters()).device
    if device.type == "cpu":
        retain_freed_blocks()  # every step allocates [tokens, |V|] blocks: no page-fault zero-fill
    # foreach: one multi-tensor update per step instead of a Python loop over parameters
    if optimizer == "sgd":
        opt = PlainSGD(params, lr=lr)
    else:
        opt = torch.optim.Adam(params, lr=lr, foreach=True)

    best_loss, best_state, bad = math.inf, None, 0
    for epoch in range(1, epochs + 1):
        model.train()
        start = time.perf_counter()
        run_nll = torch.zeros((), dtype=torch.float64, device=device)
        run_tok = 0
        for step, idx in enumerate(_batches(lengths, batch_size, rng, batch_by)):
            inputs, targets, mask = _to_device(pad_batch([seqs[i] for i in idx], vocab.eos_id), device)
            w = None if uniform else _weights_batch(weights, idx, targets.shape[1]).to(device)
            ntok = int(lengths[idx].sum()) - len(idx)
            denom = float(len(idx)) if loss_norm == "utterance" else float(ntok)
            loss, nll = batch_loss(model, inputs, targets, w, denom, mask)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            clipped_step(opt, params, max_grad_norm, linear=optimizer == "sgd")
            run_nll += nll.detach().sum()
            run_tok += ntok
            if on_step is not None:
                on_step(ntok, math.exp(min(float(run_nll) / run_tok, 50.0)) if step % 10 == 0 else None)
        train_loss = float(run_nll) / max(run_tok, 1)
        record = {"epoch": epoch, "train_loss": train_loss, "train_ppl": math.exp(min(train_loss, 50.0)),
                  "lr": opt.param_groups[0]["lr"], "seconds": time.perf_counter() - start}
        if valid is not None:
            vloss, _ = evaluate(model, vocab, valid)
            record["valid_loss"], record["valid_ppl"] = vloss, math.exp(min(vloss, 50.0))
        result.history.append(record)
        if on_epoch is not None:
            on_epoch(record)
        if valid is None:
            result.best_epoch = epoch
            continue
        if record["valid_loss"] < best_loss:
            best_loss, bad, result.best_epoch = record["valid_loss"], 0, epoch
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad += 1
            if bad > patience:
                result.stopped_early = epoch < epochs
                break
            for group in opt.param_groups:
                group["lr"] *= lr_decay
    if best_state is not None and result.best_epoch != result.history[-1]["epoch"]:
        model.load_state_dict(best_state)
    for p in model.parameters():
        p.requires_grad_(True)
    model.eval()
    return result


class PlainSGD:
    """``torch.optim.SGD(params, lr, foreach=True)`` as training uses it (no momentum, weight
    decay, dampening, Nesterov or maximize): ``p -= lr * grad`` as one ``_foreach_add_`` per
    parameter group, which is the call SGD's multi-tensor path makes, so the same bits.

    Why not torch's: building any ``torch.optim`` optimizer imports ``torch._dynamo`` (its
    ``add_param_group`` is wrapped to disable the compiler), about 0.8 s of every process that
    trains, against ~0.16 s for a whole client update of paper 001's recipe. Only what
    :func:`train_lm` and :func:`clipped_step` use is here: ``param_groups`` (with ``lr``),
    ``zero_grad`` and ``step``. Parameters with dense gradients only (as the models here have).
    """

    def __init__(self, params, lr: float) -> None:
        self.param_groups = [{"params": list(params), "lr": float(lr)}]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if any(p.grad.is_sparse for p in params):
                raise ValueError("PlainSGD takes dense gradients only")
            if params:
                torch._foreach_add_(params, [p.grad for p in params], alpha=-group["lr"])


def clipped_step(opt: "torch.optim.Optimizer | PlainSGD", params: list[torch.nn.Parameter], max_grad_norm: float,
                 linear: bool) -> None:
    """One optimizer step on the gradients clipped to L2 norm ``max_grad_norm`` (0: no clipping),
    as ``clip_grad_norm_`` clips: factor ``min(1, max_grad_norm / (norm + 1e-6))``.

    ``linear``: the update is linear in the gradient (plain SGD), so the factor scales the
    learning rate for this step instead of every gradient (one pass over the parameters fewer;
    the same update up to rounding).
    """
    if not max_grad_norm or max_grad_norm <= 0:
        opt.step()
        return
    if not linear:
        torch.nn.utils.clip_grad_norm_(params, max_grad_norm, foreach=True)
        opt.step()
        return
    grads = [p.grad for p in params if p.grad is not None]
    norm = float(torch.nn.utils.get_total_norm(grads, foreach=True)) if grads else 0.0
    factor = min(1.0, max_grad_norm / (norm + 1e-6))
    if factor == 1.0:
        opt.step()
        return
    rates = [group["lr"] for group in opt.param_groups]
    for group, lr in zip(opt.param_groups, rates):
        group["lr"] = lr * factor
    try:
        opt.step()
    finally:
        for group, lr in zip(opt.param_groups, rates):
            group["lr"] = lr


def make_delta(init_state: dict[str, torch.Tensor], new_state: dict[str, torch.Tensor],
               snap: bool = True, out: dict[str, torch.Tensor] | None = None
               ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor] | None]:
    """``(delta, new_snapped)``: delta = init - new (paper 001's sign) in the parameters' dtype.

    Floating-point subtraction does not always invert (``a - (a - b)`` may differ from ``b`` in
    the last bit), so the model to write is snapped to ``init - delta``: then whoever adds the
    delta back gets the written model bit for bit. The snap moves a weight by at most one
    rounding of ``init``'s magnitude. ``snap=False``: no model is to be written, and
    ``new_snapped`` is None (one pass over the parameters fewer).

    ``out``: CPU tensors of the parameters' names, shapes and dtypes to write the delta into
    (e.g. a worker's shared-memory buffer, :mod:`asrpriv.federated.client_pool`); the values
    are those of the allocating path bit for bit.
    """
    if init_state.keys() != new_state.keys():
        raise ValueError("init and new models have different parameters")
    delta, snapped = {}, {}
    for name, a in init_state.items():
        b = new_state[name]
        if a.shape != b.shape or a.dtype != b.dtype:
            raise ValueError(f"parameter {name}: init and new differ in shape or dtype")
        a = a.detach().cpu()
        d = out[name] if out is not None else torch.empty_like(a)
        if a.is_floating_point():
            torch.sub(a, b.detach().cpu(), out=d)
        else:
            d.zero_()
        delta[name] = d
        if snap:
            snapped[name] = a - d if a.is_floating_point() else b.detach().cpu().clone()
    return delta, (snapped if snap else None)
