"""approx-ngram: n-gram approximation of a neural LM (paper 003 §2.4), against brute force."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest
import torch

from conftest import AMI, run_cli
from asrpriv.ngram.approx import average_ngrams, token_logprobs
from asrpriv.nnlm.modelfile import load_model
from asrpriv.rescore.nnlm import NnlmScorer

TINY = ["--emb-dim", "16", "--ffn-dim", "32", "--layers", "1", "--heads", "2", "--min-count", "2"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("approx")
    lines = (AMI / "train_text").read_text().splitlines()
    train = d / "train.txt"
    train.write_text("\n".join(lines[9000:10500]) + "\n")
    res = run_cli(["finetune-lm", "--train", str(train), "--ids", "-o", str(d / "tiny.pt"),
                   "--epochs", "1", "-s", "1", "-q", *TINY])
    assert res.exit_code == 0, res.stderr
    text = d / "text.txt"
    text.write_text("\n".join(lines[9000:9120]) + "\n")
    res = run_cli(["approx-ngram", "--nnlm", str(d / "tiny.pt"), "--ids", "--order", "3",
                   str(text), "-o", str(d / "ap.arpa")])
    assert res.exit_code == 0, res.stderr
    return d, text


def brute_force_averages(model, vocab, sentences, order):
    """Each token scored alone from its own prefix; probabilities averaged per n-gram."""
    sums, counts = defaultdict(float), defaultdict(int)
    with torch.inference_mode():
        for words in sentences:
            ids = [vocab.bos_id, *vocab.encode(words), vocab.eos_id]
            for t in range(1, len(ids)):
                logits = model(torch.tensor([ids[:t]]))[0, -1].double()
                p = math.exp(float(torch.log_softmax(logits, -1)[ids[t]]))
                for n in range(1, order + 1):
                    if t - (n - 1) >= 0:
                        key = tuple(ids[t - n + 1:t + 1])
                        sums[key] += p
                        counts[key] += 1
    return {k: sums[k] / counts[k] for k in sums}


def test_averages_equal_brute_force(setup):
    d, text = setup
    model, vocab, _ = load_model(str(d / "tiny.pt"))
    sentences = [l.split()[1:] for l in text.read_text().splitlines()][:40]
    want = brute_force_averages(model, vocab, sentences, 3)
    scorer = NnlmScorer(str(d / "tiny.pt"))
    for use in (None, scorer):  # plain output layer, and the rescorer's tiled one
        seqs, logps = token_logprobs(model, vocab, sentences, batch_tokens=64, scorer=use)
        tables = average_ngrams(seqs, logps, 3, len(vocab) + 1)
        got = {tuple(r): a for t in tables for r, a in zip(t.rows.tolist(), t.average.tolist())}
        assert got.keys() == want.keys()
        assert max(abs(got[k] - want[k]) for k in want) < 1e-5
    assert any(c > 1 for t in tables[1:] for c in t.count)  # some n-grams really are averaged


def test_arpa_highest_order_is_the_average_where_mass_allows(setup):
    d, text = setup
    model, vocab, _ = load_model(str(d / "tiny.pt"))
    sentences = [l.split()[1:] for l in text.read_text().splitlines()]
    want = brute_force_averages(model, vocab, sentences[:30], 3)
    arpa = {}
    section = None
    for line in open(d / "ap.arpa"):
        if line.startswith("\\"):
            section = line.strip()
        elif section == "\\3-grams:" and line.strip():
            lp, words = line.rstrip("\n").split("\t")[:2]
            arpa[tuple(words.split())] = 10 ** float(lp)
    # brute-force averages over the whole text for the 3-grams of the first 30 sentences
    full = brute_force_averages(model, vocab, sentences, 3)
    by_ctx = defaultdict(float)
    for k, a in full.items():
        if len(k) == 3:
            by_ctx[k[:2]] += a
    checked = 0
    for k in want:
        if len(k) == 3 and by_ctx[k[:2]] <= 0.99:
            words = tuple(vocab.words[i] for i in k)
            assert math.isclose(arpa[words], full[k], rel_tol=2e-5), words
            checked += 1
    assert checked > 100


def test_arpa_normalizes_over_the_vocabulary(setup):
    import kenlm

    d, text = setup
    lm = kenlm.Model(str(d / "ap.arpa"))
    vocab = []
    section = None
    for line in open(d / "ap.arpa"):
        if line.startswith("\\"):
            section = line.strip()
        elif section == "\\1-grams:" and line.strip():
            vocab.append(line.split("\t")[1].strip())
    targets = [w for w in vocab if w != "<s>"]
    sentences = [l.split()[1:] for l in text.read_text().splitlines() if len(l.split()) > 4]
    rng = np.random.default_rng(1)
    contexts = [[]] + [sentences[int(i)][:int(rng.integers(1, 4))] for i in rng.choice(len(sentences), 6)]
    contexts += [["zzz-unseen", "the"], ["the", "zzz-unseen"]]
    for ctx in contexts:
        state, nxt = kenlm.State(), kenlm.State()
        lm.BeginSentenceWrite(state)
        for w in ctx:
            lm.BaseScore(state, w, nxt)
            state, nxt = nxt, state
        total = sum(10 ** lm.BaseScore(state, w, nxt) for w in targets)
        assert abs(total - 1.0) < 2e-4, (ctx, total)
