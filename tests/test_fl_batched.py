"""Batched client updates (``fl-rounds --batch-clients K``) equal the one-client path.

A small 2-layer LSTM without dropout, 5 AMI clients of different sizes (so groups pad rows,
positions and whole steps), paper 001's client recipe and the Eq. 4 token-confidence loss:
each batched delta is within ``batched.RTOL`` of the largest magnitude of the one-client
path's delta (:func:`asrpriv.federated.client.client_update`, an independent code path:
nn.LSTM, torch.optim.SGD), its weight and the DP clipping per client are the same, and a
Transformer falls back to the one-client path (then the deltas are equal bit for bit).
"""

from __future__ import annotations

import pytest
import torch

from conftest import AMI, run_cli
from _flower_helpers import ok

from asrpriv.federated import batched, client
from asrpriv.federated.clip import l2_norm
from asrpriv.federated.rounds import RoundSettings, client_data

CLIENTS = {"ES2002a": 11, "ES2002b": 3, "ES2002c": 8, "ES2002d": 17, "ES2003a": 6}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("batched")
    with open(AMI / "train_text", encoding="utf-8") as f:
        (d / "train_text").write_text("".join(next(f) for _ in range(500)), encoding="utf-8")
    for name, extra in (("lstm.pt", ["--arch", "lstm", "--hidden-dim", "24", "--layers", "2",
                                     "--dropout", "0"]),
                        ("tfm.pt", ["--ffn-dim", "32", "--layers", "1", "--heads", "2"])):
        ok(run_cli(["finetune-lm", "--ids", "--train", str(d / "train_text"), "-o", str(d / name),
                    "--emb-dim", "16", "--epochs", "1", "--seed", "1", "-q", *extra]))
    keep = dict(CLIENTS)
    lines = (AMI / "adapt" / "nbest.tsv").read_text(encoding="utf-8").splitlines()
    rows = [lines[0]]
    header = lines[0].split("\t")
    conf_col = header.index("confidence") if "confidence" in header else None
    for line in lines[1:]:
        fields = line.split("\t")
        if fields[1] in keep and fields[2] == "1" and keep[fields[1]] > 0:
            keep[fields[1]] -= 1
            rows.append(line)
    (d / "adapt.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    if conf_col is None:  # token confidences for the Eq. 4 loss
        ok(run_cli(["confidence", "-q", "--scale", "0.15", str(d / "adapt.tsv"), "-o",
                    str(d / "adapt.conf.tsv")]))
    else:
        (d / "adapt.conf.tsv").write_bytes((d / "adapt.tsv").read_bytes())
    return d


def updates(work, model, confidence, batch, clip=None, training=None):
    settings = RoundSettings(init=str(work / model), train=str(work / "adapt.conf.tsv"),
                             run_dir="", rounds=1, sample_rate=1.0, confidence=confidence,
                             clip=clip, batch_clients=batch, training=training or {})
    groups = client_data(settings)
    init = client.load_init(str(work / model))
    torch.set_num_threads(1)
    cohort = [(name, groups[name]) for name in sorted(groups)]
    if batch == 1:
        return {name: client.client_update(init, data.sentences, data.confidences, seed=5,
                                           clip=clip, confidence=confidence,
                                           settings=settings.training)
                for name, data in cohort}
    said = []
    out = batched.BatchedClients(settings, warn=said.append).updates(init, cohort, seed=5)
    return out, said


@pytest.mark.parametrize("confidence,training", [("token", None), ("none", {"epochs": 2}),
                                                 ("hard:0.9", {"max_grad_norm": 0.5})])
def test_batched_deltas_equal_one_client_path(work, confidence, training):
    one = updates(work, "lstm.pt", confidence, 1, training=training)
    many, said = updates(work, "lstm.pt", confidence, 3, training=training)
    assert not said and set(one) == set(many) == set(CLIENTS)
    for name in CLIENTS:
        a, b = one[name], many[name]
        assert b.weight == a.weight and b.train.sentences == a.train.sentences
        scale = max(float(t.abs().max()) for t in a.delta.values())
        assert scale > 0
        for key, tensor in a.delta.items():
            diff = float((tensor - b.delta[key]).abs().max())
            assert diff <= batched.RTOL * scale, (name, key, diff, scale)
        assert b.norm == pytest.approx(a.norm, rel=1e-3)
        assert len(b.train.history) == len(a.train.history)
        assert b.train.history[-1]["train_loss"] == pytest.approx(a.train.history[-1]["train_loss"],
                                                                  rel=1e-4)


def test_batched_clipping_stays_per_client(work):
    one = updates(work, "lstm.pt", "none", 1, clip=0.05)
    many, _ = updates(work, "lstm.pt", "none", 4, clip=0.05)
    for name in CLIENTS:
        assert many[name].clip_l2 == 0.05 and one[name].clip_l2 == 0.05
        assert l2_norm(many[name].delta) <= 0.05
        assert many[name].norm == pytest.approx(one[name].norm, rel=1e-3)
        assert many[name].norm > 0.05  # each was clipped on its own


def test_transformer_falls_back_to_one_client_at_a_time(work):
    one = updates(work, "tfm.pt", "none", 1)
    many, said = updates(work, "tfm.pt", "none", 3)
    assert said and "transformer" in said[0]
    for name in CLIENTS:
        assert all(torch.equal(one[name].delta[k], many[name].delta[k]) for k in one[name].delta)
