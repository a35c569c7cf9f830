"""aggregate on model deltas: FedAvg/FedAdam against hand computations, the state file, the
fingerprint check, client-level DP (noise once, before the optimizer), bad inputs."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from conftest import run_cli

from asrpriv.federated.fingerprint import model_fingerprint
from asrpriv.nnlm import modelfile, train
from asrpriv.nnlm.vocab import Vocabulary

WORDS = ["<unk>", "<s>", "</s>", "a", "b", "c"]


def tiny_model(path, seed=0, words=WORDS):
    vocab = Vocabulary(list(words))
    model, config = train.new_model("lstm", vocab, seed=seed, emb_dim=4, hidden_dim=4, layers=1)
    modelfile.save_model(str(path), model, vocab, config)
    return path


def load_np(path):
    """The state dict of a model/delta file as float64 numpy arrays, plus the raw payload."""
    payload = modelfile.read_model_file(str(path))
    return {k: v.double().numpy() for k, v in payload["state_dict"].items()}, payload


def fingerprint_of(path):
    payload = modelfile.read_model_file(str(path))
    vocab, config = modelfile.vocab_and_config(payload, str(path))
    return model_fingerprint(config, vocab.words, payload["state_dict"])


def write_delta(path, model_path, rng, weight, scale=0.01, fingerprint=None, **extra):
    """A delta of random values (numpy) for the model at model_path; returns its float32 arrays."""
    payload = modelfile.read_model_file(str(model_path))
    vocab, config = modelfile.vocab_and_config(payload, str(model_path))
    arrays = {k: (rng.standard_normal(tuple(v.shape)) * scale).astype(np.float32)
              for k, v in payload["state_dict"].items()}
    modelfile.save_delta(str(path), {k: torch.from_numpy(a) for k, a in arrays.items()}, vocab,
                         config, weight=weight,
                         init_fingerprint=fingerprint or fingerprint_of(model_path), **extra)
    return {k: a.astype(np.float64) for k, a in arrays.items()}


def one_line_error(result, *needles):
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("server", ["fedadam", "fedavg"])
def test_three_rounds_match_hand_computation(tmp_path, server):
    """Paper 001 Eq. 5-8 computed independently in numpy (float64 math; Delta_t, theta, m and
    v stored in float32 between steps, as the parameters are)."""
    rng = np.random.default_rng(7)
    model = tiny_model(tmp_path / "m0.pt")
    state = tmp_path / "state.pt"
    lr, b1, b2, eps = (0.01, 0.8, 0.95, 1e-6) if server == "fedadam" else (0.7, None, None, None)
    theta, _ = load_np(model)
    m = {k: np.zeros_like(a) for k, a in theta.items()}
    v = {k: np.zeros_like(a) for k, a in theta.items()}
    current = model
    for t in (1, 2, 3):
        weights = [3, 11, 5 + t]
        deltas = [write_delta(tmp_path / f"r{t}c{i}.delta.pt", current, rng, w)
                  for i, w in enumerate(weights)]
        args = ["aggregate", "--server", server, "--model", str(current), "--state", str(state),
                "--server-lr", str(lr), "-o", str(tmp_path / f"m{t}.pt")]
        if server == "fedadam":
            args += ["--beta1", str(b1), "--beta2", str(b2), "--eps", str(eps)]
        if t == 2:  # a list file this round, a directory in round 3, paths in round 1
            listing = tmp_path / "list.txt"
            listing.write_text("".join(f"{tmp_path / f'r2c{i}.delta.pt'}\n" for i in range(3)))
            args.append(f"@{listing}")
        elif t == 3:
            (tmp_path / "r3").mkdir()
            for i in range(3):
                (tmp_path / f"r3c{i}.delta.pt").rename(tmp_path / "r3" / f"c{i}.delta.pt")
            args.append(str(tmp_path / "r3"))
        else:
            args += [str(tmp_path / f"r1c{i}.delta.pt") for i in range(3)]
        result = run_cli(args)
        assert result.exit_code == 0, result.stderr
        for name in theta:
            agg = sum(w * d[name] for w, d in zip(weights, deltas)) / sum(weights)
            agg = agg.astype(np.float32).astype(np.float64)  # Delta_t in the parameters' dtype
            if server == "fedavg":
                new = theta[name] - lr * agg
            else:
                m[name] = (b1 * m[name] + (1 - b1) * agg).astype(np.float32).astype(np.float64)
                v[name] = (b2 * v[name] + (1 - b2) * agg ** 2).astype(np.float32).astype(np.float64)
                m_hat = m[name] / (1 - b1 ** t)
                v_hat = v[name] / (1 - b2 ** t)
                new = theta[name] - lr * m_hat / np.sqrt(v_hat + eps)
            theta[name] = new.astype(np.float32).astype(np.float64)
        current = tmp_path / f"m{t}.pt"
        got, payload = load_np(current)
        for name in theta:
            np.testing.assert_allclose(got[name], theta[name], rtol=1e-6, atol=1e-8)
        assert payload["federated_round"]["round"] == t
        # the state file round trip: t, the new model's fingerprint, the moments
        saved = torch.load(state, weights_only=True)
        assert saved["format"] == "asrpriv-server-state" and saved["t"] == t
        assert saved["model_fingerprint"] == fingerprint_of(current)
        if server == "fedadam":
            for name in theta:
                np.testing.assert_allclose(saved["m"][name].double().numpy(), m[name], rtol=1e-6,
                                           atol=1e-12)
                np.testing.assert_allclose(saved["v"][name].double().numpy(), v[name], rtol=1e-6,
                                           atol=1e-14)
    assert not (theta["output.bias"] == load_np(model)[0]["output.bias"]).all()  # it moved


def test_fedadam_needs_state_and_defaults_are_the_papers(tmp_path):
    from asrpriv.federated.server import DEFAULTS

    assert DEFAULTS["fedadam"] == {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
    assert DEFAULTS["fedavg"] == {"lr": 1.0}
    model = tiny_model(tmp_path / "m0.pt")
    write_delta(tmp_path / "d.delta.pt", model, np.random.default_rng(0), 5)
    out = tmp_path / "m1.pt"
    result = run_cli(["aggregate", "--server", "fedadam", "--model", str(model), "-o", str(out),
                      str(tmp_path / "d.delta.pt")])
    one_line_error(result, "--state")
    assert not out.exists()


def _round_args(tmp_path, model, state, out, *deltas):
    return ["aggregate", "--server", "fedadam", "--model", str(model), "--state", str(state),
            "-o", str(out), *map(str, deltas)]


def _started_state(tmp_path):
    """A model after one FedAdam round, its state, and a valid delta for round 2."""
    rng = np.random.default_rng(1)
    m0 = tiny_model(tmp_path / "m0.pt")
    state = tmp_path / "state.pt"
    write_delta(tmp_path / "a.delta.pt", m0, rng, 4)
    assert run_cli(_round_args(tmp_path, m0, state, tmp_path / "m1.pt",
                               tmp_path / "a.delta.pt")).exit_code == 0
    good = tmp_path / "good.delta.pt"
    write_delta(good, tmp_path / "m1.pt", rng, 6)
    return tmp_path / "m1.pt", state, good


def test_delta_from_another_initial_model_is_refused(tmp_path):
    m1, state, good = _started_state(tmp_path)
    other = tiny_model(tmp_path / "other.pt", seed=5)
    stale = tmp_path / "stale.delta.pt"  # fine-tuned from round 0's model, not from m1
    write_delta(stale, tmp_path / "m0.pt", np.random.default_rng(2), 3)
    foreign = tmp_path / "foreign.delta.pt"
    write_delta(foreign, other, np.random.default_rng(3), 3)
    before = state.read_bytes()
    out = tmp_path / "m2.pt"
    result = run_cli(_round_args(tmp_path, m1, state, out, good, stale, foreign))
    one_line_error(result, "stale.delta.pt", "foreign.delta.pt", "init_fingerprint")
    assert not out.exists() and state.read_bytes() == before


def test_state_of_another_model_is_refused(tmp_path):
    m1, state, good = _started_state(tmp_path)
    before = state.read_bytes()
    result = run_cli(_round_args(tmp_path, tmp_path / "m0.pt", state, tmp_path / "x.pt",
                                 tmp_path / "a.delta.pt"))
    one_line_error(result, "state.pt", "another model")
    assert not (tmp_path / "x.pt").exists() and state.read_bytes() == before


@pytest.mark.parametrize("case", ["model_as_delta", "delta_as_model", "vocab", "shape", "nan",
                                  "inf", "corrupt_state", "counts_state", "no_fingerprint",
                                  "bad_weight"])
def test_bad_inputs_one_line_exit_2_nothing_written(tmp_path, case):
    m1, state, good = _started_state(tmp_path)
    model, deltas = m1, [good]
    rng = np.random.default_rng(4)
    if case == "model_as_delta":
        deltas = [good, tmp_path / "m0.pt"]
        needles = ["m0.pt", "is a model file, expected a delta"]
    elif case == "delta_as_model":
        model = good
        needles = ["good.delta.pt", "expected the current global model"]
    elif case in ("vocab", "shape"):
        words = WORDS[:-1] + ["z"] if case == "vocab" else WORDS + ["d"]
        other = tiny_model(tmp_path / "o.pt", words=words)
        bad = tmp_path / "bad.delta.pt"
        write_delta(bad, other, rng, 3, fingerprint=fingerprint_of(m1))
        deltas = [good, bad]
        needles = ["bad.delta.pt", "vocabulary differs"]
    elif case in ("nan", "inf"):
        payload = modelfile.read_model_file(str(good))
        payload["state_dict"]["rnn.weight_hh_l0"][1, 2] = float("nan" if case == "nan" else "inf")
        bad = tmp_path / "bad.delta.pt"
        torch.save(payload, bad)
        deltas = [good, bad]
        needles = ["bad.delta.pt", "NaN or inf"]
    elif case == "corrupt_state":
        state.write_bytes(state.read_bytes()[:200])
        needles = ["state.pt", "server state"]
    elif case == "counts_state":
        state.write_text("#format=asrpriv-counts/2\na\t1\n")
        needles = ["state.pt", "server state"]
    elif case == "no_fingerprint":
        payload = modelfile.read_model_file(str(good))
        del payload["init_fingerprint"]
        bad = tmp_path / "bad.delta.pt"
        torch.save(payload, bad)
        deltas = [bad]
        needles = ["bad.delta.pt", "init_fingerprint"]
    else:
        payload = modelfile.read_model_file(str(good))
        payload["weight"] = -3
        bad = tmp_path / "bad.delta.pt"
        torch.save(payload, bad)
        deltas = [bad]
        needles = ["bad.delta.pt", "weight"]
    before = state.read_bytes()
    out = tmp_path / "m2.pt"
    result = run_cli(_round_args(tmp_path, model, state, out, *deltas))
    one_line_error(result, "asrpriv aggregate:", *needles)
    assert not out.exists()
    assert state.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_noise_multiplier_zero_is_exactly_the_noise_free_update(tmp_path):
    rng = np.random.default_rng(5)
    m0 = tiny_model(tmp_path / "m0.pt")
    deltas = [tmp_path / f"d{i}.delta.pt" for i in range(3)]
    for i, d in enumerate(deltas):
        write_delta(d, m0, rng, 2 + i)
    outs = []
    for extra in ([], ["--noise-multiplier", "0"]):
        out = tmp_path / f"out{len(outs)}.pt"
        state = tmp_path / f"s{len(outs)}.pt"
        assert run_cli(["aggregate", "--server", "fedadam", "--model", str(m0), "--state",
                        str(state), "-o", str(out), *extra, *map(str, deltas)]).exit_code == 0
        outs.append(modelfile.read_model_file(str(out))["state_dict"])
    for name in outs[0]:
        assert torch.equal(outs[0][name], outs[1][name])


def _dp_expected(deltas, weights, clip, denominator, cap=None):
    """McMahan et al.'s f_f without noise, by hand: sum min(n/cap,1) clip(D_i) / denominator."""
    total = {}
    for d, n in zip(deltas, weights):
        norm = math.sqrt(sum(float((a ** 2).sum()) for a in d.values()))
        factor = min(1.0, clip / norm)
        w = 1.0 if cap is None else min(n / cap, 1.0)
        for k, a in d.items():
            total[k] = total.get(k, 0) + w * factor * a
    return {k: a / denominator for k, a in total.items()}


def test_dp_noise_once_on_the_aggregate_before_the_optimizer(tmp_path):
    """--aggregate-out shows Delta_t = f_f + N(0, (zC/D)^2); the model is FedAdam of exactly it."""
    rng = np.random.default_rng(6)
    m0 = tiny_model(tmp_path / "m0.pt")
    weights = [40, 400, 90, 1000]
    deltas = [write_delta(tmp_path / f"d{i}.delta.pt", m0, rng, w, scale=0.02,
                          clip_l2=0.05 if i < 2 else None)
              for i, w in enumerate(weights)]
    z, clip, cap, expected_w = 2.0, 0.05, 200.0, 3.0
    common = ["--clip", str(clip), "--weight-cap", str(cap), "--expected-weight", str(expected_w),
              "--sample-rate", "0.01", "--seed", "11", "--server-lr", "0.01"]
    paths = [str(tmp_path / f"d{i}.delta.pt") for i in range(4)]
    aggs = []
    for rep in range(2):
        out, agg, state = (tmp_path / f"m1_{rep}.pt", tmp_path / f"agg{rep}.pt",
                           tmp_path / f"s{rep}.pt")
        result = run_cli(["aggregate", "--server", "fedadam", "--model", str(m0), "--state",
                          str(state), "-o", str(out), "--noise-multiplier", str(z),
                          "--aggregate-out", str(agg), *common, *paths])
        assert result.exit_code == 0, result.stderr
        assert "NOT private" in result.stderr
        aggs.append(load_np(agg)[0])
    expected = _dp_expected(deltas, weights, clip, expected_w, cap)
    noise = np.concatenate([(aggs[0][k] - expected[k]).ravel() for k in expected])
    sd = z * clip / expected_w
    # ~230 coordinates: the sample std is within 20% of sigma with overwhelming probability
    assert 0.8 * sd < noise.std() < 1.2 * sd and abs(noise.mean()) < 4 * sd / math.sqrt(noise.size)
    for k in expected:  # same seed, same noise
        np.testing.assert_array_equal(aggs[0][k], aggs[1][k])
    # the model is one FedAdam step of exactly that aggregate (noise added once, before it)
    theta0, _ = load_np(m0)
    got, payload = load_np(tmp_path / "m1_0.pt")
    for k in theta0:
        m_hat = 0.1 * aggs[0][k] / (1 - 0.9)
        v_hat = 0.001 * aggs[0][k] ** 2 / (1 - 0.999)
        np.testing.assert_allclose(got[k], theta0[k] - 0.01 * m_hat / np.sqrt(v_hat + 1e-8),
                                   rtol=1e-5, atol=1e-7)
    history = json.loads(payload["privacy_history"])
    assert [r["params"] for r in history["releases"]] == [
        {"noise_multiplier": z, "sensitivity_l2": clip, "sample_rate": 0.01, "rounds": 1}]
    assert payload["seeded"] is True and history["releases"][0]["seeded"] is True
    # the warning names the two deltas that their clients did not clip
    assert "2 delta(s) were not clipped" in result.stderr
    # a model with seeded noise is refused as the next round's input unless told it is a test
    nxt = tmp_path / "n.delta.pt"
    write_delta(nxt, tmp_path / "m1_0.pt", rng, 5)
    result = run_cli(["aggregate", "--server", "fedavg", "--model", str(tmp_path / "m1_0.pt"),
                      "-o", str(tmp_path / "m2.pt"), str(nxt)])
    one_line_error(result, "seeded")


def test_dp_zero_noise_is_the_clipped_fixed_denominator_average(tmp_path):
    rng = np.random.default_rng(8)
    m0 = tiny_model(tmp_path / "m0.pt")
    deltas = [write_delta(tmp_path / f"d{i}.delta.pt", m0, rng, 10, scale=0.03) for i in range(3)]
    result = run_cli(["aggregate", "--server", "fedavg", "--model", str(m0), "-o",
                      str(tmp_path / "m1.pt"), "--noise-multiplier", "0", "--clip", "0.1",
                      "--expected-clients", "5", "--aggregate-out", str(tmp_path / "agg.pt"),
                      *[str(tmp_path / f"d{i}.delta.pt") for i in range(3)]])
    assert result.exit_code == 0, result.stderr
    assert "WITHOUT noise" in result.stderr
    agg, payload = load_np(tmp_path / "agg.pt")
    expected = _dp_expected(deltas, [10] * 3, 0.1, 5.0)
    for k in expected:
        np.testing.assert_allclose(agg[k], expected[k], rtol=1e-6, atol=1e-9)
    assert "privacy_history" not in payload  # no noise: no release


def test_dp_history_composes_over_rounds_and_privacy_report_reads_it(tmp_path):
    from dp_accounting import dp_event, rdp

    rng = np.random.default_rng(9)
    current = tiny_model(tmp_path / "m0.pt")
    for t in (1, 2, 3):
        write_delta(tmp_path / f"r{t}.delta.pt", current, rng, 10)
        nxt = tmp_path / f"m{t}.pt"
        result = run_cli(["aggregate", "--server", "fedavg", "--model", str(current), "-o",
                          str(nxt), "--noise-multiplier", "0.8", "--clip", "0.1",
                          "--expected-clients", "1", "--sample-rate", "0.05", "--seed", str(t),
                          "--allow-seeded-test-noise", str(tmp_path / f"r{t}.delta.pt")])
        assert result.exit_code == 0, result.stderr
        current = nxt
    payload = modelfile.read_model_file(str(current))
    history = json.loads(payload["privacy_history"])
    assert len(history["releases"]) == 3 and history["tree"] == {"seq": [0, 1, 2]}
    result = run_cli(["privacy-report", str(current), "--delta", "1e-5", "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    accountant = rdp.RdpAccountant()
    accountant.compose(dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(0.05, dp_event.GaussianDpEvent(0.8)), 3))
    assert report["epsilon_rdp"] == pytest.approx(accountant.get_epsilon(1e-5), rel=1e-9)
    assert report["seeded"] is True and len(report["releases"]) == 3


def test_history_chain_stays_flat_for_many_rounds():
    from asrpriv.federated.aggregate import flat_add
    from asrpriv.privacy.history import History, Release, new_release_id

    history = History()
    for _ in range(100):
        history = flat_add(history, Release(new_release_id(), "gaussian", "client",
                                            {"noise_multiplier": 1.0, "sensitivity_l2": 0.5,
                                             "sample_rate": 0.01, "rounds": 1}))
    again = History.from_json(history.to_json())  # > 64 nested levels would be refused
    assert again.tree == ("seq", tuple(range(100)))


def test_gaussian_noise_std_on_many_draws():
    from scipy import stats

    from asrpriv.federated.gaussian import NoiseSource, add_gaussian_noise

    for seed in (None, 3):
        draws = NoiseSource(seed).normals(400_001)
        assert abs(draws.mean()) < 5 / math.sqrt(draws.size)
        assert abs(draws.std() - 1) < 0.005
        assert stats.kstest(draws[:20000], "norm").pvalue > 1e-4
    # std = z * C / D on a tensor, through the mechanism's function
    z, clip, denominator = 1.5, 0.5, 100.0
    state = {"w": torch.zeros(300_000, dtype=torch.float64)}
    add_gaussian_noise(state, z * clip, NoiseSource())
    scaled = state["w"].numpy() / denominator
    assert abs(scaled.std() / (z * clip / denominator) - 1) < 0.01
    # std 0 draws nothing
    zero = {"w": torch.ones(5)}
    add_gaussian_noise(zero, 0.0, NoiseSource())
    assert torch.equal(zero["w"], torch.ones(5))


def test_add_noise_gaussian_on_one_delta(tmp_path):
    rng = np.random.default_rng(10)
    m0 = tiny_model(tmp_path / "m0.pt")
    raw = write_delta(tmp_path / "d.delta.pt", m0, rng, 7, scale=0.05)
    out = tmp_path / "n.delta.pt"
    result = run_cli(["add-noise", "--mechanism", "gaussian", "--noise-multiplier", "0.5",
                      "--clip", "0.2", "--seed", "1", "-o", str(out), str(tmp_path / "d.delta.pt")])
    assert result.exit_code == 0, result.stderr
    got, payload = load_np(out)
    norm = math.sqrt(sum(float((a ** 2).sum()) for a in raw.values()))
    factor = min(1, 0.2 / norm)
    noise = np.concatenate([(got[k] - factor * raw[k]).ravel() for k in raw])
    assert 0.8 * 0.1 < noise.std() < 1.2 * 0.1
    # issue 37: a release holds no exact statistic: the client's word count becomes weight 1
    assert payload["kind"] == "delta" and payload["clip_l2"] == 0.2 and payload["weight"] == 1
    assert "train_words" not in payload and "train_sentences" not in payload
    assert payload["init_fingerprint"] == fingerprint_of(m0)
    release = json.loads(payload["privacy_history"])["releases"][0]
    assert release["params"] == {"noise_multiplier": 0.5, "sensitivity_l2": 0.2,
                                 "sample_rate": 1.0, "rounds": 1}
    # a model is refused; the counts path still needs --epsilon/--vocab
    result = run_cli(["add-noise", "--mechanism", "gaussian", "--noise-multiplier", "0.5",
                      "--clip", "0.2", "-o", str(tmp_path / "x.pt"), str(m0)])
    one_line_error(result, "m0.pt", "expected a delta")
    assert not (tmp_path / "x.pt").exists()


def test_chunked_in_place_update_equals_whole_tensor_step(monkeypatch):
    from asrpriv.federated import server

    gen = torch.Generator().manual_seed(0)
    theta, delta, m, v = (torch.randn(5, 9, generator=gen) for _ in range(4))
    v = v.abs()
    hp = {"lr": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
    expected = server.fedadam_step(theta, delta, m, v, 4, **hp)
    monkeypatch.setattr(server, "STEP_CHUNK", 7)  # slices that straddle rows
    server.server_update_("fedadam", theta, delta, m, v, 4, hp)
    for got, want in zip((theta, m, v), expected):
        assert torch.equal(got, want)
