"""finetune-lm --by-client: each client's delta equals the single-client mode's, clipping bounds
every delta, the federated keys are there, aggregate takes the deltas end to end, bad inputs
write nothing, model files are byte-reproducible."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import AMI, run_cli

from asrpriv.federated.clip import clip_l2
from asrpriv.federated.fingerprint import model_fingerprint
from asrpriv.nnlm import modelfile

CLIENTS = ["ES2002a", "ES2002b", "ES2002c"]


def ok(result):
    assert result.exit_code == 0, result.stderr
    return result


def one_line_error(result, *needles):
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A tiny Transformer trained here on AMI text, and an N-best slice of 3 adaptation clients
    (all ranks, 10/8/6 utterances) with N-best word confidences (``asrpriv confidence``)."""
    d = tmp_path_factory.mktemp("clients")
    with open(AMI / "train_text", encoding="utf-8") as f:
        (d / "train_text").write_text("".join(next(f) for _ in range(1200)), encoding="utf-8")
    ok(run_cli(["finetune-lm", "--ids", "--train", str(d / "train_text"), "-o", str(d / "base.pt"),
                "--emb-dim", "16", "--ffn-dim", "32", "--layers", "1", "--heads", "2",
                "--epochs", "1", "--seed", "1", "-q"]))
    keep = {"ES2002a": 10, "ES2002b": 8, "ES2002c": 6}
    lines = (AMI / "adapt" / "nbest.tsv").read_text(encoding="utf-8").splitlines()
    header, utts, rows = lines[0], set(), []
    for line in lines[1:]:
        utt, client = line.split("\t")[:2]
        if client in keep and (utt in utts or keep[client] > 0):
            if utt not in utts:
                utts.add(utt)
                keep[client] -= 1
            rows.append(line)
    (d / "nbest.tsv").write_text("\n".join([header] + rows) + "\n", encoding="utf-8")
    conf = ok(run_cli(["confidence", str(d / "nbest.tsv"), "-q"])).stdout
    (d / "conf.tsv").write_text(conf, encoding="utf-8")
    conf_lines = conf.splitlines()
    for client in CLIENTS:  # each client's part of the TSV, for the single-client mode
        part = [conf_lines[0]] + [ln for ln in conf_lines[1:] if ln.split("\t")[1] == client]
        (d / f"{client}.tsv").write_text("\n".join(part) + "\n", encoding="utf-8")
    return d


def by_client(work, out, *extra):
    return run_cli(["finetune-lm", "--init", str(work / "base.pt"), "--train", str(work / "conf.tsv"),
                    "--recipe", "client-001", "--by-client", str(out), "--seed", "7", "-q", *extra])


def state(path):
    return modelfile.read_model_file(str(path))["state_dict"]


def words_of(path):
    """Words of the rank-1 texts of a TSV, counted here from the file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    head = lines[0].split("\t")
    rank, text = head.index("rank"), head.index("text")
    return sum(len(ln.split("\t")[text].split()) for ln in lines[1:] if ln.split("\t")[rank] == "1")


@pytest.mark.parametrize("extra", [[], ["--confidence", "token", "--clip", "0.05"]],
                         ids=["plain", "token-clip"])
def test_by_client_equals_single_client(work, tmp_path, extra):
    ok(by_client(work, tmp_path / "deltas", *extra))
    assert sorted(os.listdir(tmp_path / "deltas")) == [f"{c}.delta.pt" for c in CLIENTS]
    for client in CLIENTS:
        single = tmp_path / f"{client}.delta.pt"
        ok(run_cli(["finetune-lm", "--init", str(work / "base.pt"), "--train", str(work / f"{client}.tsv"),
                    "--recipe", "client-001", "-o", str(tmp_path / "m.pt"), "--delta-out", str(single),
                    "--client", client, "--seed", "7", "-q", *extra]))
        many, one = state(tmp_path / "deltas" / f"{client}.delta.pt"), state(single)
        assert many.keys() == one.keys()
        for name in one:
            assert torch.equal(many[name], one[name]), (client, name)
        assert any(float(t.abs().max()) > 0 for t in one.values())  # it did train
        # same weights and metadata: the same bytes (no temporary file name in the archive)
        assert single.read_bytes() == (tmp_path / "deltas" / f"{client}.delta.pt").read_bytes()


def test_metadata_and_clip_bound(work, tmp_path):
    clip = 0.05
    ok(by_client(work, tmp_path / "clipped", "--clip", str(clip)))
    ok(by_client(work, tmp_path / "raw"))
    base = modelfile.read_model_file(str(work / "base.pt"))
    vocab, config = modelfile.vocab_and_config(base, "base")
    fingerprint = model_fingerprint(config, vocab.words, base["state_dict"])
    for client in CLIENTS:
        clipped = modelfile.read_model_file(str(tmp_path / "clipped" / f"{client}.delta.pt"))
        raw = modelfile.read_model_file(str(tmp_path / "raw" / f"{client}.delta.pt"))
        for payload in (clipped, raw):
            assert payload["kind"] == "delta"
            assert payload["init_fingerprint"] == fingerprint
            assert payload["weight"] == words_of(work / f"{client}.tsv") > 0
        assert clipped["clip_l2"] == clip and "clip_l2" not in raw
        # independent norm: numpy float64 over all parameters as one vector
        norm = lambda sd: math.sqrt(sum(float((v.double().numpy() ** 2).sum()) for v in sd.values()))  # noqa: E731
        raw_norm, clipped_norm = norm(raw["state_dict"]), norm(clipped["state_dict"])
        assert raw_norm > clip  # the bound did something
        assert clipped_norm <= clip and clipped_norm == pytest.approx(clip, rel=1e-5)
        for name, tensor in raw["state_dict"].items():  # same direction, scaled by C / norm
            np.testing.assert_allclose(clipped["state_dict"][name].numpy(),
                                       tensor.numpy() * (clip / raw_norm), rtol=1e-4, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(shapes=st.lists(st.lists(st.integers(1, 5), min_size=1, max_size=3), min_size=1, max_size=4),
       scale=st.floats(1e-6, 1e6), clip=st.floats(1e-4, 1e3), seed=st.integers(0, 2 ** 32 - 1),
       dtype=st.sampled_from([torch.float32, torch.float64]))
def test_clip_l2_property(shapes, scale, clip, seed, dtype):
    rng = np.random.default_rng(seed)
    original = {f"p{i}": torch.from_numpy(rng.standard_normal(s) * scale).to(dtype)
                for i, s in enumerate(shapes)}
    original["count"] = torch.tensor([3])  # integer buffers are not clipped
    delta = {k: v.clone() for k, v in original.items()}
    norm, factor = clip_l2(delta, clip)
    before = math.sqrt(sum(float((v.double().numpy() ** 2).sum()) for k, v in original.items() if k != "count"))
    after = math.sqrt(sum(float((v.double().numpy() ** 2).sum()) for k, v in delta.items() if k != "count"))
    assert norm == pytest.approx(before, rel=1e-12)
    assert after <= clip
    assert torch.equal(delta["count"], original["count"])
    if before <= clip:
        assert factor == 1.0 and all(torch.equal(delta[k], original[k]) for k in original)
    else:
        assert after == pytest.approx(clip, rel=1e-5)
        for k in original:
            if k != "count":
                np.testing.assert_allclose(delta[k].double().numpy(),
                                           original[k].double().numpy() * (clip / before),
                                           rtol=1e-5, atol=clip * 1e-6)


def test_aggregate_takes_the_deltas(work, tmp_path):
    """finetune-lm --by-client | aggregate --server fedavg: new = init - sum w_i D_i / sum w_i."""
    ok(by_client(work, tmp_path / "d", "--clip", "0.5"))
    ok(run_cli(["aggregate", "--server", "fedavg", "--model", str(work / "base.pt"),
                "-o", str(tmp_path / "new.pt"), str(tmp_path / "d"), "-q"]))
    init = {k: v.double().numpy() for k, v in state(work / "base.pt").items()}
    deltas = [modelfile.read_model_file(str(tmp_path / "d" / f"{c}.delta.pt")) for c in CLIENTS]
    total = sum(p["weight"] for p in deltas)
    new = state(tmp_path / "new.pt")
    for name, value in init.items():
        avg = sum(p["weight"] * p["state_dict"][name].double().numpy() for p in deltas) / total
        np.testing.assert_allclose(new[name].double().numpy(), value - avg, rtol=0, atol=1e-6)


def test_utt2client_and_client_list(work, tmp_path):
    lines = (work / "conf.tsv").read_text(encoding="utf-8").splitlines()[1:]
    utts = sorted({ln.split("\t")[0] for ln in lines})
    (tmp_path / "u2c").write_text("".join(f"{u} {'even' if i % 2 == 0 else 'odd'}\n"
                                          for i, u in enumerate(utts)), encoding="utf-8")
    ok(by_client(work, tmp_path / "eo", "--utt2client", str(tmp_path / "u2c")))
    assert sorted(os.listdir(tmp_path / "eo")) == ["even.delta.pt", "odd.delta.pt"]
    (tmp_path / "round.txt").write_text("# round 0\nES2002c\n\nES2002a\n", encoding="utf-8")
    result = ok(run_cli(["finetune-lm", "--init", str(work / "base.pt"), "--train", str(work / "conf.tsv"),
                         "--recipe", "client-001", "--by-client", str(tmp_path / "r"),
                         "--clients", str(tmp_path / "round.txt"), "--seed", "7"]))
    assert sorted(os.listdir(tmp_path / "r")) == ["ES2002a.delta.pt", "ES2002c.delta.pt"]
    assert "wrote 2 client deltas" in result.stderr


def test_bad_inputs_write_nothing(work, tmp_path):
    out = tmp_path / "out"
    ok(by_client(work, tmp_path / "d"))
    delta = tmp_path / "d" / "ES2002a.delta.pt"
    one_line_error(run_cli(["finetune-lm", "--init", str(delta), "--train", str(work / "conf.tsv"),
                            "--by-client", str(out)]), "ES2002a.delta.pt", "delta file, not a model")
    (tmp_path / "round.txt").write_text("ES2002a\nnobody\n", encoding="utf-8")
    one_line_error(by_client(work, out, "--clients", str(tmp_path / "round.txt")),
                   "round.txt:2", "unknown client 'nobody'")
    tsv = (work / "conf.tsv").read_text(encoding="utf-8").replace("\tES2002b\t", "\t.hidden\t")
    (tmp_path / "bad.tsv").write_text(tsv, encoding="utf-8")
    one_line_error(run_cli(["finetune-lm", "--init", str(work / "base.pt"), "--train",
                            str(tmp_path / "bad.tsv"), "--by-client", str(out)]),
                   "'.hidden'", "cannot be a file name")
    (tmp_path / "u2c").write_text("x a/b\n", encoding="utf-8")
    one_line_error(by_client(work, out, "--utt2client", str(tmp_path / "u2c")), "has no client")
    if not torch.cuda.is_available():
        one_line_error(by_client(work, out, "--device", "cuda"), "no CUDA device")
    # a directory holding other clients' deltas: aggregate would read them too
    (tmp_path / "round.txt").write_text("ES2002b\n", encoding="utf-8")
    one_line_error(by_client(work, tmp_path / "d", "--clients", str(tmp_path / "round.txt")),
                   "ES2002a.delta.pt", "not in this run")
    assert not out.exists()
    one_line_error(run_cli(["finetune-lm", "--init", str(work / "base.pt"), "--train",
                            str(work / "conf.tsv"), "-o", str(tmp_path / "m.pt"), "--clip", "1"]),
                   "--clip")
    # aggregate: a model where a delta is expected
    one_line_error(run_cli(["aggregate", "--server", "fedavg", "--model", str(work / "base.pt"),
                            "-o", str(tmp_path / "n.pt"), str(work / "base.pt")]), "expected a delta")
    assert not (tmp_path / "m.pt").exists() and not (tmp_path / "n.pt").exists()


def test_failure_midway_leaves_nothing(work, tmp_path, monkeypatch):
    """All or nothing: an error at the second client removes the first one's file and DIR."""
    from asrpriv.federated import client

    real, calls = client.client_update, []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("disk on fire")
        return real(*args, **kwargs)

    monkeypatch.setattr(client, "client_update", failing)
    result = by_client(work, tmp_path / "d")
    assert result.exit_code != 0 and len(calls) == 2, (result.exit_code, result.stderr)
    assert not (tmp_path / "d").exists()
    assert os.listdir(tmp_path) == []


def test_model_files_are_byte_reproducible(work, tmp_path):
    model, vocab, config = modelfile.load_model(str(work / "base.pt"))
    modelfile.save_model(str(tmp_path / "a.pt"), model, vocab, config, note="x")
    modelfile.save_model(str(tmp_path / "other-name.pt"), model, vocab, config, note="x")
    assert (tmp_path / "a.pt").read_bytes() == (tmp_path / "other-name.pt").read_bytes()
    delta = {k: v * 0.5 for k, v in model.state_dict().items()}
    modelfile.save_delta(str(tmp_path / "d1"), delta, vocab, config, weight=3)
    modelfile.save_delta(str(tmp_path / "sub.delta.pt"), delta, vocab, config, weight=3)
    assert (tmp_path / "d1").read_bytes() == (tmp_path / "sub.delta.pt").read_bytes()
    # and a changed weight changes the bytes (the comparison can fail)
    delta["output.bias"] = delta["output.bias"] + 1
    modelfile.save_delta(str(tmp_path / "d2"), delta, vocab, config, weight=3)
    assert (tmp_path / "d1").read_bytes() != (tmp_path / "d2").read_bytes()
    # two whole runs into different directories: the same files
    ok(by_client(work, tmp_path / "r1"))
    ok(by_client(work, tmp_path / "r2"))
    for client in CLIENTS:
        assert ((tmp_path / "r1" / f"{client}.delta.pt").read_bytes()
                == (tmp_path / "r2" / f"{client}.delta.pt").read_bytes())
