"""rescore-nbest --precision bf16: opt-in bfloat16 products, close to fp32; refused where unsupported."""

from __future__ import annotations

import pytest

from _rescore_helpers import train_tiny_model, write_slice
from conftest import assert_one_line_error, run_cli, run_proc


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("precision")
    return train_tiny_model(d / "m.pt"), write_slice(d / "slice.tsv", 8)


def _scores(stdout: str) -> dict:
    rows = stdout.splitlines()
    head = rows[0].split("\t")
    i_utt, i_rank, i_nn = head.index("utt_id"), head.index("first_pass_rank"), head.index("nnlm_score")
    return {(r.split("\t")[i_utt], r.split("\t")[i_rank]): float(r.split("\t")[i_nn]) for r in rows[1:]}


def test_bf16_close_to_fp32_or_refused(setup):
    import torch

    from asrpriv.nnlm.runtime import bf16_supported
    from asrpriv.rescore.nnlm import NnlmScorer

    model, nbest = setup
    args = ["rescore-nbest", "--nnlm", str(model), str(nbest)]
    exact = run_cli(args + ["--precision", "fp32"])
    assert exact.exit_code == 0, exact.stderr
    assert exact.stdout == run_cli(args).stdout  # fp32 is the default
    if not bf16_supported("cpu"):
        assert_one_line_error(run_proc(args + ["--precision", "bf16"]), "--precision bf16")
        return
    low = run_cli(args + ["--precision", "bf16"])
    assert low.exit_code == 0, low.stderr
    a, b = _scores(exact.stdout), _scores(low.stdout)
    assert a.keys() == b.keys()
    assert a != b  # bf16 really ran
    for k in a:  # natural-log scores: within 5% of fp32
        assert abs(a[k] - b[k]) < 0.05 * max(1.0, abs(a[k])), (k, a[k], b[k])
    scorer = NnlmScorer(str(model), precision="bf16")
    assert scorer.low is torch.bfloat16


def test_bad_precision_refused(setup):
    from asrpriv.errors import AsrprivError
    from asrpriv.rescore.nnlm import NnlmScorer

    with pytest.raises(AsrprivError, match="precision must be fp32 or bf16"):
        NnlmScorer(str(setup[0]), precision="fp16")
