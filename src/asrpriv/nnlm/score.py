"""Sentence log-probabilities and perplexity under a neural LM (natural log).

Conventions (the same as ARPA/kenlm): a sentence ``w1..wn`` is scored as input
``<s> w1 .. wn`` with targets ``w1 .. wn </s>``; its log-probability is the sum of the n+1
target log-probabilities (``</s>`` counted, ``<s>`` context only). OOV words are scored as
``<unk>``. Perplexity = exp(-sum ln p / (words + sentences)).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from asrpriv.nnlm.vocab import Vocabulary


def encode_sentences(vocab: Vocabulary, sentences: Sequence[Sequence[str]]) -> list[np.ndarray]:
    """Each sentence as an int64 array ``[<s>, w1..wn, </s>]`` (OOV -> ``<unk>``)."""
    bos, eos = vocab.bos_id, vocab.eos_id
    return [np.array([bos, *vocab.encode(s), eos], dtype=np.int64) for s in sentences]


def pad_batch(seqs: Sequence[np.ndarray], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-pad ``[<s> .. </s>]`` arrays: ``(inputs[B,T], targets[B,T], mask[B,T] bool)``.

    T = longest sentence's word count + 1; inputs drop each sequence's last token, targets
    its first; ``mask`` marks real targets (False on padding).
    """
    lengths = np.fromiter((len(s) - 1 for s in seqs), dtype=np.int64, count=len(seqs))
    width = int(lengths.max())
    full = np.full((len(seqs), width + 1), pad_id, dtype=np.int64)
    for i, s in enumerate(seqs):
        full[i, : len(s)] = s
    full_t = torch.from_numpy(full)
    mask = torch.from_numpy(np.arange(width)[None, :] < lengths[:, None])
    return full_t[:, :-1], full_t[:, 1:], mask


def masked_logprobs(model: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor,
                    mask: torch.Tensor) -> torch.Tensor:
    """``ln P(target)`` (``log_softmax`` of the float32 logits) at the real positions of a
    :func:`pad_batch` batch, row by row (masked rows are left-aligned, so sentence by sentence).

    A model with ``hidden``/``output`` runs its output layer on the real positions only.
    """
    if hasattr(model, "hidden"):
        logits = model.output(model.hidden(inputs, mask)).float()
        return torch.log_softmax(logits, dim=-1).gather(
            -1, targets[mask].unsqueeze(-1)).squeeze(-1)
    logits = model(inputs).float()
    return torch.log_softmax(logits, dim=-1).gather(
        -1, targets.unsqueeze(-1)).squeeze(-1)[mask]


@torch.inference_mode()
def sentence_logprobs(model: torch.nn.Module, vocab: Vocabulary,
                      sentences: Sequence[Sequence[str]], batch_size: int = 64,
                      device: str = "cpu") -> list[float]:
    """Natural-log probability of each sentence (words lists), ``</s>`` included.

    Sentences are scored in batches of similar length (sorted internally); the result is in
    input order. The model is put in eval mode.
    """
    model.eval()
    seqs = encode_sentences(vocab, sentences)
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    out = [0.0] * len(seqs)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        inputs, targets, mask = pad_batch([seqs[i] for i in idx], vocab.eos_id)
        inputs, targets, mask = inputs.to(device), targets.to(device), mask.to(device)
        if hasattr(model, "hidden"):  # output layer and softmax at real positions only
            logits = model.output(model.hidden(inputs, mask)).float()
            picked = torch.log_softmax(logits, dim=-1).gather(-1, targets[mask].unsqueeze(-1)).squeeze(-1)
            logp = torch.zeros(mask.shape, dtype=picked.dtype, device=device)
            logp[mask] = picked
        else:
            logits = model(inputs).float()
            logp = torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
            logp = logp * mask
        sums = logp.sum(dim=1).tolist()
        for i, value in zip(idx, sums):
            out[i] = value
    return out
