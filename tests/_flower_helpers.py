"""Shared helpers of the Flower tests (test_flower.py, test_flower_fmp.py)."""

from __future__ import annotations

import pytest

from conftest import AMI, run_cli


def need_flower():
    pytest.importorskip("flwr", reason="flwr is not installed: pip install 'asrpriv[flower]'")
    pytest.importorskip("ray", reason="ray is not installed: pip install 'asrpriv[flower]'")


def ok(result):
    assert result.exit_code == 0, result.stderr
    return result


def tiny_lm(d, lines: int, name: str):
    """``d/train_text`` (the first ``lines`` lines of AMI's) and ``d/NAME``, a tiny Transformer
    trained on it (1 epoch, seed 1)."""
    with open(AMI / "train_text", encoding="utf-8") as f:
        (d / "train_text").write_text("".join(next(f) for _ in range(lines)), encoding="utf-8")
    ok(run_cli(["finetune-lm", "--ids", "--train", str(d / "train_text"), "-o", str(d / name),
                "--emb-dim", "16", "--ffn-dim", "32", "--layers", "1", "--heads", "2",
                "--epochs", "1", "--seed", "1", "-q"]))
    return d / name
