"""Paper 001's confidence losses (Eq. 2-4) against hand-computed weighted cross-entropies."""

from __future__ import annotations

import pytest
import torch

from asrpriv.nnlm import losses, train
from asrpriv.nnlm.score import encode_sentences, pad_batch

SENTS = [["the", "cat", "sat"], ["a", "dog"], ["the", "cat", "ran", "far", "away"]]
CONF = [[0.9, 0.5, 1.0], [0.2, 0.4], [1.0, 1.0, 0.8, 0.6, 0.1]]


@pytest.fixture(scope="module")
def setup():
    vocab = train.vocab_from_sentences(SENTS)
    model, _ = train.new_model("lstm", vocab, seed=3, emb_dim=8, hidden_dim=8, layers=1)
    model.eval()
    seqs = encode_sentences(vocab, SENTS)
    inputs, targets, mask = pad_batch(seqs, vocab.eos_id)
    with torch.no_grad():
        logp = torch.log_softmax(model(inputs), -1)
    # per sentence: list of ln p of its targets (words then </s>), computed one by one
    per_sent = [[float(logp[j, t, seqs[j][t + 1]]) for t in range(len(SENTS[j]) + 1)]
                for j in range(len(SENTS))]
    return model, vocab, inputs, targets, per_sent


def library_loss(setup, mode, loss_norm="utterance"):
    model, _vocab, inputs, targets, _ = setup
    weights = [losses.target_weights(len(s), c, mode, loss_norm) for s, c in zip(SENTS, CONF)]
    w = train._weights_batch(weights, list(range(len(SENTS))), targets.shape[1])
    n_targets = sum(len(s) + 1 for s in SENTS)
    denom = len(SENTS) if loss_norm == "utterance" else n_targets
    with torch.no_grad():
        loss, _ = train.batch_loss(model, inputs, targets, w, denom)
    return float(loss)


def test_eq2_plain(setup):
    per = setup[4]
    hand = -sum(sum(lp) / len(lp) for lp in per) / len(per)
    assert library_loss(setup, "none") == pytest.approx(hand, rel=1e-6)


def test_eq3_utterance_weighting(setup):
    per = setup[4]
    hand = 0.0
    for lp, conf in zip(per, CONF):
        c_j = sum(conf) / len(conf)
        hand += c_j / len(lp) * sum(lp)
    assert library_loss(setup, "utterance") == pytest.approx(-hand / len(per), rel=1e-6)


def test_eq4_token_weighting(setup):
    per = setup[4]
    hand = 0.0
    for lp, conf in zip(per, CONF):
        c = conf + [sum(conf) / len(conf)]  # </s> takes the utterance confidence
        hand += sum(ci * li for ci, li in zip(c, lp)) / len(lp)
    assert library_loss(setup, "token") == pytest.approx(-hand / len(per), rel=1e-6)


def test_token_norm_is_token_mean(setup):
    per = setup[4]
    flat = [x for lp in per for x in lp]
    assert library_loss(setup, "none", "token") == pytest.approx(-sum(flat) / len(flat), rel=1e-6)


def test_hard_threshold_drops_exactly_the_low_utterances():
    conf = [[0.5, 1.0], [0.75], [0.7, 0.7, 0.8], [1.0, 0.0], [], [0.76]]
    # means: 0.75 (kept: not < 0.75), 0.75, 0.7333 (dropped), 0.5 (dropped), 1.0 (empty), 0.76
    assert losses.keep_mask(conf, 0.75) == [True, True, False, False, True, True]
    assert losses.parse_confidence("hard:0.75") == ("hard", 0.75)
    for bad in ("hard:x", "hard:2", "soft", ""):
        with pytest.raises(ValueError):
            losses.parse_confidence(bad)


def test_hard_threshold_trains_like_the_filtered_data():
    sents = SENTS * 3
    conf = CONF * 3
    keep = losses.keep_mask(conf, 0.6)
    assert keep.count(False) == 3  # the ["a", "dog"] rows (mean 0.3)
    vocab = train.vocab_from_sentences(sents)
    states = []
    for data, cf, mode in ((sents, conf, "hard:0.6"),
                           ([s for s, k in zip(sents, keep) if k], None, "none")):
        model, _ = train.new_model("lstm", vocab, seed=5, emb_dim=8, hidden_dim=8, layers=1)
        result = train.train_lm(model, vocab, data, cf, confidence=mode, optimizer="sgd", lr=0.5,
                                epochs=2, batch_size=2, seed=9)
        states.append(model.state_dict())
        assert result.sentences == 6 and result.words == 6 * 4
    for k in states[0]:
        assert torch.equal(states[0][k], states[1][k]), k
