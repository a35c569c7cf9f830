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
    assert proc.stderr == b""  # kenlm's loading chatter is silenced


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
