"""Shared helpers for the rescore-nbest / tune-weights tests (tiny real models on bundled data)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AMI = ROOT / "examples" / "data" / "ami"
DEV_NBEST = AMI / "dev" / "nbest.tsv"
DEV_REF = AMI / "dev" / "ref.txt"
BIGRAM = AMI / "firstpass-en-us-2gram.arpa.gz"


def ami_sentences(n: int) -> list[list[str]]:
    """The first ``n`` sentences of the bundled AMI training text (word lists)."""
    out = []
    with open(AMI / "train_text", encoding="utf-8") as f:
        for line in f:
            out.append(line.split()[1:])
            if len(out) >= n:
                break
    return out


def train_tiny_model(path: Path, arch: str = "transformer", sentences: int = 600, vocab_size: int = 400,
                     seed: int = 1, lr: float = 3e-3, **options) -> Path:
    """Train a small real LM on the bundled AMI text and save it as a model file."""
    import torch

    from asrpriv.nnlm.modelfile import save_model
    from asrpriv.nnlm.train import new_model, train_lm, vocab_from_sentences

    sents = ami_sentences(sentences)
    vocab = vocab_from_sentences(sents, vocab_size)
    if arch == "transformer":
        options = {"emb_dim": 32, "ffn_dim": 64, "layers": 1, "heads": 2, **options}
    else:
        options = {"emb_dim": 32, "hidden_dim": 32, "layers": 1, **options}
    torch.set_num_threads(2)
    model, config = new_model(arch, vocab, seed=seed, **options)
    train_lm(model, vocab, sents, epochs=1, seed=seed, batch_size=32, lr=lr, max_grad_norm=1.0)
    save_model(str(path), model, vocab, config)
    return path


def write_slice(path: Path, n_utts: int, source: Path = DEV_NBEST) -> Path:
    """The first ``n_utts`` utterances of an N-best TSV."""
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    out = [lines[0]]
    seen: list[str] = []
    for line in lines[1:]:
        utt = line.split("\t", 1)[0]
        if utt not in seen:
            if len(seen) == n_utts:
                break
            seen.append(utt)
        out.append(line)
    path.write_text("".join(out), encoding="utf-8")
    return path


def read_tsv(text: str) -> tuple[list[str], list[dict[str, str]]]:
    lines = [line for line in text.splitlines() if line]
    header = lines[0].split("\t")
    return header, [dict(zip(header, line.split("\t"))) for line in lines[1:]]


_MODELS: dict[tuple, Path] = {}


def cached_model(tmp_root: Path, arch: str = "transformer", **kw) -> Path:
    """:func:`train_tiny_model` once per test process for the same arguments."""
    key = (arch, tuple(sorted(kw.items())))
    if key not in _MODELS:
        path = Path(tmp_root) / f"tiny-{arch}-{len(_MODELS)}.pt"
        _MODELS[key] = train_tiny_model(path, arch, **kw)
    return _MODELS[key]
