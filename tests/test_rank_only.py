"""Rank-only N-best lists (no acoustic scores) need explicit or tuned weights (issue 19)."""

from __future__ import annotations

from conftest import AMI, LIBRI, assert_one_line_error, run_proc


def _slice(tmp_path):
    rows = (LIBRI / "test-clean.nbest.tsv").read_text(encoding="utf-8").splitlines()[:101]
    nbest = tmp_path / "nbest.tsv"
    nbest.write_text("\n".join(rows) + "\n", encoding="utf-8")
    text = tmp_path / "text"
    lines = (AMI / "train_text").read_text(encoding="utf-8").splitlines()[:3000]
    text.write_text("".join(line.partition(" ")[2] + "\n" for line in lines), encoding="utf-8")
    lm = tmp_path / "lm.arpa"
    run_proc(["train-ngram", "--order", "2", str(text), "-o", str(lm)], check=True)
    return nbest, lm


def test_rank_only_list_refused_with_default_weights(tmp_path):
    nbest, lm = _slice(tmp_path)
    out = tmp_path / "out.tsv"
    proc = run_proc(["rescore-nbest", "--ngram", str(lm), str(nbest), "-o", str(out)])
    assert_one_line_error(proc, "asrpriv rescore-nbest:", "nbest.tsv:1", "rank-only",
                          "tune-weights", "--lm-weight")
    assert not out.exists()


def test_rank_only_list_rescored_with_explicit_or_tuned_weights(tmp_path):
    nbest, lm = _slice(tmp_path)
    out = tmp_path / "out.tsv"
    run_proc(["rescore-nbest", "--ngram", str(lm), "--lm-weight", "0.1", str(nbest), "-o",
              str(out)], check=True)
    assert out.read_text().count("\n") == 101
    weights = tmp_path / "w.txt"
    weights.write_text("#lm_weight=0.2\n#nnlm_weight=0\n#word_penalty=0\n", encoding="utf-8")
    proc = run_proc(["rescore-nbest", "--ngram", str(lm), "--weights", str(weights), str(nbest),
                     "-o", str(tmp_path / "w.tsv")])
    assert proc.returncode == 0, proc.stderr
