"""asrpriv.api: each function against its CLI step on the bundled data, plus the API's own rules."""

from __future__ import annotations

import json
import subprocess
import sys

import jiwer
import pytest

from asrpriv import api
from asrpriv.errors import AsrprivError, InputError
from conftest import AMI, run_cli

REF = AMI / "dev" / "ref.txt"
HYP = AMI / "dev" / "decoder_1best.txt"


def _kaldi(path, limit=None) -> dict[str, str]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            utt, _, text = line.partition(" ")
            out[utt] = text
            if limit and len(out) >= limit:
                break
    return out


def test_import_does_not_load_torch_or_numpy():
    code = "import sys, asrpriv.api; print('torch' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_every_public_name_is_documented():
    for name in api.__all__:
        assert getattr(api, name).__doc__, name


def test_score_wer_equals_cli_and_jiwer_on_ami_dev():
    ref, hyp = _kaldi(REF), _kaldi(HYP)
    result = api.score_wer(ref, hyp)
    proc = run_cli(["score-wer", "--format", "json", "--ref", str(REF), "--hyp", str(HYP)])
    assert proc.exit_code == 0, proc.stderr
    cli = json.loads(proc.stdout)
    assert (result.substitutions, result.deletions, result.insertions, result.ref_words) == \
        (cli["substitutions"], cli["deletions"], cli["insertions"], cli["ref_words"])
    assert result.wer == pytest.approx(cli["wer"])
    # jiwer's minimal edit distance: the same total errors or fewer (sclite weights S=4, I=D=3
    # may trade one substitution for an insertion plus a deletion), the same reference length
    ids = sorted(ref)
    measures = jiwer.process_words([ref[u].lower() for u in ids],
                                   [hyp.get(u, "").lower() for u in ids])
    assert measures.hits + measures.substitutions + measures.deletions == result.ref_words
    assert measures.substitutions + measures.deletions + measures.insertions <= result.errors
    assert result.errors - (measures.substitutions + measures.deletions + measures.insertions) \
        <= 0.01 * result.ref_words


def test_score_wer_hand_case_and_errors():
    r = api.score_wer({"a": "the cat sat", "b": "x"}, {"a": "the hat sat down"})
    assert (r.substitutions, r.deletions, r.insertions, r.ref_words) == (1, 1, 1, 4)
    assert r.wer == pytest.approx(75.0)
    assert r.missing_hypotheses == ["b"]
    with pytest.raises(AsrprivError):
        api.score_wer({"a": "x"}, {"zzz": "x"})
    with pytest.raises(AsrprivError):
        api.score_wer({}, {})


def test_count_text_and_write_equal_cli_bytes(tmp_path):
    lines = _kaldi(AMI / "dev" / "ref.txt", limit=300)
    text = tmp_path / "text"
    text.write_text("".join(f"{u} {t}\n" for u, t in lines.items()), encoding="utf-8")
    ours = tmp_path / "api.counts"
    api.write_counts(str(ours), api.count_text(str(text), ids=True, max_l1=15))
    cli = tmp_path / "cli.counts"
    run_cli(["count-unigrams", "--text", "--ids", "--max-l1", "15", str(text), "-o", str(cli)])
    assert ours.read_bytes() == cli.read_bytes()
    unbounded = api.count_text(list(lines.values()))  # sentences given as strings
    words = [w for t in lines.values() for w in t.split()]
    assert unbounded.counts == {w: float(words.count(w)) for w in set(words)}


def test_count_nbest_aggregate_noise_and_factors_equal_cli(tmp_path):
    nbest = tmp_path / "nbest.tsv"
    rows = (AMI / "dev" / "nbest.tsv").read_text(encoding="utf-8").splitlines()[:400]
    nbest.write_text("\n".join(rows) + "\n", encoding="utf-8")
    api.write_counts(str(tmp_path / "a.counts"), api.count_nbest(str(nbest), max_l1=15))
    run_cli(["count-unigrams", "--max-l1", "15", str(nbest), "-o", str(tmp_path / "c.counts")])
    assert (tmp_path / "a.counts").read_bytes() == (tmp_path / "c.counts").read_bytes()

    # the same counts twice are refused (issue 37): sum a with counts of another bound
    run_cli(["count-unigrams", "--max-l1", "10", str(nbest), "-o", str(tmp_path / "c.counts")])
    summed = api.aggregate_counts([str(tmp_path / "a.counts"), str(tmp_path / "c.counts")])
    run_cli(["aggregate", str(tmp_path / "a.counts"), str(tmp_path / "c.counts"),
             "-o", str(tmp_path / "sum.counts")])
    assert summed.counts == api.read_counts(str(tmp_path / "sum.counts")).counts

    vocab = sorted(summed.counts) + ["zzz-unseen"]
    (tmp_path / "vocab").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    noisy = api.add_laplace_noise(summed, vocab, epsilon=2.0, seed=5)
    run_cli(["add-noise", "--epsilon", "2", "--vocab", str(tmp_path / "vocab"), "--seed", "5",
             str(tmp_path / "sum.counts"), "-o", str(tmp_path / "noisy.counts")])
    cli_noisy = api.read_counts(str(tmp_path / "noisy.counts"))
    assert noisy.counts.counts == cli_noisy.counts  # same seed, same exact sampler
    assert sorted(noisy.counts.counts) == sorted(vocab)  # noise over the whole public vocabulary
    assert noisy.scale == pytest.approx(25.0 / 2.0)  # the summed bounds (15 + 10) / epsilon
    assert noisy.counts.epsilon == 2.0 and noisy.counts.meta["seeded"] == "1"
    releases = json.loads(noisy.counts.meta["privacy_history"])["releases"]
    assert [r["mechanism"] for r in releases] == ["laplace"]

    background = api.count_text(str(AMI / "train_text"), ids=True, public=True)
    api.write_counts(str(tmp_path / "bg.counts"), background)
    factors = api.fma_factors(background, global_counts=summed, alpha=0.5, beta=0.0)
    run_cli(["fma-adapt", "--background", str(tmp_path / "bg.counts"), "--global",
             str(tmp_path / "sum.counts"), "--alpha", "0.5", "--beta", "0",
             "-o", str(tmp_path / "f.factors")])
    meta, cli_factors = api.read_factors(str(tmp_path / "f.factors"))
    assert meta["log_base"] == "e"
    assert factors.keys() == cli_factors.keys()
    for word in factors:
        assert factors[word] == pytest.approx(cli_factors[word], abs=1e-6)


def test_noise_refuses_private_words_as_keys_only_through_vocab(tmp_path):
    counts = api.count_text(["alice smith called"], max_l1=5)
    noisy = api.add_laplace_noise(counts, ["called", "bob"], epsilon=1.0)
    assert set(noisy.counts.counts) == {"called", "bob"}  # 'alice' never becomes a key
    with pytest.raises(AsrprivError):
        api.add_laplace_noise(api.count_text(["a b"]), ["a"], epsilon=1.0)  # no bound recorded


def test_fma_adapt_arpa_equals_cli(tmp_path):
    text = tmp_path / "text"
    text.write_text("".join(f"{t}\n" for t in list(_kaldi(AMI / "train_text", 2000).values())),
                    encoding="utf-8")
    arpa = tmp_path / "bg.arpa"
    run_cli(["train-ngram", "--order", "2", str(text), "-o", str(arpa)])
    adapt = api.count_text(list(_kaldi(REF, 200).values()))
    api.write_counts(str(tmp_path / "adapt.counts"), adapt)
    api.fma_adapt_arpa(str(arpa), adapt, str(tmp_path / "api.arpa"), beta=0.5, reversed=True)
    run_cli(["fma-adapt", "--arpa", str(arpa), "--adapt", str(tmp_path / "adapt.counts"),
             "--beta", "0.5", "--reversed", "-o", str(tmp_path / "cli.arpa")])
    assert (tmp_path / "api.arpa").read_bytes() == (tmp_path / "cli.arpa").read_bytes()


def test_read_nbest_and_rescore_equal_cli(tmp_path):
    rows = (AMI / "dev" / "nbest.tsv").read_text(encoding="utf-8").splitlines()[:200]
    nbest = tmp_path / "nbest.tsv"
    nbest.write_text("\n".join(rows) + "\n", encoding="utf-8")
    utts = api.read_nbest(str(nbest))
    assert utts and all(h.rank >= 1 for u in utts for h in u.hypotheses)
    assert sum(len(u.hypotheses) for u in utts) == len(rows) - 1
    first = utts[0].hypotheses[0]
    assert set(first.scores) <= {"am_score", "lm_score", "score"} and first.scores
    text = tmp_path / "text"
    text.write_text("".join(f"{t}\n" for t in list(_kaldi(AMI / "train_text", 3000).values())),
                    encoding="utf-8")
    lm = tmp_path / "lm.arpa"
    run_cli(["train-ngram", "--order", "2", str(text), "-o", str(lm)])
    api.rescore_nbest(str(nbest), str(tmp_path / "api.tsv"), ngram=str(lm), lm_weight=8.0)
    run_cli(["rescore-nbest", "--ngram", str(lm), "--lm-weight", "8", str(nbest),
             "-o", str(tmp_path / "cli.tsv")])
    assert (tmp_path / "api.tsv").read_bytes() == (tmp_path / "cli.tsv").read_bytes()


def test_errors_raise_not_exit(tmp_path):
    bad = tmp_path / "bad.counts"
    bad.write_text("#format=asrpriv-counts/2\nword\tnot-a-number\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        api.read_counts(str(bad))
    assert "bad.counts" in str(err.value)
    with pytest.raises(AsrprivError):
        api.count_text(["a"], max_l1=-1)
    with pytest.raises(AsrprivError):
        api.rescore_nbest(str(bad), str(tmp_path / "o.tsv"), no_such_option=1)
