"""Batched neural-LM sentence scores, with FMP factors (paper 000, Eq. 1).

A sentence ``w1..wn`` is scored as in docs/CONTRACTS.md: input ``<s> w1 .. wn``, targets
``w1 .. wn </s>``; its score is ``sum_{t=1..n+1} ln p(target_t | <s> w_<t)`` (natural log).

FMP factors ``f`` (a natural-log vector over the vocabulary, see :mod:`asrpriv.rescore.factors`):

- normalized (default, Eq. 1 with its exact ``Z(h)``):
  ``ln p'(w|h) = logit_w(h) + f(w) - logsumexp_v (logit_v(h) + f(v))``, i.e. the target entry of
  ``log_softmax(logits + f)``; ``Z(h)`` is summed over the whole vocabulary at every position,
  which costs one vector add per position on top of the plain ``log_softmax``;
- unnormalized (000 §2.1, "unnormalized version ... for efficiency"):
  ``ln p'(w|h) = ln p(w|h) + f(w)``.

Speed: hypotheses are sorted by length and cut into batches of at most ``batch_tokens`` padded
positions, so a batch wastes little on padding; identical (sentence, factors) pairs are scored
once. Right padding is safe for a causal model (padded positions never affect earlier ones) and
padded targets are masked out.
"""

from __future__ import annotations

from typing import Sequence

from asrpriv.errors import AsrprivError, InputError


def plan_batches(lengths: Sequence[int], batch_tokens: int) -> list[list[int]]:
    """Cut indices into batches, longest first, of at most ``batch_tokens`` padded positions.

    ``lengths`` are the padded-row lengths (words + 1). A row longer than the budget gets a
    batch of its own. Sorting by length keeps padding small; ties keep input order.
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    width = 0
    for i in order:
        n = lengths[i]
        new_width = max(width, n)
        if current and new_width * (len(current) + 1) > batch_tokens:
            batches.append(current)
            current, width = [], 0
            new_width = n
        current.append(i)
        width = new_width
    if current:
        batches.append(current)
    return batches


class NnlmScorer:
    """A neural LM from a model file (``finetune-lm``) that scores many sentences at once.

    Args:
        path: the model file (loaded with ``asrpriv.nnlm.modelfile.load_model``).
        device: ``"cpu"`` or ``"cuda"``.
        batch_tokens: padded positions (rows x longest row) per forward pass.
        normalized: FMP factors renormalized over the vocabulary (True) or added (False).
    """

    def __init__(self, path: str, device: str = "cpu", batch_tokens: int = 4096,
                 normalized: bool = True) -> None:
        import torch

        from asrpriv.nnlm.modelfile import load_model

        if device.startswith("cuda") and not torch.cuda.is_available():
            raise AsrprivError("--device cuda: no CUDA device is available")
        self.model, self.vocab, self.config = load_model(path, device)
        self.model.eval()
        self.path = path
        self.device = device
        self.batch_tokens = max(1, int(batch_tokens))
        self.normalized = normalized
        self.max_len = _max_positions(self.config)
        # Shared-history scoring (see _real_positions) is exact but measured slower on 2 CPU
        # cores than one full forward per batch (2000 AMI 20-best hyps, FMP Transformer shape,
        # same run: 224 vs 236-258 hyps/s; real positions without sharing: 158), so it is off
        # by default; set ``share_histories = True`` to use it (e.g. to measure on a GPU).
        self.split_output = False
        self.can_share_histories = _has_hidden(self.model)
        with torch.inference_mode():
            probe = self.model(torch.tensor([[self.vocab.bos_id]], device=device))
        if probe.dim() != 3 or probe.shape[-1] != len(self.vocab):
            raise InputError(path, None, f"model/vocabulary mismatch: the model predicts "
                                         f"{probe.shape[-1]} words, its vocabulary has {len(self.vocab)}")

    @property
    def share_histories(self) -> bool:
        return self.split_output and self.can_share_histories

    @share_histories.setter
    def share_histories(self, value: bool) -> None:
        self.split_output = bool(value)

    def encode(self, words: Sequence[str]) -> list[int]:
        """Word ids (OOV -> ``<unk>``), without ``<s>``/``</s>``."""
        return self.vocab.encode(words)

    def score(self, seqs: Sequence[Sequence[int]], groups: Sequence[int] | None = None,
              factor_vectors: Sequence | None = None) -> list[float]:
        """Natural-log sentence scores of id sequences.

        Args:
            seqs: word ids of each sentence (no ``<s>``/``</s>``).
            groups: per sentence, an index into ``factor_vectors``, or -1 for no factors.
            factor_vectors: log-factor vectors (torch, length |V|).

        Returns:
            one float per sentence: ``sum_t ln p'(target_t | history)`` including ``</s>``.
        """
        import torch

        n = len(seqs)
        if groups is None:
            groups = [-1] * n
        # identical (sentence, factors) pairs are scored once
        unique: dict[tuple, int] = {}
        back = []
        for seq, g in zip(seqs, groups):
            key = (tuple(seq), g)
            j = unique.get(key)
            if j is None:
                j = unique[key] = len(unique)
            back.append(j)
        keys = list(unique)
        if self.max_len is not None:
            for seq, _g in keys:
                if len(seq) + 1 > self.max_len:
                    raise AsrprivError(f"a hypothesis of {len(seq)} words is longer than the "
                                       f"model's {self.max_len - 1}-word limit")
        use_factors = factor_vectors is not None and len(factor_vectors) > 0 and any(g >= 0 for _s, g in keys)
        if use_factors:
            table = torch.stack([torch.zeros_like(factor_vectors[0])] + list(factor_vectors)).to(self.device)
        results = [0.0] * len(keys)
        bos, eos = self.vocab.bos_id, self.vocab.eos_id
        with torch.inference_mode():
            for batch in plan_batches([len(k[0]) + 1 for k in keys], self.batch_tokens):
                width = len(keys[batch[0]][0]) + 1
                rows = len(batch)
                inp = torch.full((rows, width), eos, dtype=torch.long)
                tgt = torch.full((rows, width), eos, dtype=torch.long)
                mask = torch.zeros((rows, width), dtype=torch.bool)
                for r, j in enumerate(batch):
                    seq = keys[j][0]
                    m = len(seq)
                    inp[r, 0] = bos
                    if m:
                        s = torch.tensor(seq, dtype=torch.long)
                        inp[r, 1:m + 1] = s
                        tgt[r, :m] = s
                    mask[r, :m + 1] = True
                inp, tgt, mask = inp.to(self.device), tgt.to(self.device), mask.to(self.device)
                g = None
                if use_factors:
                    g = torch.tensor([keys[j][1] + 1 for j in batch], dtype=torch.long, device=self.device)
                if self.split_output and self.can_share_histories:
                    lp = self._real_positions(inp, tgt, mask, g, table if use_factors else None)
                else:
                    lp = self._full(inp, tgt, mask, g, table if use_factors else None)
                for r, j in enumerate(batch):
                    results[j] = lp[r]
        return [results[j] for j in back]


    def _full(self, inp, tgt, mask, g, table) -> list[float]:
        """Any model of the contract: logits at every position [B, T, V]."""
        import torch

        logits = self.model(inp).float()
        if table is not None:
            f = table[g]  # [B, V]
            if self.normalized:
                logits = logits + f[:, None, :]
        lse = torch.logsumexp(logits, dim=-1)
        lp = logits.gather(-1, tgt.unsqueeze(-1)).squeeze(-1) - lse
        if table is not None and not self.normalized:
            lp = lp + f.gather(1, tgt)
        return lp.masked_fill(~mask, 0.0).double().sum(dim=1).tolist()

    def _real_positions(self, inp, tgt, mask, g, table) -> list[float]:
        """Models with ``hidden(ids, mask)`` and ``output`` (asrpriv.nnlm.model): the output
        layer runs on real positions only, and the normalizer ``logsumexp_v`` once per distinct
        history of the batch (hypotheses of one utterance share long prefixes; a causal model
        gives a shared prefix the same state), in row blocks that stay in cache. The target's
        logit is a dot product with its output row."""
        import torch

        states = self.model.hidden(inp, mask)  # [N_real, d], order of mask.nonzero()
        pos = mask.nonzero()
        row_of = pos[:, 0]
        targets = tgt[mask]
        # distinct histories: a trie over (factor group, <s> w1 .. w_t), built row by row
        trie: dict[tuple, int] = {}
        first: list[int] = []
        inv: list[int] = []
        inp_rows = inp.tolist()
        lengths = mask.sum(dim=1).tolist()
        groups = g.tolist() if g is not None else None
        p = 0
        for r, length in enumerate(lengths):
            node = -1 - (groups[r] if groups is not None else 0)
            ids = inp_rows[r]
            for t in range(length):
                key = (node, ids[t])
                u = trie.get(key)
                if u is None:
                    u = trie[key] = len(first)
                    first.append(p)
                inv.append(u)
                node = u
                p += 1
        device = states.device
        first_t = torch.tensor(first, dtype=torch.long, device=device)
        inv_t = torch.tensor(inv, dtype=torch.long, device=device)
        ustates = states.index_select(0, first_t)
        urow = row_of.index_select(0, first_t)
        n_unique = ustates.shape[0]
        lse = torch.empty(n_unique, dtype=torch.float32, device=device)
        block = OUTPUT_BLOCK
        for start in range(0, n_unique, block):
            sl = slice(start, start + block)
            logits = self.model.output(ustates[sl]).float()
            if table is not None and self.normalized:
                logits += table[g[urow[sl]]]
            lse[sl] = torch.logsumexp(logits, dim=1)
        out = self.model.output
        tlogit = (states.float() * out.weight.float().index_select(0, targets)).sum(dim=1)
        if out.bias is not None:
            tlogit = tlogit + out.bias.float().index_select(0, targets)
        lp = tlogit - lse.index_select(0, inv_t)
        if table is not None:
            lp = lp + table[g[row_of], targets]  # normalized: f(w) in the numerator; else added
        sums = torch.zeros(inp.shape[0], dtype=torch.float64, device=device)
        sums.index_add_(0, row_of, lp.double())
        return sums.tolist()


#: rows of the output layer computed at once (logits of 256 x |V| floats stay in cache)
OUTPUT_BLOCK = 256


def _max_positions(config) -> int | None:
    """The longest input the model accepts, if its config says (learned position tables)."""
    if not isinstance(config, dict):
        return None
    for key in ("max_len", "max_length", "max_positions", "context", "max_seq_len"):
        value = config.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _has_hidden(model) -> bool:
    """True if the model offers ``hidden(input_ids, mask)`` and an ``output`` layer."""
    import inspect

    hidden = getattr(model, "hidden", None)
    if hidden is None or not callable(getattr(model, "output", None)):
        return False
    try:
        return "mask" in inspect.signature(hidden).parameters
    except (TypeError, ValueError):
        return False
