"""Output layer and cross-entropy in one autograd step, for training (natural log).

``linear_cross_entropy(h, W, b, t)[i] = -ln softmax(h_i W^T + b)[t_i]``, the same numbers as
``F.cross_entropy(F.linear(h, W, b), t, reduction="none")``, with the gradient built in the
forward pass: the logits block becomes ``exp(logits) - sum * onehot(t)`` in place (one exp and
one sum over the [|V|, N] block; positions out of fp32's comfortable range are redone
max-shifted), and the backward pass runs the matrix products on it with the per-position
factor ``incoming gradient / sum`` applied on the [N, d] side. Autograd's chain (log_softmax,
nll_loss, and their backwards) makes three more passes over the logits block, allocates two
more such blocks and computes the exponentials twice.

Use it where the loss will be differentiated; for scoring, ``log_softmax`` does less.
"""

from __future__ import annotations

import torch

from asrpriv.nnlm.gemm import padded_columns


class _LinearCrossEntropy(torch.autograd.Function):
    # the block is kept transposed, [|V|, N] = W @ h^T: MKL runs the three products of this
    # layer 4-13% faster in that layout than with [N, |V|] (2-core AMD EPYC, |V| 7,444-11,823).
    # N (a batch's count of real tokens: arbitrary) is padded with zero rows of hidden to a
    # multiple of 8 (asrpriv.nnlm.gemm: W @ h^T runs ~1.7x faster); padded columns get a zero
    # gradient factor.

    @staticmethod
    def forward(ctx, hidden, weight, bias, targets):
        n = hidden.shape[0]
        pad = padded_columns(n) - n
        if pad:
            hidden = torch.cat([hidden, hidden.new_zeros(pad, hidden.shape[1])])
            targets = torch.cat([targets, targets.new_zeros(pad)])
        h_t = hidden.t()
        logits = torch.addmm(bias.unsqueeze(1), weight, h_t) if bias is not None else weight @ h_t
        at = targets.unsqueeze(0)
        target_logit = logits.gather(0, at).squeeze(0)
        # exp without the max shift (two passes fewer); columns whose sum leaves
        # [MIN_SUM, MAX_SUM] are redone max-shifted and stored normalized (their scale is 1)
        probs = logits.exp_()
        total = probs.sum(dim=0)
        bad = ~((total >= MIN_SUM) & (total <= MAX_SUM))
        log_total = total.log()
        if bool(bad.any()):
            cols = bad.nonzero().squeeze(1)
            again = weight @ hidden.index_select(0, cols).t()
            if bias is not None:
                again += bias.unsqueeze(1)
            top = again.amax(dim=0, keepdim=True)
            again = (again - top).exp_()
            again_total = again.sum(dim=0, keepdim=True)
            probs[:, cols] = again / again_total
            log_total[cols] = (top + again_total.log()).squeeze(0)
            total[cols] = 1.0
        nll = (log_total - target_logit)[:n]
        # column i of d nll_i / d logits = (probs_i - total_i * onehot(t_i)) / total_i
        probs.scatter_add_(0, at, -total.unsqueeze(0))
        ctx.save_for_backward(hidden, weight, probs, total)
        ctx.has_bias = bias is not None
        ctx.n = n
        return nll

    @staticmethod
    def backward(ctx, grad_nll):
        # the factor g_i / total_i moves onto the [N, d] side of each product, so the
        # [|V|, N] block is only read
        hidden, weight, probs, total = ctx.saved_tensors
        n = ctx.n
        g = torch.zeros_like(total)
        g[:n] = grad_nll / total[:n]  # padded columns: 0
        grad_h = ((probs.t() @ weight) * g.unsqueeze(1))[:n] if ctx.needs_input_grad[0] else None
        grad_w = probs @ (hidden * g.unsqueeze(1)) if ctx.needs_input_grad[1] else None
        grad_b = probs @ g if ctx.has_bias and ctx.needs_input_grad[2] else None
        return grad_h, grad_w, grad_b, None


#: sums of exp(logits) outside this range are recomputed max-shifted: below, terms may
#: have lost precision; above, products with the block could overflow fp32
MIN_SUM = 1e-30
MAX_SUM = 1e30


def linear_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                         targets: torch.Tensor) -> torch.Tensor:
    """Per-row negative log-likelihoods [N] (natural log) of ``targets`` [N] under
    ``softmax(hidden @ weight.T + bias)``; ``hidden`` [N, d], ``weight`` [V, d], ``bias`` [V]."""
    return _LinearCrossEntropy.apply(hidden, weight, bias, targets)
