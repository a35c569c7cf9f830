"""``asrpriv tune-weights``: the grid search equals a brute-force search scored by jiwer, the
weights file it writes reproduces its WER through rescore-nbest and score-wer, and bad input
stops it with one line."""

from __future__ import annotations

import json

import pytest

from conftest import assert_one_line_error, run_cli, run_proc
from _rescore_helpers import BIGRAM, DEV_REF, cached_model, read_tsv, write_slice

pytest.importorskip("torch")


class _Res:
    def __init__(self, result):
        self.returncode, self.stderr, self.stdout = result.exit_code, result.stderr, result.stdout


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """40 dev utterances rescored with a tiny AMI NNLM and the first-pass bigram."""
    d = tmp_path_factory.mktemp("tune")
    model = cached_model(tmp_path_factory.mktemp("models"))
    sl = write_slice(d / "slice.tsv", 40)
    res = run_cli(["rescore-nbest", "-q", str(sl), "--nnlm", str(model), "--ngram", str(BIGRAM),
                   "-o", str(d / "scored.tsv")])
    assert res.exit_code == 0, res.stderr
    return d / "scored.tsv"


def _brute_force_wer(path, lw, w, wp):
    """Per utterance: the highest total (first-pass rank breaks ties); WER by jiwer."""
    import jiwer

    from asrpriv.io.kaldi import read_text
    from asrpriv.rescore.combine import Weights

    refs = read_text(str(DEV_REF))
    _h, rows = read_tsv(path.read_text())
    weights = Weights(lw, w, wp)
    best: dict[str, tuple] = {}
    for r in rows:
        total = weights.total(float(r["am_score"]), float(r["ngram_score"]), float(r["nnlm_score"]),
                              len(r["text"].split()))
        key = (total, -int(r["first_pass_rank"]))
        if r["utt_id"] not in best or key > best[r["utt_id"]][0]:
            best[r["utt_id"]] = (key, r["text"])
    ids = list(best)
    return 100 * jiwer.wer([" ".join(refs[u]) for u in ids], [best[u][1] for u in ids])


def test_grid_equals_brute_force(scored):
    from asrpriv.io.kaldi import read_text
    from asrpriv.rescore.tune import grid_errors, load_tune_data

    data = load_tune_data(str(scored), read_text(str(DEV_REF)))
    lws, ws, wps = [2.0, 6.5, 12.0], [0.0, 0.5, 1.0], [-3.0, 0.0, 2.0]
    grid = grid_errors(data, lws, ws, wps)
    values = set()
    for a, lw in enumerate(lws):
        for b, w in enumerate(ws):
            for c, wp in enumerate(wps):
                ours = 100 * grid[a, b, c] / data.ref_words
                values.add(int(grid[a, b, c]))
                assert ours == pytest.approx(_brute_force_wer(scored, lw, w, wp), abs=0.15)
    assert len(values) > 3  # the weights matter on this data


def test_cli_weights_reproduce_wer(scored, tmp_path):
    wfile = tmp_path / "w.txt"
    res = run_cli(["tune-weights", str(scored), "--ref", str(DEV_REF), "-o", str(wfile),
                   "--lm-weights", "2:14:2", "--nnlm-weights", "0:1:0.25", "--word-penalties", "-4:2:1"])
    assert res.exit_code == 0, res.stderr
    meta = dict(line[1:].split("=", 1) for line in wfile.read_text().splitlines())
    for key in ("lm_weight", "nnlm_weight", "word_penalty", "wer", "first_pass_wer", "grid_lm_weight"):
        assert key in meta
    assert meta["grid_points"] == str(7 * 5 * 7)
    assert float(meta["wer"]) <= float(meta["first_pass_wer"]) + 1e-9 or float(meta["lm_weight"]) != 6.5
    # apply the file: re-rank the scored list without rescoring, and score it with score-wer
    best = run_cli(["rescore-nbest", "-q", str(scored), "--reuse-scores", "--weights", str(wfile), "--best",
                    "-o", str(tmp_path / "best.txt")])
    assert best.exit_code == 0, best.stderr
    refs = tmp_path / "ref.txt"
    ids = {line.split()[0] for line in (tmp_path / "best.txt").read_text().splitlines()}
    refs.write_text("".join(line for line in DEV_REF.read_text().splitlines(keepends=True)
                            if line.split()[0] in ids))
    rep = run_cli(["score-wer", "--ref", str(refs), "--hyp", str(tmp_path / "best.txt"), "--format", "json"])
    assert rep.exit_code == 0, rep.stderr
    assert json.loads(rep.stdout)["wer"] == pytest.approx(float(meta["wer"]), abs=1e-3)
    assert float(meta["wer"]) == pytest.approx(
        _brute_force_wer(scored, float(meta["lm_weight"]), float(meta["nnlm_weight"]),
                         float(meta["word_penalty"])), abs=0.15)


def test_pipe(scored):
    proc = run_proc(["tune-weights", "--ref", str(DEV_REF), "--lm-weights", "6.5", "--nnlm-weights", "0,0.5",
                     "--word-penalties", "-1,0"], input=scored.read_bytes(), check=True)
    text = proc.stdout.decode()
    assert text.startswith("#lm_weight=6.5\n#nnlm_weight=")
    assert "WER" in proc.stderr.decode()


def test_first_pass_only_collapses_w(tmp_path):
    # lm_score only (no nnlm_score): w is fixed, the first-pass weights are on the grid
    sl = write_slice(tmp_path / "s.tsv", 30)
    res = run_cli(["tune-weights", str(sl), "--ref", str(DEV_REF), "--lm-weights", "6.5",
                   "--word-penalties", "-0.431"])
    assert res.exit_code == 0, res.stderr
    meta = dict(line[1:].split("=", 1) for line in res.stdout.splitlines())
    assert meta["nnlm_weight"] == "0" and meta["grid_points"] == "1"
    assert meta["wer"] == meta["first_pass_wer"]  # the first pass's own weights reproduce rank 1


def test_errors(scored, tmp_path):
    (tmp_path / "ref.txt").write_text("ES2011a_0001 hello\n")
    assert_one_line_error(_Res(run_cli(["tune-weights", str(scored), "--ref", str(tmp_path / "ref.txt")])),
                          "has no reference")
    assert_one_line_error(_Res(run_cli(["tune-weights", str(scored), "--ref", str(DEV_REF),
                                        "--lm-weights", "5:1:1"])), "--lm-weights")
    assert_one_line_error(_Res(run_cli(["tune-weights", str(scored), "--ref", str(DEV_REF),
                                        "--nnlm-weights", "0,2"])), "[0, 1]")
    (tmp_path / "n.tsv").write_text("utt_id\ttext\nES2011a_0001\thello\n")
    assert_one_line_error(_Res(run_cli(["tune-weights", str(tmp_path / "n.tsv"), "--ref", str(DEV_REF)])),
                          "n.tsv", "score column")
    (tmp_path / "w.txt").write_text("#lm_weight=x\n")
    assert_one_line_error(_Res(run_cli(["rescore-nbest", str(scored), "--reuse-scores", "--weights",
                                        str(tmp_path / "w.txt")])), "w.txt:1", "lm_weight")
