"""The server round reads torch files a slice at a time (asrpriv.io.torchfile): the slices are
the file's values, files that cannot be streamed (legacy torch format) are read whole and give
the same bytes, and a failed round leaves no temporary file."""

from __future__ import annotations

import hashlib

import numpy as np
import torch

from conftest import run_cli
from test_aggregate_deltas import one_line_error, tiny_model, write_delta

from asrpriv.nnlm import modelfile
from asrpriv.privacy.history import History, Release, new_release_id


def _concat(file, tensor, size):
    return torch.cat([part.clone() for part in file.slices(tensor, size)]).reshape(tensor.shape)


def test_streamed_slices_are_the_files_values(tmp_path):
    model = tiny_model(tmp_path / "m.pt")
    whole = modelfile.read_model_file(str(model))["state_dict"]
    with modelfile.open_model_file(str(model)) as file:
        assert file.streamed
        for name, meta in file.obj["state_dict"].items():
            assert meta.device.type == "meta"
            for size in (1, 7, 1 << 16):  # slices that straddle rows, and whole tensors
                assert torch.equal(_concat(file, meta, size), whole[name]), (name, size)
    # the legacy (non-zip) format cannot be streamed: read whole, same values
    legacy = tmp_path / "legacy.pt"
    torch.save(modelfile.read_model_file(str(model)), legacy, _use_new_zipfile_serialization=False)
    with modelfile.open_model_file(str(legacy)) as file:
        assert not file.streamed
        for name, tensor in file.obj["state_dict"].items():
            assert torch.equal(_concat(file, tensor, 5), whole[name])


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_legacy_files_give_the_same_round_bytes_as_streamed_ones(tmp_path):
    """The same two FedAdam rounds (the second with seeded DP) from zip files (streamed) and
    from legacy files (read whole): identical model and state bytes."""
    outputs = {}
    for kind in ("zip", "legacy"):
        work = tmp_path / kind
        work.mkdir()
        current = tiny_model(work / "m0.pt")
        for t in (1, 2):
            deltas = []
            for i in range(3):
                path = work / f"r{t}c{i}.delta.pt"
                write_delta(path, current, np.random.default_rng(10 * t + i), 4 + i, scale=0.1)
                deltas.append(path)
            if kind == "legacy":
                for path in [current, *deltas] + ([work / "state.pt"] if t == 2 else []):
                    torch.save(torch.load(path, weights_only=True), path,
                               _use_new_zipfile_serialization=False)
            out = work / f"m{t}.pt"
            extra = (["--noise-multiplier", "0.7", "--clip", "0.5", "--expected-clients", "3",
                      "--sample-rate", "0.1", "--seed", "5"] if t == 2 else [])
            result = run_cli(["aggregate", "--server", "fedadam", "--model", str(current),
                              "--state", str(work / "state.pt"), "-o", str(out), *extra,
                              *map(str, deltas)])
            assert result.exit_code == 0, result.stderr
            current = out
        outputs[kind] = (modelfile.read_model_file(str(current)), _digest(work / "state.pt"))
        assert not [p for p in work.iterdir() if p.name.endswith(".tmp")]
    (zip_model, zip_state), (legacy_model, legacy_state) = outputs["zip"], outputs["legacy"]
    assert zip_state == legacy_state
    for name, tensor in zip_model["state_dict"].items():
        assert torch.equal(tensor, legacy_model["state_dict"][name])
    assert zip_model["federated_round"] == legacy_model["federated_round"]


def test_a_failed_update_writes_nothing_and_leaves_no_temporary_file(tmp_path):
    model = tiny_model(tmp_path / "m0.pt")
    write_delta(tmp_path / "d.delta.pt", model, np.random.default_rng(0), 5)
    out = tmp_path / "m1.pt"
    result = run_cli(["aggregate", "--server", "fedadam", "--server-lr", "1e308", "--model",
                      str(model), "--state", str(tmp_path / "state.pt"), "-o", str(out),
                      str(tmp_path / "d.delta.pt")])
    one_line_error(result, "non-finite")
    assert not out.exists() and not (tmp_path / "state.pt").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_history_add_flat_splices_nested_sequences():
    def release():
        return Release(new_release_id(), "laplace", "utterance",
                       {"epsilon": 0.5, "sensitivity_l1": 1.0, "grid": 1.0})

    nested = History().add(release()).add(release()).add(release())
    assert nested.tree == ("seq", (("seq", (0, 1)), 2))
    flat = History().add_flat(release()).add_flat(release()).add_flat(release())
    assert flat.tree == ("seq", (0, 1, 2))
    again = nested.add_flat(release())
    assert again.tree == ("seq", (0, 1, 2, 3))
    assert again.epsilon_pure() == nested.epsilon_pure() + 0.5 == 2.0
