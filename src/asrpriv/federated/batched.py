"""Many clients' local SGD in one pass (``fl-rounds --batch-clients K``).

A round's clients all start from the same global model and run the same recipe (paper 001's
client: plain SGD, batch 8 sentences, Eq. 2-4 losses) on their own data. One at a time
(:func:`asrpriv.federated.client.client_update`), each step of each client is a small
forward/backward pass (8 sentences) whose cost is mostly per-call overhead and an LSTM
recurrence at batch 8. Here K clients take their steps together: the model's parameters are
stacked into ``[K, ...]`` tensors (one copy per client, every copy starting at the global
weights) and every layer runs as one grouped product over the K copies (``torch.bmm``):

* embedding: a gather from each client's own table;
* LSTM (PyTorch's gate order i, f, g, o and its two biases): the input projection of every
  position in one ``bmm``, then the recurrence one time step at a time, ``bmm`` with W_hh;
* output layer: only at the real targets (each client's are gathered, padded to the most in
  the group) -- ``bmm`` with each client's W_out, then cross-entropy weighted as
  :func:`asrpriv.nnlm.train.batch_loss` weights it;
* padding masks: a client's step is padded to the group's widest batch (rows and positions
  that are padding carry weight 0), and a client whose batches are done takes zero-weight
  steps, which leave its weights exactly unchanged (SGD without momentum).

The summed loss's gradient with respect to client k's copy is client k's own gradient, so
each client's SGD step is its own (per-client gradient clipping ``max_grad_norm`` too). Each
client's batches are those of the one-client path: the same sentences, confidence weights
and batch order (:func:`asrpriv.nnlm.train._batches` with the same seeded generator). Then
each delta ``init - new`` is clipped to ``--clip`` on its own, exactly as
:func:`asrpriv.federated.client.client_update` clips it: the DP clipping per client is
unchanged.

**Tolerance.** Without dropout, a batched client's delta equals the one-client path's up to
float32 rounding (a hand-written recurrence and grouped products instead of oneDNN's fused
LSTM): every coordinate within ``RTOL`` of the delta's largest magnitude (tested; the
differences measured on the test's LSTM are ~1e-7 of it). **Dropout** masks are drawn from
a generator seeded per group of clients, not from the one-client path's stream (which the
fused LSTM consumes in its own order): with dropout > 0 the batched deltas are equally
distributed draws, repeatable for a seed, not the one-client path's numbers.

Where the model or the recipe does not allow it (a Transformer, tied embeddings, Adam,
``train_only=output``), :class:`BatchedClients` says so once and trains one client at a
time.
"""

from __future__ import annotations

import math
import os
import time

#: stated tolerance: max |batched - one-client| <= RTOL * max |one-client delta| (dropout 0)
RTOL = 1e-5


def unsupported(config: dict, settings: dict, train_only: str) -> str | None:
    """Why these clients cannot be batched (None: they can)."""
    if config.get("arch") != "lstm":
        return f"the {config.get('arch')} architecture (only the LSTM is batched)"
    if config.get("tie_embeddings"):
        return "tied embeddings"
    if settings.get("optimizer") != "sgd":
        return f"optimizer {settings.get('optimizer')} (only plain SGD is batched)"
    if train_only != "all":
        return f"train_only={train_only}"
    return None


class _Client:
    """One client's prepared data: encoded sentences, target weights, its batches."""

    def __init__(self, name, data, vocab, mode, threshold, loss_norm, batch_size, batch_by,
                 epochs, seed):
        import numpy as np

        from asrpriv.nnlm import losses, train
        from asrpriv.nnlm.score import encode_sentences

        self.name = name
        sentences = list(data.sentences)
        conf = list(data.confidences) if data.confidences is not None else None
        self.dropped = 0
        if mode != "none" and conf is None:
            raise ValueError(f"--confidence {mode} needs a TSV input with a confidence column")
        if mode == "hard":
            keep = losses.keep_mask(conf, threshold)
            self.dropped = keep.count(False)
            sentences = [s for s, k in zip(sentences, keep) if k]
            conf = [c for c, k in zip(conf, keep) if k]
        self.sentences = len(sentences)
        self.words = sum(len(s) for s in sentences)
        self.seqs = encode_sentences(vocab, sentences)
        self.weights = [losses.target_weights(len(s), conf[i] if conf is not None else None,
                                              mode, loss_norm) for i, s in enumerate(sentences)]
        self.lengths = np.array([len(s) for s in self.seqs])
        self.batches: list = []
        self.epoch_of: list = []
        if sentences:
            rng = np.random.default_rng(seed)
            for epoch in range(epochs):
                found = train._batches(self.lengths, batch_size, rng, batch_by)
                self.batches.extend(found)
                self.epoch_of.extend([epoch] * len(found))
        self.nll = [0.0] * epochs
        self.tokens = [0] * epochs


class BatchedClients:
    """Trains a round's clients ``settings.batch_clients`` at a time (module doc)."""

    def __init__(self, settings, warn=lambda s: None) -> None:
        self.settings = settings
        self.warn = warn
        self.said = False

    def updates(self, init, clients: list, seed: int | None) -> dict:
        """``{client: ClientResult or None}`` for ``clients`` (``(name, ClientData)`` pairs),
        each from ``init`` with training seed ``seed``; None: no training sentences."""
        from asrpriv.federated import client
        from asrpriv.nnlm import losses, train

        s = self.settings
        merged = dict(train.RECIPES[client.CLIENT_RECIPE])
        merged.update(s.training or {})
        merged.pop("confidence", None)
        merged.pop("train_only", None)
        reason = unsupported(init.config, merged, s.train_only)
        if reason is not None:
            if not self.said:
                self.warn(f"--batch-clients: {reason}: training one client at a time")
                self.said = True
            return {name: _one(init, data, s, seed) for name, data in clients}
        from asrpriv.errors import AsrprivError

        mode, threshold = losses.parse_confidence(s.confidence)
        prepared = []
        for name, data in clients:
            try:
                prepared.append(_Client(name, data, init.vocab, mode, threshold,
                                        merged["loss_norm"], merged["batch_size"],
                                        merged["batch_by"], merged["epochs"], seed))
            except ValueError as err:
                raise AsrprivError(f"client {name}: {err}") from None
        out: dict = {c.name: None for c in prepared if not c.sentences}
        ready = sorted((c for c in prepared if c.sentences), key=lambda c: len(c.batches))
        k = max(1, int(s.batch_clients))
        for start in range(0, len(ready), k):
            group = ready[start:start + k]
            out.update(_train_group(init, group, merged, mode, seed, s.clip))
        return {name: out[name] for name, _ in clients}


def _one(init, data, s, seed):
    from asrpriv.errors import AsrprivError
    from asrpriv.federated import client

    try:
        return client.client_update(init, data.sentences, data.confidences, settings=s.training,
                                    seed=seed, clip=s.clip, confidence=s.confidence,
                                    train_only=s.train_only)
    except ValueError as err:
        if "no training sentences" not in str(err):
            raise AsrprivError(str(err)) from None
        return None


def _lstm_names(layers: int) -> list[str]:
    names = ["embedding.weight"]
    for layer in range(layers):
        names += [f"rnn.weight_ih_l{layer}", f"rnn.weight_hh_l{layer}",
                  f"rnn.bias_ih_l{layer}", f"rnn.bias_hh_l{layer}"]
    return names + ["output.weight", "output.bias"]


def _dropout(x, p: float, generator):
    """Inverted dropout with its own generator (module doc: not the one-client stream)."""
    import torch

    if p == 0.0:
        return x
    keep = torch.rand(x.shape, generator=generator, device="cpu").to(x.device) >= p
    return x * keep.to(x.dtype) / (1.0 - p)


def _forward(params: dict, inputs, layers: int, hidden: int, p: float, generator):
    """Top-layer LSTM states ``[K, B, T, H]`` of every client's padded batch."""
    import torch

    k, b, t = inputs.shape
    rows = torch.arange(k, device=inputs.device).view(k, 1, 1)
    x = _dropout(params["embedding.weight"][rows, inputs], p, generator)  # [K, B, T, E]
    for layer in range(layers):
        w_ih, w_hh = params[f"rnn.weight_ih_l{layer}"], params[f"rnn.weight_hh_l{layer}"]
        bias = (params[f"rnn.bias_ih_l{layer}"] + params[f"rnn.bias_hh_l{layer}"]).unsqueeze(1)
        projected = torch.baddbmm(bias, x.reshape(k, b * t, -1), w_ih.transpose(1, 2))
        projected = projected.view(k, b, t, 4 * hidden)
        h = x.new_zeros(k, b, hidden)
        c = x.new_zeros(k, b, hidden)
        outs = []
        w_hh_t = w_hh.transpose(1, 2)
        for step in range(t):
            gates = torch.baddbmm(projected[:, :, step], h, w_hh_t)
            i, f, g, o = gates.chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(h)
        x = torch.stack(outs, dim=2)  # [K, B, T, H]
        if layer < layers - 1:
            x = _dropout(x, p, generator)  # nn.LSTM's dropout between layers
    return _dropout(x, p, generator)


def _train_group(init, group: list, settings: dict, mode: str, seed: int | None,
                 clip: float | None) -> dict:
    """Train ``group`` (prepared clients) together; ``{name: ClientResult}``."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    from asrpriv.federated.client import ClientResult
    from asrpriv.federated.clip import clip_l2, l2_norm
    from asrpriv.nnlm.score import pad_batch
    from asrpriv.nnlm.train import TrainResult, make_delta

    config = init.config
    layers, hidden = int(config["layers"]), int(config["hidden_dim"])
    p = float(config.get("dropout", 0.0))
    names = _lstm_names(layers)
    if set(names) != set(init.state):
        raise ValueError("unexpected LSTM parameters: " + ", ".join(sorted(init.state)))
    device = init.state[names[0]].device
    k = len(group)
    params = {n: init.state[n].detach().unsqueeze(0).repeat(k, *[1] * init.state[n].dim())
              .requires_grad_(True) for n in names}
    generator = torch.Generator()
    generator.manual_seed(seed if seed is not None else int.from_bytes(os.urandom(7), "big"))
    lr, mgn = float(settings["lr"]), float(settings.get("max_grad_norm") or 0.0)
    utterance_norm = settings["loss_norm"] == "utterance"
    eos = init.vocab.eos_id
    started = time.perf_counter()
    for step in range(max(len(c.batches) for c in group)):
        padded = [pad_batch([c.seqs[i] for i in c.batches[step]], eos) if step < len(c.batches)
                  else None for c in group]
        width = max(x[0].shape[1] for x in padded if x is not None)
        height = max(x[0].shape[0] for x in padded if x is not None)
        inputs = torch.full((k, height, width), eos, dtype=torch.int64)
        real = [0] * k
        for j, x in enumerate(padded):
            if x is not None:
                inputs[j, :x[0].shape[0], :x[0].shape[1]] = x[0]
                real[j] = int(x[2].sum())
        most = max(real)
        where = torch.zeros((k, most), dtype=torch.int64)   # flat positions of real targets
        targets = torch.zeros((k, most), dtype=torch.int64)
        weight = torch.zeros((k, most), dtype=torch.float32)
        counted = torch.zeros((k, most), dtype=torch.float32)  # 1 at real targets
        for j, (c, x) in enumerate(zip(group, padded)):
            if x is None:
                continue
            idx = c.batches[step]
            _, tgt, mask = x
            full = torch.zeros((height, width), dtype=torch.bool)
            full[:mask.shape[0], :mask.shape[1]] = mask
            where[j, :real[j]] = full.reshape(-1).nonzero().squeeze(1)
            targets[j, :real[j]] = tgt[mask]
            w = np.concatenate([c.weights[i] for i in idx]) if len(idx) else np.zeros(0)
            ntok = int(c.lengths[idx].sum()) - len(idx)
            denom = float(len(idx)) if utterance_norm else float(ntok)
            weight[j, :real[j]] = torch.from_numpy(w.astype(np.float32)) / denom
            counted[j, :real[j]] = 1.0
            c.tokens[c.epoch_of[step]] += ntok
        inputs, where, targets, weight = (x.to(device) for x in (inputs, where, targets, weight))
        states = _forward(params, inputs, layers, hidden, p, generator)  # [K, B, T, H]
        states = states.reshape(k, height * width, hidden)
        picked = states.gather(1, where.unsqueeze(2).expand(k, most, hidden))
        logits = torch.baddbmm(params["output.bias"].unsqueeze(1), picked,
                               params["output.weight"].transpose(1, 2))
        nll = F.cross_entropy(logits.reshape(k * most, -1), targets.reshape(-1),
                              reduction="none").view(k, most)
        loss = (nll * weight).sum()
        grads = torch.autograd.grad(loss, [params[n] for n in names])
        with torch.no_grad():
            sums = (nll * counted.to(device)).sum(dim=1).double().cpu().tolist()
            for j, c in enumerate(group):
                if step < len(c.batches):
                    c.nll[c.epoch_of[step]] += sums[j]
            scale = torch.full((k,), lr, dtype=torch.float32, device=device)
            if mgn > 0:
                norms = torch.sqrt(sum((g.reshape(k, -1).double() ** 2).sum(dim=1) for g in grads))
                for j in range(k):
                    scale[j] = lr * min(1.0, mgn / (float(norms[j]) + 1e-6))
            uniform = bool((scale == lr).all())
            for n, g in zip(names, grads):
                if uniform:
                    params[n].add_(g, alpha=-lr)
                else:
                    params[n].sub_(g * scale.view(k, *[1] * (g.dim() - 1)))
    seconds = time.perf_counter() - started
    out = {}
    for j, c in enumerate(group):
        new = {n: params[n][j].detach() for n in names}
        delta, _ = make_delta(init.state, {n: new[n] for n in init.state}, snap=False)
        if clip is None:
            norm = l2_norm(delta)
        else:
            norm, _ = clip_l2(delta, clip)
        result = TrainResult(words=c.words, sentences=c.sentences, dropped=c.dropped,
                             tokens=c.words + c.sentences, best_epoch=len(c.nll))
        for epoch, (total, tokens) in enumerate(zip(c.nll, c.tokens), start=1):
            loss = total / max(tokens, 1)
            result.history.append({"epoch": epoch, "train_loss": loss,
                                   "train_ppl": math.exp(min(loss, 50.0)), "lr": lr,
                                   "seconds": seconds / k})
        out[c.name] = ClientResult(delta, c.words, norm, None if clip is None else float(clip),
                                   result)
    return out
