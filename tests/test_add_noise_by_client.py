"""add-noise --by-client DIR FILE...: one independent release of each input in one process.

Each file's release must equal what a separate ``add-noise`` process gives it (seeded: the
same seed(SEED, i, D) of the one rule, so the noise is the same bits; the privacy history
differs only in its random release id), every release is its own (independent noise, its own
history of one release), and the directory appears whole or not at all.
"""

from __future__ import annotations

import json

import numpy as np
import torch

from conftest import run_cli
from test_aggregate_deltas import load_np, one_line_error, tiny_model, write_delta

from asrpriv.federated.seeds import derive_seed
from asrpriv.io.counts import read_counts


def _deltas(tmp_path, n=3):
    rng = np.random.default_rng(4)
    model = tiny_model(tmp_path / "m0.pt")
    src = tmp_path / "deltas"
    src.mkdir()
    paths = []
    for i in range(n):
        path = src / f"item{i}.delta.pt"
        write_delta(path, model, rng, 5 + i, scale=0.05)
        paths.append(str(path))
    return paths


def _history_without_ids(payload):
    history = json.loads(payload["privacy_history"])
    for release in history["releases"]:
        release.pop("id", None)
    return history


def test_gaussian_by_client_equals_one_process_per_file_seeded(tmp_path):
    paths = _deltas(tmp_path)
    out = tmp_path / "noisy"
    result = run_cli(["add-noise", "-q", "--mechanism", "gaussian", "--noise-multiplier", "0.5",
                      "--clip", "0.2", "--seed", "7", "--noise-draw", "2", "--by-client", str(out),
                      *paths])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert sorted(p.name for p in out.iterdir()) == sorted(p.split("/")[-1] for p in paths)
    assert result.stderr.count("NOT private") == 1  # the seeded warning once, not per file
    noises = []
    for i, path in enumerate(paths, start=1):
        single = tmp_path / f"single{i}.delta.pt"
        one = run_cli(["add-noise", "-q", "--mechanism", "gaussian", "--noise-multiplier", "0.5",
                       "--clip", "0.2", "--seed", str(derive_seed(7, i, 2)), "-o", str(single),
                       path])
        assert one.exit_code == 0, one.stderr
        batch, batch_payload = load_np(out / path.split("/")[-1])
        alone, alone_payload = load_np(single)
        assert batch.keys() == alone.keys()
        for key in batch:
            assert np.array_equal(batch[key], alone[key]), key
        assert _history_without_ids(batch_payload) == _history_without_ids(alone_payload)
        assert len(json.loads(batch_payload["privacy_history"])["releases"]) == 1
        assert batch_payload["weight"] == 1 and "train_words" not in batch_payload
        raw, _ = load_np(path)
        noises.append(np.concatenate([(batch[k] - raw[k] * min(1, 0.2 / np.sqrt(
            sum(float((a ** 2).sum()) for a in raw.values())))).ravel() for k in raw]))
    # independent draws: no two files got the same noise
    assert not np.allclose(noises[0], noises[1]) and not np.allclose(noises[1], noises[2])


def test_gaussian_by_client_secure_noise_differs_per_file_and_run(tmp_path):
    paths = _deltas(tmp_path, n=2)
    # two inputs with equal contents: the releases must still differ (fresh noise per file)
    same = tmp_path / "deltas" / "copy.delta.pt"
    same.write_bytes(open(paths[0], "rb").read())
    runs = []
    for run in ("a", "b"):
        out = tmp_path / f"noisy-{run}"
        result = run_cli(["add-noise", "-q", "--mechanism", "gaussian", "--noise-multiplier",
                          "1.0", "--clip", "0.2", "--by-client", str(out), paths[0], str(same)])
        assert result.exit_code == 0, result.stderr
        assert "NOT private" not in result.stderr
        runs.append({p.name: load_np(p)[0] for p in out.iterdir()})
    first = runs[0]["item0.delta.pt"]
    assert not all(np.array_equal(first[k], runs[0]["copy.delta.pt"][k]) for k in first)
    assert not all(np.array_equal(first[k], runs[1]["item0.delta.pt"][k]) for k in first)


def test_laplace_by_client_equals_one_process_per_file_seeded(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("a\nb\nc\nd\n")
    src = tmp_path / "counts"
    src.mkdir()
    text = tmp_path / "text.txt"
    text.write_text("u1 a b a\nu2 c a\nu3 b b d\nu4 a\n")
    utt2item = tmp_path / "utt2item"
    utt2item.write_text("u1 x\nu2 x\nu3 y\nu4 z\n")
    made = run_cli(["count-unigrams", "-q", "--text", "--ids", "--utt2client", str(utt2item),
                    "--unit", "utterance", "--max-l1", "3", "--by-client", str(src), str(text)])
    assert made.exit_code == 0, made.stderr
    inputs = sorted(str(p) for p in src.iterdir())
    assert len(inputs) == 3
    out = tmp_path / "noisy"
    result = run_cli(["add-noise", "-q", "--epsilon", "1", "--vocab", str(vocab), "--seed", "3",
                      "--by-client", str(out), *inputs])
    assert result.exit_code == 0, result.stderr
    for i, path in enumerate(inputs, start=1):
        one = run_cli(["add-noise", "-q", "--epsilon", "1", "--vocab", str(vocab), "--seed",
                       str(derive_seed(3, i, 0)), path])
        assert one.exit_code == 0, one.stderr
        meta, counts = read_counts(str(out / path.split("/")[-1]))
        single = tmp_path / f"single{i}.counts"
        single.write_text(one.stdout)
        alone_meta, alone_counts = read_counts(str(single))
        assert counts == alone_counts
        assert set(counts) == {"a", "b", "c", "d"}  # the whole public vocabulary
        assert meta["epsilon"] == alone_meta["epsilon"] == "1"


def test_by_client_refusals_leave_nothing(tmp_path):
    paths = _deltas(tmp_path, n=2)
    base = ["add-noise", "--mechanism", "gaussian", "--noise-multiplier", "1", "--clip", "0.2"]
    out = tmp_path / "noisy"
    # several inputs without --by-client
    one_line_error(run_cli([*base, "-o", str(tmp_path / "x.pt"), *paths]), "--by-client")
    # -o beside --by-client
    one_line_error(run_cli([*base, "--by-client", str(out), "-o", str(tmp_path / "x.pt"), *paths]),
                   "--output")
    # two inputs of one file name
    other = tmp_path / "other"
    other.mkdir()
    (other / "item0.delta.pt").write_bytes(open(paths[0], "rb").read())
    one_line_error(run_cli([*base, "--by-client", str(out), paths[0],
                            str(other / "item0.delta.pt")]), "same file name")
    # writing into the inputs' own directory would replace the private inputs
    before = open(paths[0], "rb").read()
    one_line_error(run_cli([*base, "--by-client", str(tmp_path / "deltas"), *paths]),
                   "replace the private inputs")
    assert open(paths[0], "rb").read() == before
    # stdin is not a file of its own
    one_line_error(run_cli([*base, "--by-client", str(out), "-"]), "stdin")
    # a bad file in the middle: exit 2 naming it, and no directory left behind
    bad = tmp_path / "deltas" / "bad.delta.pt"
    torch.save({"nonsense": 1}, bad)
    result = run_cli([*base, "--by-client", str(out), paths[0], str(bad), paths[1]])
    assert result.exit_code == 2, result.stderr
    assert "bad.delta.pt" in result.stderr
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".noisy")]
