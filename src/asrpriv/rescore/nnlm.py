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

Speed: a Transformer with ``tree_hidden`` (asrpriv.nnlm.model) scores *prefix trees*
(:mod:`asrpriv.rescore.prefix_tree`): the hypotheses of an utterance become one trie per row,
each distinct history is one node, and one forward pass over a group of rows gives every node's
state (attention restricted to the node's ancestors). The output layer then runs once per
distinct history, as ``states @ W^T`` in tiles of nodes x vocabulary rows that stay in cache
while they are exponentiated and summed, and its normalizer is ``log(sum(exp(logits)))``; a
node whose sum overflows or underflows fp32 is recomputed with the max-shifted ``logsumexp``.
On a CPU with several torch threads the forward passes and the output layer's blocks of nodes
are tasks of as many worker threads, each running torch single-threaded (:meth:`NnlmScorer._workers`).
Other models (the LSTM) score padded rows: hypotheses are sorted by length and cut into batches
of at most ``batch_tokens`` padded positions, identical (sentence, factors) pairs once; right
padding is safe for a causal model (padded positions never affect earlier ones) and padded
targets are masked out.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Sequence

import numpy as np

from asrpriv.errors import AsrprivError, InputError, arg
from asrpriv.nnlm.gemm import plan_batches


class NnlmScorer:
    """A neural LM from a model file (``finetune-lm``) that scores many sentences at once.

    Args:
        path: the model file (loaded with ``asrpriv.nnlm.modelfile.load_model``).
        device: ``"cpu"`` or ``"cuda"``.
        batch_tokens: padded positions (rows x longest row) per forward pass.
        normalized: FMP factors renormalized over the vocabulary (True) or added (False).
        precision: ``"fp32"`` (exact as before) or ``"bf16"``: the Transformer blocks run
            under bfloat16 autocast and the output layer's logit tiles are bfloat16 products
            (exponentials, sums and target logits stay fp32). Opt-in; needs a CPU with bf16
            instructions (AVX512-BF16/AMX, :func:`asrpriv.nnlm.runtime.bf16_supported`) or a GPU
            that has them.

    Attributes:
        method: ``"tree"`` (prefix trees, models with ``tree_hidden``) or ``"padded"`` (any
            model of the contract); set it to compare the two.
    """

    def __init__(self, path: str, device: str = "cpu", batch_tokens: int = 4096,
                 normalized: bool = True, precision: str = "fp32") -> None:
        import torch

        from asrpriv.nnlm.modelfile import load_model
        from asrpriv.nnlm.runtime import bf16_supported, check_device

        check_device(device)
        if precision not in ("fp32", "bf16"):
            raise AsrprivError(f"{arg('precision')} must be fp32 or bf16, got {precision!r}")
        if precision == "bf16" and not bf16_supported(device):
            raise AsrprivError(f"{arg('precision')} bf16: {device} has no bfloat16 support "
                               "(on CPU: AVX512-BF16 or AMX); use fp32")
        self.low = torch.bfloat16 if precision == "bf16" else None
        self.precision = precision
        if device == "cpu":
            from asrpriv.allocator import retain_freed_blocks

            retain_freed_blocks()
        self.model, self.vocab, self.config = load_model(path, device)
        self.model.eval()
        self.path = path
        self.device = device
        self.batch_tokens = max(1, int(batch_tokens))
        self.normalized = normalized
        self.max_len = _max_positions(self.config)
        self.method = "tree" if callable(getattr(self.model, "tree_hidden", None)) else "padded"
        with torch.inference_mode():
            probe = self.model(torch.tensor([[self.vocab.bos_id]], device=device))
        if probe.dim() != 3 or probe.shape[-1] != len(self.vocab):
            raise InputError(path, None, f"model/vocabulary mismatch: the model predicts "
                                         f"{probe.shape[-1]} words, its vocabulary has {len(self.vocab)}")

    def encode(self, words: Sequence[str]) -> list[int]:
        """Word ids (OOV -> ``<unk>``), without ``<s>``/``</s>``."""
        return self.vocab.encode(words)

    def score(self, seqs: Sequence[Sequence[int]], groups: Sequence[int] | None = None,
              factor_vectors: Sequence | None = None,
              units: Sequence[int] | None = None) -> list[float]:
        """Natural-log sentence scores of id sequences.

        Args:
            seqs: word ids of each sentence (no ``<s>``/``</s>``).
            groups: per sentence, an index into ``factor_vectors``, or -1 for no factors.
            factor_vectors: log-factor vectors (torch, length |V|).
            units: per sentence, its utterance (any int); adjacent sentences of one unit and
                group share their histories. None: adjacent sentences of a group share.

        Returns:
            one float per sentence: ``sum_t ln p'(target_t | history)`` including ``</s>``.
        """
        import torch

        n = len(seqs)
        if groups is None:
            groups = [-1] * n
        if self.max_len is not None:
            for seq in seqs:
                if len(seq) + 1 > self.max_len:
                    raise AsrprivError(f"a hypothesis of {len(seq)} words is longer than the "
                                       f"model's {self.max_len - 1}-word limit")
        table = None
        if factor_vectors is not None and len(factor_vectors) > 0 and any(g >= 0 for g in groups):
            # row 0: no factors; row g + 1: factor_vectors[g]
            table = torch.stack([torch.zeros_like(factor_vectors[0])] + list(factor_vectors)) \
                .float().to(self.device)
        with torch.inference_mode():
            if self.method == "tree":
                return self._tree(seqs, groups, units, table)
            return self._padded(seqs, groups, table)

    def _autocast(self):
        """bfloat16 autocast for the model's blocks with ``precision="bf16"``, else nothing."""
        import torch
        from contextlib import nullcontext

        if self.low is None:
            return nullcontext()
        return torch.autocast(device_type=torch.device(self.device).type, dtype=self.low)

    @contextmanager
    def _workers(self):
        """Yields a ``map(fn, items)`` that runs ``fn`` on the items in parallel, for the tree scorer.

        On a CPU with ``n > 1`` torch threads: ``n`` Python worker threads, each running torch
        single-threaded (``torch.set_num_threads(1)`` for the duration, restored after), each
        taking whole batches of rows or blocks of nodes. torch releases the GIL inside its
        operators, so the workers run in parallel; against ``n`` OpenMP threads per operator
        this removes a fork/join and barrier per operator (thousands per call: logit tiles,
        norms, adds, index copies, some of which run serially), and each worker's tiles stay
        in its own core's cache. Measured on the whole AMI dev set (2-core Xeon, paper-shape
        Transformer, 256-utterance chunks as rescore-nbest scores them): 6-7% less scoring time;
        beside a competing CPU-bound job 0.86x the one-thread time, where OpenMP threads took
        1.39-1.54x (docs/PERFORMANCE.md). Workers see none of the caller's thread-local torch
        state: each one enters ``inference_mode`` and the autocast of ``precision`` itself.
        Elsewhere (one thread, a GPU): a plain loop. torch's thread count is process-wide, so
        one scorer call at a time per process (as the steps do).
        """
        import torch

        n = torch.get_num_threads()
        if self.device != "cpu" or n <= 1:
            yield lambda fn, items: [fn(item) for item in items]
            return
        torch.set_num_threads(1)
        try:
            with ThreadPoolExecutor(n, thread_name_prefix="asrpriv-score") as pool:
                yield lambda fn, items: list(pool.map(fn, items))
        finally:
            torch.set_num_threads(n)

    def _tree(self, seqs, groups, units, table) -> list[float]:
        """Prefix trees (module docstring); exact, each distinct history once."""
        import torch

        from asrpriv.rescore.prefix_tree import PrefixForest

        keys = list(zip(units, groups)) if units is not None else groups
        forest = PrefixForest(seqs, keys, self.vocab.bos_id, self.vocab.eos_id, classes=groups)
        if forest.n_nodes == 0:  # no sentences
            return []
        device = self.device
        model = self.model
        as_tensor = lambda a: torch.from_numpy(a).to(device)  # noqa: E731
        tokens, depths = as_tensor(forest.tokens), as_tensor(forest.depths)
        states = torch.empty(forest.n_nodes, self.model.output.weight.shape[1], device=device)

        def hidden(rows) -> None:  # one forward pass over a group of rows (a worker's task)
            nodes, slots, allowed = forest.layout(rows)
            nodes_t = as_tensor(nodes)
            with torch.inference_mode(), self._autocast():
                h = model.tree_hidden(tokens[nodes_t], depths[nodes_t], as_tensor(slots),
                                      as_tensor(allowed).unsqueeze(1))
                states.index_copy_(0, nodes_t, h.float())  # disjoint rows per task

        with self._workers() as each:
            # at least FORWARD_TASKS forward passes where the rows allow, so that workers finish
            # together; the cut does not depend on the worker count (same scores, bit for bit,
            # with any --threads)
            budget = min(self.batch_tokens, max(MIN_TASK_SLOTS, forest.n_nodes // FORWARD_TASKS))
            each(hidden, forest.batches(budget))
            # the output layer runs once per distinct (group, history), on one node's state
            hist_group = as_tensor(forest.history_class + 1)
            pos_hist = as_tensor(forest.history[forest.pos_node])
            pos_target = as_tensor(forest.pos_target)
            target_logit, lse = self._output_layer(
                states.index_select(0, as_tensor(forest.history_node)), hist_group, pos_hist,
                pos_target, table, each)
        lp = target_logit - lse.index_select(0, pos_hist)
        if table is not None:
            # normalized: f(w) in the numerator (lse includes the factors); else added
            lp = lp + table[hist_group.index_select(0, pos_hist), pos_target]
        sums = torch.zeros(len(seqs), dtype=torch.float64, device=device)
        sums.index_add_(0, as_tensor(forest.pos_seq), lp.double())
        return sums.tolist()

    def target_logprobs(self, states, targets):
        """``ln P(target_i | state_i)`` (float32 [N]) of states ``[N, d]``, no factors.

        The rescorer's tiled output layer (:meth:`_output_layer`), for callers that have one
        state per scored position (approx-ngram).
        """
        import torch

        n = states.shape[0]
        if n == 0:
            return states.new_zeros(0)
        zeros = torch.zeros(n, dtype=torch.long, device=states.device)
        pos = torch.arange(n, device=states.device)
        with self._workers() as each:
            target_logit, lse = self._output_layer(states, zeros, pos, targets, None, each)
        return target_logit - lse

    def _output_layer(self, states, node_group, pos_node, pos_target, table, each):
        """Target logits [P] and normalizers [N] of the nodes' output distributions.

        ``logit_v = W_v . h + b_v`` and, normalized with factors, the normalizer is
        ``logsumexp_v (logit_v + f_v)``, computed as ``log(sum(exp(logits)))``. The nodes go in
        blocks of ``OUTPUT_BLOCK`` (one task of ``each``, a map from :meth:`_workers`); a
        block's logits are made ``OUTPUT_ROWS`` vocabulary rows at a time (``states[block] @
        W[rows]^T``, a tile that stays in the core's cache while it is exponentiated and
        summed). The bias and the factors, when every ``|b_v + f_v| <= SCALE_LIMIT``, enter as
        weights: ``sum_v exp(W_v . h) * exp(b_v + f_v)`` (one matrix-vector product per factor
        group and tile, instead of the bias's broadcast copy, an add pass and a sum pass). A
        node whose sum overflows fp32 or is below ``MIN_SUM`` is recomputed as a max-shifted
        ``logsumexp``. Target logits are the dot products ``W_t . h + b_t`` of each scored
        position.
        """
        import torch

        device = states.device
        out = self.model.output
        weight = out.weight.float()
        bias = out.bias.float() if out.bias is not None else None
        factors = table if (table is not None and self.normalized) else None
        # the bias and the log-factors enter as weights exp(b_v + f_v) of a matrix-vector product
        # over each exponentiated tile when every |b_v + f_v| <= SCALE_LIMIT; else they are added
        log_scale = factors
        if bias is not None:
            log_scale = bias.unsqueeze(0) if log_scale is None else log_scale + bias
        scale = None
        if log_scale is not None and bool(log_scale.abs().max() <= SCALE_LIMIT):
            scale = log_scale.exp().t().contiguous()  # [V, G]: a column per factor group (or the bias)
        states = states.float().contiguous()
        n = states.shape[0]
        w_tiles = list((weight if self.low is None else weight.to(self.low)).split(OUTPUT_ROWS))
        s_tiles = list(scale.split(OUTPUT_ROWS)) if scale is not None else [None] * len(w_tiles)
        b_tiles = list(bias.split(OUTPUT_ROWS)) if bias is not None else [None] * len(w_tiles)
        lse = torch.empty(n, dtype=torch.float32, device=device)

        def normalizers(start: int) -> None:  # one block of nodes (a worker's task)
            with torch.inference_mode():
                block = states[start:start + OUTPUT_BLOCK]
                g = node_group[start:start + OUTPUT_BLOCK]
                width = block.shape[0]
                if scale is not None and factors is not None:
                    groups, which = torch.unique(g, return_inverse=True)
                    picked = [tile.index_select(1, groups) for tile in s_tiles]  # [rows, G]
                else:
                    picked = s_tiles
                total = torch.zeros(width, picked[0].shape[1] if scale is not None else 1, device=device)
                # factors that do not enter as weights: this block's rows of them, tile by tile
                f_tiles = (factors.index_select(0, g).split(OUTPUT_ROWS, dim=1)
                           if (factors is not None and scale is None) else [None] * len(w_tiles))
                low = block.to(self.low) if self.low is not None else None
                z_buf = torch.empty(width, OUTPUT_ROWS, device=device) if low is None else None
                for w, s, b, f in zip(w_tiles, picked, b_tiles, f_tiles):
                    if low is not None:  # a bf16 product, summed in fp32
                        z = (low @ w.t()).float()
                        if scale is None and b is not None:
                            z += b
                    elif scale is None and b is not None:
                        z = torch.addmm(b, block, w.t(), out=z_buf[:, :w.shape[0]])
                    else:
                        z = torch.mm(block, w.t(), out=z_buf[:, :w.shape[0]])
                    if scale is not None:
                        total.addmm_(z.exp_(), s)
                    else:
                        if f is not None:
                            z += f
                        total += z.exp_().sum(dim=1, keepdim=True)
                if scale is not None and factors is not None:
                    total = total.gather(1, which.unsqueeze(1))
                total = total.squeeze(1)
                block_lse = total.log()
                bad = ~torch.isfinite(block_lse) | (total < MIN_SUM)
                if bool(bad.any()):
                    idx = bad.nonzero().squeeze(1)
                    again = block.index_select(0, idx) @ weight.t()
                    if bias is not None:
                        again += bias
                    if factors is not None:
                        again += factors.index_select(0, g.index_select(0, idx))
                    block_lse[idx] = torch.logsumexp(again, dim=1)
                lse[start:start + width] = block_lse

        def targets(start: int) -> None:  # a block of positions: a [positions, d] gather of W rows
            with torch.inference_mode():
                t = pos_target[start:start + TARGET_BLOCK]
                dots = (weight.index_select(0, t) * states.index_select(0, pos_node[start:start + TARGET_BLOCK])).sum(dim=1)
                target_logit[start:start + TARGET_BLOCK] = dots if bias is None else dots + bias.index_select(0, t)

        target_logit = torch.empty(len(pos_node), dtype=torch.float32, device=device)
        each(normalizers, range(0, n, OUTPUT_BLOCK))
        each(targets, range(0, len(pos_node), TARGET_BLOCK))
        return target_logit, lse

    def _padded(self, seqs, groups, table) -> list[float]:
        """Any model of the contract: padded length-sorted rows, logits at every position."""
        import torch

        from asrpriv.nnlm.score import pad_batch

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
        results = [0.0] * len(keys)
        bos, eos = self.vocab.bos_id, self.vocab.eos_id
        for batch in plan_batches([len(k[0]) + 1 for k in keys], self.batch_tokens):
            inp, tgt, mask = pad_batch([np.array([bos, *keys[j][0], eos], dtype=np.int64) for j in batch], eos)
            inp, tgt, mask = inp.to(self.device), tgt.to(self.device), mask.to(self.device)
            with self._autocast():
                logits = self.model(inp)
            logits = logits.float()
            if table is not None:
                g = torch.tensor([keys[j][1] + 1 for j in batch], dtype=torch.long, device=self.device)
                f = table[g]  # [B, V]
                if self.normalized:
                    logits = logits + f[:, None, :]
            lse = torch.logsumexp(logits, dim=-1)
            lp = logits.gather(-1, tgt.unsqueeze(-1)).squeeze(-1) - lse
            if table is not None and not self.normalized:
                lp = lp + f.gather(1, tgt)
            for j, value in zip(batch, lp.masked_fill(~mask, 0.0).double().sum(dim=1).tolist()):
                results[j] = value
        return [results[j] for j in back]


#: output-layer nodes per block (one worker's task), and vocabulary rows per tile of a block: a
#: 512 x 1024 fp32 tile (2 MiB) is exponentiated and summed while it is in its core's cache
OUTPUT_BLOCK = 512
OUTPUT_ROWS = 1024
#: scored positions per target-logit task
TARGET_BLOCK = 4096
#: forward passes are cut to make at least this many per call (the last pass of each worker is
#: where the workers wait for one another), none smaller than MIN_TASK_SLOTS node slots
#: (smaller passes lose product speed)
FORWARD_TASKS = 12
MIN_TASK_SLOTS = 1024
#: the largest |log-factor| that enters the normalizer as a weight exp(f)
SCALE_LIMIT = 30.0
#: a normalizer sum below this (fp32 terms may have lost precision) is recomputed max-shifted;
#: with |f| <= 30 a term loses at most ~1e-25 absolute, so the relative error stays < 1e-8
MIN_SUM = 1e-12


def _max_positions(config) -> int | None:
    """The longest input the model accepts, if its config says (learned position tables)."""
    if not isinstance(config, dict):
        return None
    for key in ("max_len", "max_length", "max_positions", "context", "max_seq_len"):
        value = config.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return None
