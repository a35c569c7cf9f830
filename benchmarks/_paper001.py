"""Paper 001's LSTM LM shape (emb 100, 2 layers of 512) over the bundled AMI vocabulary (words
of ``train_text`` seen twice), random weights (seed 0): the model of the federated benchmarks."""

from __future__ import annotations

from pathlib import Path

TRAIN = Path(__file__).resolve().parents[1] / "examples" / "data" / "ami" / "train_text"
ADAPT = Path(__file__).resolve().parents[1] / "examples" / "data" / "ami" / "adapt" / "nbest.tsv"
#: utterances per client (paper 001's ~24)
UTTS_PER_CLIENT = 24


def paper_lstm():
    """``(model, vocab, config)`` of a fresh paper-001-shape LSTM LM."""
    from asrpriv.nnlm import train
    from asrpriv.nnlm.data import read_corpus

    corpus = read_corpus(str(TRAIN), ids=True)
    vocab = train.vocab_from_sentences(corpus.sentences, None, 2)
    model, config = train.new_model("lstm", vocab, seed=0, emb_dim=100, hidden_dim=512, layers=2)
    return model, vocab, config


def write_client_inputs(work: Path, clients: int):
    """work/base.pt (:func:`paper_lstm`) and work/clients.tsv: the rank-1 rows of the bundled
    AMI adaptation N-best with words, cut into ``clients`` clients c000, c001, ... of
    :data:`UTTS_PER_CLIENT` consecutive utterances. Returns ``(model, vocab, texts)``, the
    texts of the rows written."""
    from asrpriv.nnlm import modelfile

    model, vocab, config = paper_lstm()
    modelfile.save_model(str(work / "base.pt"), model, vocab, config)
    lines = ADAPT.read_text(encoding="utf-8").splitlines()
    head = lines[0].split("\t")
    i_rank, i_text = head.index("rank"), head.index("text")
    rows = [ln.split("\t") for ln in lines[1:] if ln.split("\t")[i_rank] == "1"]
    rows = [r for r in rows if r[i_text].split()][: clients * UTTS_PER_CLIENT]
    with open(work / "clients.tsv", "w", encoding="utf-8") as f:
        f.write("utt_id\tclient\trank\ttext\n")
        for k, r in enumerate(rows):
            f.write(f"{r[0]}\tc{k // UTTS_PER_CLIENT:03d}\t1\t{r[i_text]}\n")
    return model, vocab, [r[i_text] for r in rows]
