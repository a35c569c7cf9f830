"""``asrpriv perplexity``: kenlm and neural LMs under one convention (</s> counted, OOV as <unk>)."""

from __future__ import annotations

import json
import math

import kenlm
import pytest

from asrpriv.nnlm import modelfile, train
from asrpriv.nnlm.score import sentence_logprobs
from conftest import AMI, assert_one_line_error, run_cli, run_proc

ARPA = ("\\data\\\nngram 1=5\nngram 2=3\n\n\\1-grams:\n-1.0\t<unk>\t0\n-99\t<s>\t-0.3\n-0.5\t</s>\t0\n"
        "-0.6\tthe\t-0.2\n-0.8\tcat\t-0.1\n\n\\2-grams:\n-0.2\t<s> the\n-0.3\tthe cat\n-0.1\tcat </s>\n\n\\end\\\n")
TEXT = "the cat\ncat the dog\n\nthe\n"


@pytest.fixture()
def arpa(tmp_path):
    p = tmp_path / "small.arpa"
    p.write_text(ARPA)
    return p


def test_kenlm_hand_computed(tmp_path, arpa):
    res = run_cli(["perplexity", "--lm", str(arpa), "--json"], input=TEXT)
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    # by hand (log10): "the cat": <s> the -0.2, the cat -0.3, cat </s> -0.1
    # "cat the dog": cat|<s> = bo(<s>) -0.3 + -0.8; the|cat = bo(cat) -0.1 + -0.6;
    #   dog = <unk> -1.0 (bo(the) -0.2 applies: -1.2); </s>|<unk> = -0.5
    # "the": the|<s> -0.2; </s>|the = bo(the) -0.2 + -0.5
    log10 = (-0.2 - 0.3 - 0.1) + (-1.1 - 0.7 - 1.2 - 0.5) + (-0.2 - 0.7)
    assert out["logprob"] == pytest.approx(log10 * math.log(10), abs=1e-4)
    assert (out["words"], out["sentences"], out["tokens"], out["oovs"]) == (6, 3, 9, 1)
    assert out["ppl"] == pytest.approx(math.exp(-out["logprob"] / 9), rel=1e-9)
    model = kenlm.Model(str(arpa))
    sents = ["the cat", "cat the dog", "the"]
    assert out["logprob"] == pytest.approx(sum(model.score(s) for s in sents) * math.log(10), abs=1e-4)
    # kenlm's own perplexity of one sentence is 10^(-log10 / (words + 1)): ours agrees
    one = json.loads(run_cli(["perplexity", "--lm", str(arpa), "--json"], input="cat the dog\n").stdout)
    assert one["ppl"] == pytest.approx(model.perplexity("cat the dog"), rel=1e-5)


def test_line_output_and_pipe(arpa):
    proc = run_proc(["perplexity", "--lm", str(arpa)], input=TEXT)
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.decode()
    assert line.count("\n") == 1 and "ppl=" in line and "oovs=1" in line and "</s> counted" in line
    # kenlm's loading chatter is silenced; the only talk is the OOV warning (1 of 6 words)
    talk = proc.stderr.decode().splitlines()
    assert len(talk) == 1 and "16.7% of the words are outside the vocabulary" in talk[0], talk


def test_kaldi_ids(tmp_path, arpa):
    (tmp_path / "text").write_text("u1 the cat\nu2 cat the dog\nu3 the\n")
    a = json.loads(run_cli(["perplexity", "--lm", str(arpa), "--ids", "--json", str(tmp_path / "text")]).stdout)
    b = json.loads(run_cli(["perplexity", "--lm", str(arpa), "--json"], input=TEXT).stdout)
    assert a["logprob"] == pytest.approx(b["logprob"]) and a["tokens"] == b["tokens"]


def test_nnlm_matches_manual_sum(tmp_path):
    sents = [s.split() for s in TEXT.splitlines() if s.strip()]
    vocab = train.vocab_from_sentences([["the", "cat"], ["a"]])
    model, config = train.new_model("lstm", vocab, seed=1, emb_dim=8, hidden_dim=8, layers=1)
    path = tmp_path / "m.pt"
    modelfile.save_model(str(path), model, vocab, config)
    res = run_cli(["perplexity", "--lm", str(path), "--json"], input=TEXT)
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    model.eval()
    manual = sum(sentence_logprobs(model, vocab, [s])[0] for s in sents)
    assert out["logprob"] == pytest.approx(manual, abs=1e-4)
    assert (out["tokens"], out["oovs"]) == (9, 1)  # "dog" is OOV
    assert out["ppl"] == pytest.approx(math.exp(-manual / 9), rel=1e-4)


@pytest.mark.parametrize("content,needles", [
    ("", ["empty input"]),
    ("a <s> b\n", ["<stdin>:1", "'<s>'"]),
])
def test_bad_text(arpa, content, needles):
    res = run_cli(["perplexity", "--lm", str(arpa)], input=content)
    assert res.exit_code == 2
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and all(n in lines[0] for n in needles), res.stderr


def test_bad_lm(tmp_path):
    bad = tmp_path / "bad.arpa"
    bad.write_text("x\tnot an lm\n")
    proc = run_proc(["perplexity", "--lm", str(bad)], input=TEXT)
    assert_one_line_error(proc, "bad.arpa", "not an ARPA")
    proc = run_proc(["perplexity", "--lm", str(tmp_path / "missing.arpa")], input=TEXT)
    assert_one_line_error(proc, "missing.arpa")


def test_big_firstpass_arpa_against_kenlm():
    arpa = AMI / "firstpass-en-us-2gram.arpa.gz"
    res = run_cli(["perplexity", "--lm", str(arpa), "--ids", "--json", str(AMI / "dev" / "ref.txt")])
    out = json.loads(res.stdout)
    model = kenlm.Model(str(arpa))
    total = oov = words = 0
    lines = [ln.split()[1:] for ln in (AMI / "dev" / "ref.txt").read_text().splitlines() if ln.strip()]
    for words_ in lines:
        for log10p, _, is_oov in model.full_scores(" ".join(words_)):
            total += log10p
            oov += is_oov
        words += len(words_)
    assert out["logprob"] == pytest.approx(total * math.log(10), rel=1e-9)
    assert (out["oovs"], out["words"], out["sentences"]) == (oov, words, len(lines))


# ---------------------------------------------------------------- several LMs (issue 16, 19)

ARPA_B = ("\\data\\\nngram 1=6\nngram 2=2\n\n\\1-grams:\n-1.2\t<unk>\t0\n-99\t<s>\t-0.2\n-0.6\t</s>\t0\n"
          "-0.7\tthe\t-0.1\n-0.9\tcat\t-0.1\n-1.1\tdog\t0\n\n\\2-grams:\n-0.3\t<s> the\n-0.2\tcat </s>\n\n"
          "\\end\\\n")


@pytest.fixture()
def arpa_b(tmp_path):
    p = tmp_path / "b.arpa"
    p.write_text(ARPA_B)
    return p


def _kenlm_tokens(path, sentences):
    model = kenlm.Model(str(path))
    return [lp for s in sentences for lp, _, _ in model.full_scores(" ".join(s))]


def test_weights_one_zero_equal_the_single_lm(arpa, arpa_b):
    single = json.loads(run_cli(["perplexity", "-q", "--json", "--lm", str(arpa)], input=TEXT).stdout)
    mixed = json.loads(run_cli(["perplexity", "-q", "--json", "--lm", str(arpa), "--lm", str(arpa_b),
                                "--weights", "1,0"], input=TEXT).stdout)
    assert mixed["logprob"] == pytest.approx(single["logprob"], abs=1e-12)
    assert mixed["ppl"] == pytest.approx(single["ppl"], rel=1e-12)
    assert mixed["lm_type"] == "mixture" and mixed["weights"] == [1.0, 0.0]
    # "dog" is outside A's vocabulary only: not an OOV of the mixture (B knows it)
    assert single["oovs"] == 1 and mixed["oovs"] == 0


def test_dynamic_interpolation_per_word_against_kenlm(tmp_path, arpa, arpa_b):
    per_word = tmp_path / "pw.tsv"
    res = run_cli(["perplexity", "-q", "--json", "--lm", str(arpa), "--lm", str(arpa_b),
                   "--weights", "0.25,0.75", "--per-word", str(per_word)], input=TEXT)
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    sents = [s.split() for s in TEXT.splitlines() if s.strip()]
    la, lb = _kenlm_tokens(arpa, sents), _kenlm_tokens(arpa_b, sents)
    expect = [math.log(0.25 * 10 ** x + 0.75 * 10 ** y) for x, y in zip(la, lb)]  # 003 Eq. 3
    assert out["logprob"] == pytest.approx(math.fsum(expect), abs=1e-9)
    rows = [line.split("\t") for line in per_word.read_text().splitlines()]
    assert rows[0] == ["utt_id", "position", "word", "oov", "ln_p", "ln_p_1", "ln_p_2"]
    body = rows[1:]
    assert len(body) == out["tokens"] == 9
    assert [r[2] for r in body] == ["the", "cat", "</s>", "cat", "the", "dog", "</s>", "the", "</s>"]
    assert [r[0] for r in body][:4] == ["1", "1", "1", "2"] and body[2][1] == "3"
    # the per-word stream sums to the total log-probability
    assert math.fsum(float(r[4]) for r in body) == pytest.approx(out["logprob"], abs=1e-9)
    assert [float(r[5]) for r in body] == pytest.approx([x * math.log(10) for x in la], abs=1e-9)
    assert [float(r[6]) for r in body] == pytest.approx([x * math.log(10) for x in lb], abs=1e-9)


def test_srilm_conventions_and_oov_rate(tmp_path, arpa):
    out = json.loads(run_cli(["perplexity", "-q", "--json", "--lm", str(arpa)], input=TEXT).stdout)
    # by hand (see test_kenlm_hand_computed): the OOV "dog" (-1.2) is left out of SRILM's sum
    log10 = (-0.2 - 0.3 - 0.1) + (-1.1 - 0.7 - 0.5) + (-0.2 - 0.7)
    assert out["srilm_logprob10"] == pytest.approx(log10, abs=1e-5)
    assert out["oov_rate"] == pytest.approx(1 / 6)
    assert out["srilm_ppl"] == pytest.approx(10 ** (-log10 / (6 - 1 + 3)), rel=1e-5)
    assert out["srilm_ppl1"] == pytest.approx(10 ** (-log10 / (6 - 1)), rel=1e-5)
    line = run_cli(["perplexity", "-q", "--lm", str(arpa)], input=TEXT).stdout
    assert "oov_rate=16.67%" in line and "srilm_ppl1=" in line


def test_nnlm_and_ngram_mixed_per_word(tmp_path, arpa):
    sents = [s.split() for s in TEXT.splitlines() if s.strip()]
    vocab = train.vocab_from_sentences([["the", "cat"], ["a"]])
    model, config = train.new_model("lstm", vocab, seed=1, emb_dim=8, hidden_dim=8, layers=1)
    path = tmp_path / "m.pt"
    modelfile.save_model(str(path), model, vocab, config)
    per_word = tmp_path / "pw.tsv"
    res = run_cli(["perplexity", "--json", "--lm", str(path), "--lm", str(arpa), "--weights", "0.5,0.5",
                   "--per-word", str(per_word)], input=TEXT)
    assert res.exit_code == 0, res.stderr
    body = [line.split("\t") for line in per_word.read_text().splitlines()[1:]]
    model.eval()
    per_sentence = sentence_logprobs(model, vocab, sents)
    got = [0.0] * len(sents)
    for r in body:
        got[int(r[0]) - 1] += float(r[5])
    assert got == pytest.approx(per_sentence, abs=1e-4)


@pytest.mark.parametrize("extra,needles", [
    (["--weights", "0.5,0.6"], ["sum to 1.1"]),
    (["--weights", "1"], ["1 weights for 2 LMs"]),
    ([], ["2 LMs need --weights"]),
    (["--weights", "-0.5,1.5"], [">= 0"]),
])
def test_bad_weights(arpa, arpa_b, extra, needles):
    proc = run_proc(["perplexity", "--lm", str(arpa), "--lm", str(arpa_b), *extra], input=TEXT)
    assert_one_line_error(proc, *needles)


def test_mixture_with_a_bad_lm(tmp_path, arpa):
    bad = tmp_path / "bad.arpa"
    bad.write_text("x\tnot an lm\n")
    res = run_cli(["perplexity", "--lm", str(arpa), "--lm", str(bad), "--weights", "0.5,0.5"], input=TEXT)
    assert res.exit_code == 2 and "bad.arpa" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_rescore_nbest_with_two_ngrams(tmp_path, arpa, arpa_b):
    nbest = tmp_path / "nb.tsv"
    nbest.write_text("utt_id\trank\ttext\tam_score\nu1\t1\tthe cat\t-10\nu1\t2\tcat the dog\t-9\n"
                     "u2\t1\tthe\t-3\n")
    res = run_cli(["rescore-nbest", "-q", "--ngram", str(arpa), "--ngram", str(arpa_b),
                   "--ngram-weights", "0.4,0.6", str(nbest)])
    assert res.exit_code == 0, res.stderr
    rows = [line.split("\t") for line in res.stdout.splitlines()]
    col = rows[0].index("ngram_score")
    got = {r[2]: float(r[col]) for r in rows[1:]}
    for text in ("the cat", "cat the dog", "the"):
        la, lb = _kenlm_tokens(arpa, [text.split()]), _kenlm_tokens(arpa_b, [text.split()])
        expect = math.fsum(math.log(0.4 * 10 ** x + 0.6 * 10 ** y) for x, y in zip(la, lb))
        assert got[text] == pytest.approx(expect, abs=1e-3)  # scores are written with 4 decimals
    one = run_cli(["rescore-nbest", "-q", "--ngram", str(arpa), "--ngram", str(arpa_b),
                   "--ngram-weights", "1,0", str(nbest)]).stdout
    assert one == run_cli(["rescore-nbest", "-q", "--ngram", str(arpa), str(nbest)]).stdout
    res = run_cli(["rescore-nbest", "--ngram", str(arpa), "--ngram", str(arpa_b), "--ngram-weights", "0.4",
                   str(nbest)])
    assert res.exit_code == 2 and "--ngram-weights" in res.stderr


def test_bootstrap_perplexity_constant_ratio_and_paired_difference():
    """Sentences with the same log-prob per token: every resample has that perplexity, so the
    interval is the point (e^2); a second LM at e^1 per token gives the constant difference."""
    from asrpriv.mixture.report import bootstrap_perplexity

    r = bootstrap_perplexity([-2.0, -4.0, -6.0], [1, 2, 3], 50, seed=1, logprob_b=[-1.0, -2.0, -3.0])
    assert (r["unit"], r["units"], r["resamples"], r["seed"]) == ("sentence", 3, 50, 1)
    for key in ("ppl", "ppl_low", "ppl_high"):
        assert r[key] == pytest.approx(math.exp(2.0))
    assert r["ppl_b"] == pytest.approx(math.e)
    for key in ("diff", "diff_low", "diff_high"):
        assert r[key] == pytest.approx(math.exp(2.0) - math.e)


def test_bootstrap_perplexity_resamples_as_the_wer_bootstrap():
    """One token per sentence with ln p = -e_u / 100: a resample's perplexity is exp(WER / 100) of
    the WER bootstrap's resample with errors e_u and one word per utterance (the same index
    stream); with B = 201 both percentiles are order statistics, so the bounds map exactly."""
    from asrpriv.mixture.report import bootstrap_perplexity
    from asrpriv.wer.bootstrap import bootstrap

    errors = [0, 3, 1, 0, 7, 2, 5, 0, 1, 4]
    r = bootstrap_perplexity([-e / 100 for e in errors], [1] * len(errors), 201, seed=9)
    w = bootstrap(errors, [1] * len(errors), 201, seed=9)
    assert r["ppl"] == pytest.approx(math.exp(sum(errors) / len(errors) / 100))
    assert r["ppl_low"] == pytest.approx(math.exp(w.wer_low / 100 / 100))
    assert r["ppl_high"] == pytest.approx(math.exp(w.wer_high / 100 / 100))
    assert r["ppl_low"] < r["ppl"] < r["ppl_high"]


def test_sentence_totals_and_the_per_word_file(tmp_path, arpa):
    from asrpriv.mixture.report import read_sentence_totals, sentence_totals

    lp, tok = sentence_totals([-1.0, -2.0, -3.0, -0.5, -0.25], [["a", "b"], ["c"]])
    assert lp.tolist() == [-6.0, -0.75] and tok.tolist() == [3.0, 2.0]
    text = tmp_path / "k.txt"
    text.write_text("u1 the cat\nu2 cat the dog\nu3 the\n")
    pw = tmp_path / "pw.tsv"
    res = run_cli(["perplexity", "--ids", "--json", "--lm", str(arpa), "--per-word", str(pw), str(text)])
    assert res.exit_code == 0, res.stderr
    ids, lp, tok = read_sentence_totals(str(pw))
    assert ids == ["u1", "u2", "u3"] and tok.tolist() == [3.0, 4.0, 2.0]
    assert lp.sum() == pytest.approx(json.loads(res.stdout)["logprob"])

    # one pass with marked tokens (sanitized-lm's entity words): the marked sums are the rows'
    # own ln_p values, summed per sentence, read independently here with the csv module
    import csv

    from asrpriv.mixture.report import read_sentence_sums
    from asrpriv.reports.sanitized_lm import sentence_parts

    rows = list(csv.DictReader(pw.open(encoding="utf-8"), delimiter="\t"))
    marked = {("u1", 1), ("u2", 0), ("u2", 2), ("u9", 0)}   # 0-based; u9 is not in the file
    sums = read_sentence_sums(str(pw), marked)
    assert sums["ids"] == ids and sums["lp"].tolist() == lp.tolist() and sums["tok"].tolist() == tok.tolist()
    want = {u: [0.0, 0] for u in ids}
    for r in rows:
        if (r["utt_id"], int(r["position"]) - 1) in marked:
            want[r["utt_id"]][0] += float(r["ln_p"])
            want[r["utt_id"]][1] += 1
    assert sums["marked_lp"].tolist() == [want[u][0] for u in ids]
    assert sums["marked_n"].tolist() == [2.0 if u == "u2" else float(u == "u1") for u in ids]
    assert [want[u][1] for u in ids] == [1, 2, 0]
    parts = sentence_parts(str(pw), marked)
    assert parts["ent_n"] == [1, 2, 0] and parts["ent_lp"] == [want[u][0] for u in ids]
    assert "marked_lp" not in read_sentence_sums(str(pw))


def test_perplexity_bootstrap_option(tmp_path, arpa):
    text = tmp_path / "k.txt"
    text.write_text("u1 the cat\nu2 cat the dog\nu3 the\nu4 the cat\n")
    res = run_cli(["perplexity", "--ids", "--json", "--lm", str(arpa), "--bootstrap", "300", "--seed", "4", str(text)])
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    b = out["bootstrap"]
    assert (b["unit"], b["units"], b["resamples"], b["seed"], b["level"]) == ("sentence", 4, 300, 4, 0.95)
    assert b["ppl"] == pytest.approx(out["ppl"]) and b["ppl_low"] < out["ppl"] < b["ppl_high"]
    again = json.loads(run_cli(["perplexity", "--ids", "--json", "--lm", str(arpa), "--bootstrap", "300",
                                "--seed", "4", str(text)]).stdout)
    assert again["bootstrap"] == b                                  # the seed repeats it
    line = run_cli(["perplexity", "--ids", "--lm", str(arpa), "--bootstrap", "300", "--seed", "4",
                    "--confidence-level", "0.9", str(text)])
    assert line.exit_code == 0 and "ppl 90% CI [" in line.stdout and "300 resamples of 4 sentences, seed 4" in line.stdout
    assert "bootstrap" not in json.loads(run_cli(["perplexity", "--ids", "--json", "--lm", str(arpa), str(text)]).stdout)
    bad = run_cli(["perplexity", "--ids", "--lm", str(arpa), "--bootstrap", "0", str(text)])
    assert bad.exit_code == 2
