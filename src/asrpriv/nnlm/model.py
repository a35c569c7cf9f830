"""Word-level causal language models (torch).

Both models map ``input_ids: LongTensor[B, T]`` to ``logits: FloatTensor[B, T, V]``, where
position t's logits predict token t+1 (natural-log softmax gives log-probabilities). They are
strictly causal, so right padding never changes the logits of earlier positions.

* :class:`TransformerLM` — the FMP paper's (000) NNLM shape by default: embedding 256,
  feed-forward 1024, 3 decoder blocks (causal self-attention), 4 heads, dropout 0.1,
  sinusoidal positions.
* :class:`LSTMLM` — the 001 paper's NNLM shape by default: 2 LSTM layers of 512 units.

The output layer is always the submodule named ``output`` (an ``nn.Linear``) applied to
``model.hidden(input_ids)``: fine-tuning "the output layer only" (seed 003) trains exactly
``output.*``, and training computes the output layer only at real (unpadded) positions.
:meth:`TransformerLM.tree_hidden` computes the states of prefix-tree nodes (rescore-nbest:
each distinct history of an N-best list once). Dropout is :class:`Dropout` (cheaper CPU masks
than ``nn.Dropout``, same role; no state, so model files are unchanged).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from asrpriv.errors import arg

#: defaults per architecture (the papers' shapes); ``build_model`` fills missing keys from here
DEFAULTS: dict[str, dict] = {
    "transformer": {"emb_dim": 256, "ffn_dim": 1024, "layers": 3, "heads": 4, "dropout": 0.1,
                    "tie_embeddings": False},
    "lstm": {"emb_dim": 512, "hidden_dim": 512, "layers": 2, "dropout": 0.1,
             "tie_embeddings": False},
}


#: query positions per attention call on prefix trees (:meth:`CausalBlock.forward_tree`)
TREE_QUERY_CHUNK = 32


class Dropout(nn.Module):
    """Inverted dropout whose CPU mask costs a third of ``nn.Dropout``'s.

    On CPU, ``nn.Dropout`` draws one Bernoulli variate per element from torch's Mersenne
    Twister (about 7 ns each, 13% of a training step of the paper's Transformer on 2 cores).
    Here each element gets a 16-bit uniform draw, four per 64-bit random word: kept iff
    ``draw < k`` with ``k = round((1 - p) * 65536)``, scaled by ``65536 / k``. So the scaling
    is unbiased exactly (E[mask * scale] = 1) and the drop rate is ``1 - k/65536``, within
    8e-6 of ``p``. Draws come from torch's default generator (``torch.manual_seed`` repeats
    them). Other devices use ``F.dropout``. Same module interface as ``nn.Dropout`` (no state).
    """

    def __init__(self, p: float = 0.1) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout probability must be in [0, 1), got {p}")
        self.p = p
        self.keep = round((1.0 - p) * 65536)
        self.scale = 65536.0 / self.keep

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        if x.device.type != "cpu":
            return F.dropout(x, self.p, True)
        n = x.numel()
        words = torch.empty((n + 3) // 4, dtype=torch.int64).random_(-2 ** 63, 2 ** 63 - 1)
        draws = words.view(torch.int16)[:n].view(x.shape)  # uniform over -32768..32767
        mask = (draws < self.keep - 32768).to(x.dtype) * self.scale
        return x * mask

    def extra_repr(self) -> str:
        return f"p={self.p}"


class CausalBlock(nn.Module):
    """Pre-norm decoder block: causal multi-head self-attention, then a ReLU feed-forward.

    Dropout is applied to each branch's output and inside the feed-forward, not to the
    attention probabilities, so attention runs as one fused causal kernel
    (``scaled_dot_product_attention(is_causal=True)``) without a T x T mask or dropout mask.
    """

    def __init__(self, dim: int, heads: int, ffn_dim: int, dropout: float, device=None) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim, device=device)
        self.qkv = nn.Linear(dim, 3 * dim, device=device)
        self.proj = nn.Linear(dim, dim, device=device)
        self.norm2 = nn.LayerNorm(dim, device=device)
        self.ff1 = nn.Linear(dim, ffn_dim, device=device)
        self.ff2 = nn.Linear(ffn_dim, dim, device=device)
        self.dropout = Dropout(dropout)

    def forward(self, x: torch.Tensor, real: torch.Tensor | None = None) -> torch.Tensor:
        """``x``: [B, T, dim]. ``real``: flat indices (into B*T) of the non-padding positions;
        when given, the feed-forward runs on those only (padding gets none: it is never seen
        by a real position, since padding is on the right and attention is causal)."""
        batch, length, dim = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(batch, length, 3, self.heads, dim // self.heads) \
            .permute(2, 0, 3, 1, 4)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.dropout(self.proj(att.transpose(1, 2).reshape(batch, length, dim)))
        if real is None:
            return x + self._ffn(x)
        flat = x.reshape(-1, dim)
        return flat.index_add(0, real, self._ffn(flat.index_select(0, real))).view(batch, length, dim)

    def _ffn(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.ff2(self.dropout(F.relu(self.ff1(self.norm2(x))))))

    def forward_tree(self, x: torch.Tensor, real: torch.Tensor, slots: torch.Tensor,
                     allowed: torch.Tensor) -> torch.Tensor:
        """Inference on prefix trees: ``x`` is [N, dim], the states of the N real nodes; node i
        sits at flat slot ``real[i]`` of a [rows, width] layout where ``allowed`` ([rows, 1,
        width, width], bool or an additive 0 / -inf float mask) lets a node attend to its
        ancestors and itself only.
        ``slots`` is a zeroed [rows * width, 3 * dim] buffer (reused across blocks: only the
        real slots are written, padding stays zero).

        Only attention needs the [rows, width] layout; the projections and the feed-forward run
        on the N real nodes. With ``allowed`` = causal mask of a single path this is
        :meth:`forward` on that sentence (no dropout: call in eval mode).
        """
        dim = x.shape[1]
        rows, width = allowed.shape[0], allowed.shape[-1]
        slots.index_copy_(0, real, self.qkv(self.norm1(x)).to(slots.dtype))
        q, k, v = slots.view(rows, width, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4)
        if width <= 2 * TREE_QUERY_CHUNK:
            att = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        else:
            # parents precede children in a row, so queries [c, c + chunk) need keys [0, c + chunk)
            # only: about half the work of one dense width x width attention
            att = torch.cat([
                F.scaled_dot_product_attention(q[:, :, c:c + TREE_QUERY_CHUNK], k[:, :, :c + TREE_QUERY_CHUNK],
                                               v[:, :, :c + TREE_QUERY_CHUNK],
                                               attn_mask=allowed[:, :, c:c + TREE_QUERY_CHUNK, :c + TREE_QUERY_CHUNK])
                for c in range(0, width, TREE_QUERY_CHUNK)], dim=2)
        att = att.transpose(1, 2).reshape(rows * width, dim).index_select(0, real)
        x = x + self.proj(att)
        hidden = torch.relu_(self.ff1(self.norm2(x)))
        return x + self.ff2(hidden)


class TransformerLM(nn.Module):
    """Causal Transformer LM (decoder-only, pre-norm blocks, sinusoidal positions)."""

    def __init__(self, vocab_size: int, emb_dim: int = 256, ffn_dim: int = 1024, layers: int = 3,
                 heads: int = 4, dropout: float = 0.1, tie_embeddings: bool = False,
                 device=None) -> None:
        super().__init__()
        if emb_dim % heads:
            raise ValueError(f"embedding size {emb_dim} is not a multiple of {heads} heads")
        self.emb_dim = emb_dim
        self.embedding = _embedding(vocab_size, emb_dim, device)
        self.dropout = Dropout(dropout)
        self.blocks = nn.ModuleList(CausalBlock(emb_dim, heads, ffn_dim, dropout, device)
                                    for _ in range(layers))
        self.norm = nn.LayerNorm(emb_dim, device=device)
        self.output = nn.Linear(emb_dim, vocab_size, device=device)
        if tie_embeddings:
            self.output.weight = self.embedding.weight
        self._pos = torch.empty(0, emb_dim)
        if not _is_meta(device):
            nn.init.normal_(self.embedding.weight, std=emb_dim ** -0.5)
        nn.init.zeros_(self.output.bias)

    def positions(self, length: int, device, dtype) -> torch.Tensor:
        """Sinusoidal position encodings [length, emb_dim] (cached, not saved)."""
        if self._pos.shape[0] < length or self._pos.device != device or self._pos.dtype != dtype:
            n = max(length, 64)
            pos = torch.arange(n, dtype=torch.float32).unsqueeze(1)
            div = torch.exp(torch.arange(0, self.emb_dim, 2, dtype=torch.float32)
                            * (-math.log(10000.0) / self.emb_dim))
            table = torch.zeros(n, self.emb_dim)
            table[:, 0::2] = torch.sin(pos * div)
            table[:, 1::2] = torch.cos(pos * div)[:, : self.emb_dim // 2]
            self._pos = table.to(device=device, dtype=dtype)
        return self._pos[:length]

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.output(self.hidden(input_ids))

    def hidden(self, input_ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The final-norm states [B, T, emb_dim] (the output layer's input).

        With ``mask`` (bool [B, T], True = real position, right padding), the feed-forward
        layers skip padding and only the real positions are returned, as [N_real, emb_dim]
        (the order of ``states[mask]``).
        """
        length = input_ids.shape[1]
        x = self.embedding(input_ids) * math.sqrt(self.emb_dim)
        x = self.dropout(x + self.positions(length, x.device, x.dtype))
        real = None if mask is None else mask.reshape(-1).nonzero().squeeze(1)
        for block in self.blocks:
            x = block(x, real)
        if real is None:
            return self.norm(x)
        return self.norm(x.reshape(-1, self.emb_dim).index_select(0, real))

    def tree_hidden(self, tokens: torch.Tensor, depths: torch.Tensor, real: torch.Tensor,
                    allowed: torch.Tensor) -> torch.Tensor:
        """Final-norm states [N, emb_dim] of the nodes of prefix trees (inference only).

        A node stands for a history ``<s> w1 .. wt``: ``tokens`` [N] holds its last token
        (``<s>`` at a root), ``depths`` [N] its t (its position), ``real`` [N] its flat slot in a
        [rows, width] layout and ``allowed`` (bool [rows, 1, width, width]) its ancestors and
        itself. Each node's state equals the state of position t of :meth:`hidden` on its
        history alone, so histories shared by many sentences are computed once.
        """
        x = self.embedding(tokens) * math.sqrt(self.emb_dim)
        x = x + self.positions(int(depths.max()) + 1, x.device, x.dtype).index_select(0, depths)
        # under autocast the q/k/v slots hold its dtype (bf16): attention reads them as they are,
        # with no fp32 round trip (the same values: bf16 -> fp32 -> bf16 is exact)
        kind = x.device.type
        slots = x.new_zeros(allowed.shape[0] * allowed.shape[-1], 3 * self.emb_dim,
                            dtype=torch.get_autocast_dtype(kind) if torch.is_autocast_enabled(kind) else x.dtype)
        # the mask as an additive 0 / -inf mask of the slots' dtype, made once for all blocks (a
        # boolean mask is converted by attention in every block: ~10% of its time on CPU)
        mask = torch.zeros(allowed.shape, dtype=slots.dtype, device=x.device) \
            .masked_fill_(~allowed, float("-inf"))
        for block in self.blocks:
            x = block.forward_tree(x, real, slots, mask)
        return self.norm(x)


class LSTMLM(nn.Module):
    """LSTM LM: embedding, stacked LSTM, linear output layer."""

    def __init__(self, vocab_size: int, emb_dim: int = 512, hidden_dim: int = 512, layers: int = 2,
                 dropout: float = 0.1, tie_embeddings: bool = False, device=None) -> None:
        super().__init__()
        if tie_embeddings and emb_dim != hidden_dim:
            raise ValueError(f"tied embeddings need {arg('emb_dim')} equal to {arg('hidden_dim')}")
        self.embedding = _embedding(vocab_size, emb_dim, device)
        self.dropout = Dropout(dropout)
        self.rnn = nn.LSTM(emb_dim, hidden_dim, layers, batch_first=True,
                           dropout=dropout if layers > 1 else 0.0, device=device)
        self.output = nn.Linear(hidden_dim, vocab_size, device=device)
        if tie_embeddings:
            self.output.weight = self.embedding.weight
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)
        nn.init.zeros_(self.output.bias)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.output(self.hidden(input_ids))

    def hidden(self, input_ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The top LSTM layer's states after dropout [B, T, hidden_dim] (the output layer's
        input); with ``mask`` (bool [B, T]) only the real positions, as [N_real, hidden_dim]."""
        x = self.dropout(self.embedding(input_ids))
        x, _ = self.rnn(x)
        x = self.dropout(x)
        return x if mask is None else x[mask]


def _is_meta(device) -> bool:
    return device is not None and torch.device(device).type == "meta"


def _embedding(vocab_size: int, dim: int, device) -> nn.Embedding:
    """``nn.Embedding`` (initialised as usual, the same draws); on the meta device without its
    initialiser: ``normal_`` on a meta tensor runs torch's Python reference, whose first use
    imports ``torch._dynamo`` (about 1.1 s)."""
    if not _is_meta(device):
        return nn.Embedding(vocab_size, dim, device=device)
    return nn.Embedding(vocab_size, dim, _weight=torch.empty(vocab_size, dim, device=device))


def make_config(arch: str, vocab_size: int, **options) -> dict:
    """A complete model config: the architecture's defaults updated with ``options`` (None = default)."""
    if arch not in DEFAULTS:
        raise ValueError(f"unknown architecture {arch!r} (expected one of {', '.join(DEFAULTS)})")
    config = {"arch": arch, "vocab_size": int(vocab_size), **DEFAULTS[arch]}
    for key, value in options.items():
        if value is None:
            continue
        if key not in DEFAULTS[arch]:
            raise ValueError(f"option {key!r} does not apply to the {arch} architecture")
        config[key] = type(DEFAULTS[arch][key])(value)
    return config


def build_model(config: dict, device=None) -> nn.Module:
    """A freshly initialised model of ``config`` (as made by :func:`make_config`).

    Initialisation draws from torch's global generator: seed it first for repeatable weights.
    ``device="meta"`` gives the model's shapes without allocating or drawing anything (the
    modules are made on that device directly: a ``with torch.device(...)`` block would route
    every initialiser through torch's function modes, whose first use imports
    ``torch._dynamo``, about 1.1 s of a process's start).
    """
    config = make_config(config["arch"], config["vocab_size"],
                         **{k: v for k, v in config.items() if k not in ("arch", "vocab_size")})
    options = {k: v for k, v in config.items() if k not in ("arch", "vocab_size")}
    cls = TransformerLM if config["arch"] == "transformer" else LSTMLM
    return cls(config["vocab_size"], **options, device=device)
