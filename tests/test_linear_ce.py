"""The fused output layer + cross-entropy used in training, against autograd's own chain."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from asrpriv.nnlm.linear_ce import linear_cross_entropy


def _inputs(n=37, d=12, v=53, dtype=torch.float64, scale=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(n, d, generator=g, dtype=dtype)
    w = torch.randn(v, d, generator=g, dtype=dtype) * scale
    b = torch.randn(v, generator=g, dtype=dtype)
    t = torch.randint(0, v, (n,), generator=g)
    t[:3] = 0  # repeated targets
    return h, w, b, t


def _reference(h, w, b, t):
    return F.cross_entropy(F.linear(h, w, b), t, reduction="none")


@pytest.mark.parametrize("n", [37, 40])  # 37: padded to 40 columns inside (asrpriv.nnlm.gemm)
@pytest.mark.parametrize("scale", [1.0, 40.0])  # 40: logits far beyond exp's fp32 range
def test_values_and_gradients_equal_autograd(scale, n):
    h, w, b, t = _inputs(n=n, scale=scale)
    weights = torch.rand(len(t), generator=torch.Generator().manual_seed(1), dtype=h.dtype)
    got_params = [x.clone().requires_grad_() for x in (h, w, b)]
    ref_params = [x.clone().requires_grad_() for x in (h, w, b)]
    got = linear_cross_entropy(*got_params, t)
    ref = _reference(*ref_params, t)
    torch.testing.assert_close(got, ref, rtol=1e-10, atol=1e-10)
    (got * weights).sum().backward()
    (ref * weights).sum().backward()
    for a, r in zip(got_params, ref_params):
        torch.testing.assert_close(a.grad, r.grad, rtol=1e-9, atol=1e-9)


def test_float32_overflowing_logits_take_the_shifted_path():
    h, w, b, t = _inputs(dtype=torch.float32, scale=60.0)
    assert float(F.linear(h, w, b).max()) > 89.0  # exp() of these overflows fp32
    got = linear_cross_entropy(h, w, b, t)
    ref = _reference(h.double(), w.double(), b.double(), t).float()
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-4)


def test_gradcheck():
    h, w, b, t = _inputs(n=6, d=4, v=9)
    params = [x.requires_grad_() for x in (h, w, b)]
    assert torch.autograd.gradcheck(lambda *p: linear_cross_entropy(*p, t), params)


def test_frozen_inputs_get_no_gradient_and_no_bias_works():
    h, w, _b, t = _inputs()
    w = w.requires_grad_()
    nll = linear_cross_entropy(h, w, None, t)  # h frozen (output-only training), no bias
    nll.sum().backward()
    ref_w = w.detach().clone().requires_grad_()
    _reference(h, ref_w, None, t).sum().backward()
    assert h.grad is None
    torch.testing.assert_close(w.grad, ref_w.grad)


def test_training_step_equals_unfused_loss():
    """One batch_loss of a real model: the fused path gives the loss and gradients of the
    plain cross-entropy on the same model."""
    from asrpriv.nnlm import train
    from asrpriv.nnlm.score import encode_sentences, pad_batch

    sents = [["the", "cat", "sat"], ["a", "dog"], ["the", "cat", "ran", "far", "away"]]
    vocab = train.vocab_from_sentences(sents)
    model, _ = train.new_model("transformer", vocab, seed=2, emb_dim=16, ffn_dim=32, layers=2, heads=2,
                               dropout=0.0)
    inputs, targets, mask = pad_batch(encode_sentences(vocab, sents), vocab.eos_id)
    loss, _ = train.batch_loss(model, inputs, targets, None, float(mask.sum()), mask)
    loss.backward()
    fused = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    logits = model(inputs)
    ref = F.cross_entropy(logits[mask], targets[mask])
    ref.backward()
    assert float(loss.detach()) == pytest.approx(float(ref.detach()), rel=1e-6)
    for n, p in model.named_parameters():
        torch.testing.assert_close(fused[n], p.grad, rtol=1e-4, atol=1e-6)
