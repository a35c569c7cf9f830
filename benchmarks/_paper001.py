"""Paper 001's LSTM LM shape (emb 100, 2 layers of 512) over the bundled AMI vocabulary (words
of ``train_text`` seen twice), random weights (seed 0): the model of the federated benchmarks."""

from __future__ import annotations

from pathlib import Path

TRAIN = Path(__file__).resolve().parents[1] / "examples" / "data" / "ami" / "train_text"


def paper_lstm():
    """``(model, vocab, config)`` of a fresh paper-001-shape LSTM LM."""
    from asrpriv.nnlm import train
    from asrpriv.nnlm.data import read_corpus

    corpus = read_corpus(str(TRAIN), ids=True)
    vocab = train.vocab_from_sentences(corpus.sentences, None, 2)
    model, config = train.new_model("lstm", vocab, seed=0, emb_dim=100, hidden_dim=512, layers=2)
    return model, vocab, config
