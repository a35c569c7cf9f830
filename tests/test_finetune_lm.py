"""``asrpriv finetune-lm``: inputs, recipes, seeds, deltas, frozen layers, errors, real AMI checks."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from asrpriv.nnlm import modelfile, train
from asrpriv.nnlm.data import read_corpus
from conftest import AMI, assert_one_line_error, run_cli, run_proc

TINY = ["--emb-dim", "16", "--ffn-dim", "32", "--layers", "1", "--heads", "2", "--min-count", "1"]
TEXT = "the cat sat on the mat\nthe dog sat on the log\na cat and a dog\n\nthe cat ate the fish\n"


@pytest.fixture()
def text(tmp_path) -> Path:
    p = tmp_path / "train.txt"
    p.write_text(TEXT)
    return p


@pytest.fixture()
def base(tmp_path, text) -> Path:
    out = tmp_path / "base.pt"
    res = run_cli(["finetune-lm", "--train", str(text), "-o", str(out), "--epochs", "2", "-s", "1", *TINY])
    assert res.exit_code == 0, res.stderr
    return out


def state(path) -> dict:
    return modelfile.read_model_file(str(path))["state_dict"]


def test_from_scratch_file(base):
    payload = modelfile.read_model_file(str(base))
    assert payload["kind"] == "model" and payload["config"]["arch"] == "transformer"
    assert payload["train_words"] == 22 and payload["train_sentences"] == 4  # blank line skipped
    assert payload["vocab"][:3] == ["<unk>", "<s>", "</s>"] and "fish" in payload["vocab"]


def test_from_pipe_lstm(tmp_path):
    out = tmp_path / "m.pt"
    proc = run_proc(["finetune-lm", "-o", str(out), "--arch", "lstm", "--emb-dim", "8", "--hidden-dim", "8",
                     "--layers", "1", "--epochs", "1", "-s", "3"], input=TEXT)
    assert proc.returncode == 0, proc.stderr
    assert b"\r" not in proc.stderr  # no progress bar when stderr is not a terminal
    model, vocab, config = modelfile.load_model(str(out))
    assert config["arch"] == "lstm" and config["hidden_dim"] == 8 and "cat" in vocab
    quiet = run_proc(["finetune-lm", "-q", "-o", str(tmp_path / "q.pt"), "--arch", "lstm", "--emb-dim", "8",
                      "--hidden-dim", "8", "--layers", "1", "--epochs", "1"], input=TEXT)
    assert quiet.returncode == 0 and quiet.stderr == b""


def test_seed_is_bit_for_bit(tmp_path, text):
    outs = []
    for name, seed in (("a", "7"), ("b", "7"), ("c", "8")):
        out = tmp_path / f"{name}.pt"
        res = run_cli(["finetune-lm", "--train", str(text), "-o", str(out), "--epochs", "2", "-s", seed, *TINY])
        assert res.exit_code == 0, res.stderr
        outs.append(state(out))
    assert all(torch.equal(outs[0][k], outs[1][k]) for k in outs[0])
    assert not all(torch.equal(outs[0][k], outs[2][k]) for k in outs[0])


def test_delta_reconstructs_new_exactly(tmp_path, text, base):
    new, delta = tmp_path / "new.pt", tmp_path / "delta.pt"
    res = run_cli(["finetune-lm", "--init", str(base), "--train", str(text), "-o", str(new),
                   "--delta-out", str(delta), "--recipe", "client-001", "-s", "2"])
    assert res.exit_code == 0, res.stderr
    assert "sgd lr 1, batch 8 (sentences), 1 epoch(s)" in res.stderr
    d = modelfile.read_model_file(str(delta))
    assert d["kind"] == "delta" and d["weight"] == 22
    init_s, new_s = state(base), state(new)
    moved = 0
    for k, dk in d["state_dict"].items():
        assert dk.dtype == init_s[k].dtype
        assert torch.equal(init_s[k] - dk, new_s[k]), k  # bitwise
        moved += int(not torch.equal(init_s[k], new_s[k]))
    assert moved > 0
    # the fine-tuned model is a loadable model with the init's vocabulary
    _, vocab, _ = modelfile.load_model(str(new))
    assert vocab.words == modelfile.read_model_file(str(base))["vocab"]


def test_train_only_output_freezes_the_rest(tmp_path, text, base):
    new = tmp_path / "new.pt"
    res = run_cli(["finetune-lm", "--init", str(base), "--train", str(text), "-o", str(new),
                   "--train-only", "output", "--epochs", "2", "--lr", "0.01", "-s", "1"])
    assert res.exit_code == 0, res.stderr
    a, b = state(base), state(new)
    for k in a:
        if k.startswith("output."):
            assert not torch.equal(a[k], b[k]), k
        else:
            assert torch.equal(a[k], b[k]), k


def test_nbest_tsv_uses_rank1_and_confidence(tmp_path, base):
    tsv = tmp_path / "n.tsv"
    tsv.write_text("utt_id\trank\ttext\tconfidence\n"
                   "u1\t2\tthe dog\t0.9 0.9\n"
                   "u1\t1\tthe cat sat\t0.9 0.8 1.0\n"
                   "u2\t1\ta dog\t0.1 0.3\n"
                   "u3\t1\tthe fish\t0.6 0.7\n")
    corpus = read_corpus(str(tsv))
    assert corpus.kind == "nbest" and corpus.sentences == [["the", "cat", "sat"], ["a", "dog"], ["the", "fish"]]
    assert corpus.confidences[1] == [0.1, 0.3]
    delta = tmp_path / "d.pt"
    res = run_cli(["finetune-lm", "--init", str(base), "--train", str(tsv), "-o", str(tmp_path / "n.pt"),
                   "--delta-out", str(delta), "--confidence", "hard:0.6", "-s", "1"])
    assert res.exit_code == 0, res.stderr
    assert "dropped 1 of 3 sentences" in res.stderr
    assert modelfile.read_model_file(str(delta))["weight"] == 5  # words of u1 and u3
    for mode in ("utterance", "token"):
        res = run_cli(["finetune-lm", "--init", str(base), "--train", str(tsv), "-o",
                       str(tmp_path / f"{mode}.pt"), "--confidence", mode, "-s", "1"])
        assert res.exit_code == 0, res.stderr


def test_kaldi_text_with_ids(tmp_path):
    kaldi = tmp_path / "text"
    kaldi.write_text("u1 the cat\nu2 a dog\nu3\n")
    corpus = read_corpus(str(kaldi), ids=True)
    assert corpus.ids == ["u1", "u2", "u3"] and corpus.sentences[2] == []
    res = run_cli(["finetune-lm", "--ids", "--train", str(kaldi), "-o", str(tmp_path / "k.pt"), *TINY])
    assert res.exit_code == 0, res.stderr
    payload = modelfile.read_model_file(str(tmp_path / "k.pt"))
    assert "u1" not in payload["vocab"] and payload["train_words"] == 4 and payload["train_sentences"] == 3


@pytest.mark.parametrize("args,content,needles", [
    (["--confidence", "token"], TEXT, ["confidence"]),
    (["--confidence", "hard:abc"], TEXT, ["hard:C"]),
    (["--delta-out", "d.pt"], TEXT, ["--delta-out needs --init"]),
    ([], "", ["empty input"]),
    ([], "the <s> cat\n", ["<stdin>:1", "'<s>'"]),
    ([], "utt_id\ttext\tconfidence\nu1\tthe cat\t0.5\n", ["<stdin>:2", "confidence"]),
    ([], b"the \xff cat\n", ["<stdin>:1", "UTF-8"]),
])
def test_bad_input_one_line_error(tmp_path, args, content, needles):
    res = run_cli(["finetune-lm", "-o", str(tmp_path / "m.pt"), *args], input=content)
    assert res.exit_code == 2
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("asrpriv finetune-lm: "), res.stderr
    for needle in needles:
        assert needle in lines[0]
    assert not (tmp_path / "m.pt").exists()


def test_bad_usage_with_init(tmp_path, text, base):
    res = run_cli(["finetune-lm", "--init", str(base), "--train", str(text), "-o", str(tmp_path / "x.pt"),
                   "--emb-dim", "32"])
    assert res.exit_code == 2 and "--emb-dim" in res.stderr
    res = run_cli(["finetune-lm", "--train", str(text), "-o", str(tmp_path / "x.pt"), "--tie-embeddings",
                   "--train-only", "output", *TINY])
    assert res.exit_code == 2 and "tied" in res.stderr


# ---- real data: a slice of the bundled AMI training text ------------------------------------

def _ami_slice():
    corpus = read_corpus(str(AMI / "train_text"), ids=True)
    by_meeting: dict[str, list[list[str]]] = {}
    for utt, words in zip(corpus.ids, corpus.sentences):
        by_meeting.setdefault(utt.split("_")[0], []).append(words)
    return by_meeting


@pytest.fixture(scope="module")
def ami():
    torch.set_num_threads(1)
    by_meeting = _ami_slice()
    meetings = sorted(by_meeting)
    train_sents = [s for m in meetings[:12] for s in by_meeting[m]][:6000]
    valid = [s for m in meetings[40:42] for s in by_meeting[m]][:600]
    vocab = train.vocab_from_sentences(train_sents, min_count=3)
    model, config = train.new_model("transformer", vocab, seed=1, emb_dim=32, ffn_dim=64, layers=1,
                                    heads=2, dropout=0.0)
    before, _ = train.evaluate(model, vocab, valid)
    result = train.train_lm(model, vocab, train_sents, valid=valid, epochs=2, batch_size=32, seed=1)
    return {"by_meeting": by_meeting, "meetings": meetings, "vocab": vocab, "model": model,
            "config": config, "before": before, "result": result, "train": train_sents, "valid": valid}


def test_ami_training_reduces_validation_perplexity(ami):
    hist = ami["result"].history
    assert math.exp(hist[-1]["valid_loss"]) < 0.25 * math.exp(ami["before"])  # untrained ~ |V|
    assert hist[1]["valid_loss"] < hist[0]["valid_loss"]
    assert 30 < hist[-1]["valid_ppl"] < 1000


def test_ami_finetune_on_a_meeting_lowers_its_perplexity(ami, tmp_path):
    meeting = ami["meetings"][60]
    sents = ami["by_meeting"][meeting]
    cut = int(len(sents) * 0.7)
    adapt, held = sents[:cut], sents[cut:]
    vocab = ami["vocab"]
    model = modelfile.build_model(ami["config"])
    model.load_state_dict(ami["model"].state_dict())
    before, _ = train.evaluate(model, vocab, held)
    train.train_lm(model, vocab, adapt, optimizer="adam", lr=1e-3, epochs=2, batch_size=8, seed=1)
    after, _ = train.evaluate(model, vocab, held)
    assert after < before - 0.02, (meeting, math.exp(before), math.exp(after))


def test_ami_ngram_perplexity_in_the_same_range(ami, tmp_path):
    pytest.importorskip("asrpriv.ngram")
    from asrpriv.nnlm.perplexity import kenlm_perplexity, load_kenlm, nnlm_perplexity

    train_txt = tmp_path / "train.txt"
    train_txt.write_text("".join(" ".join(s) + "\n" for s in ami["train"]))
    arpa = tmp_path / "lm.arpa"
    res = run_cli(["train-ngram", "-n", "3", str(train_txt), "-o", str(arpa)])
    assert res.exit_code == 0, res.stderr
    ngram = kenlm_perplexity(load_kenlm(str(arpa)), ami["valid"])
    nnlm = nnlm_perplexity(ami["model"], ami["vocab"], ami["valid"])
    assert ngram["tokens"] == nnlm["tokens"]
    assert 1 / 3 < nnlm["ppl"] / ngram["ppl"] < 3, (nnlm["ppl"], ngram["ppl"])


def test_valid_lr_decay_early_stop_keeps_best():
    sents = [s.split() for s in TEXT.splitlines() if s.strip()] * 4
    valid = [["the", "cat", "sat", "on", "the", "mat"], ["a", "dog", "sat"]]
    vocab = train.vocab_from_sentences(sents)
    model, _ = train.new_model("lstm", vocab, seed=0, emb_dim=8, hidden_dim=8, layers=1, dropout=0.0)
    # a learning rate far too large: validation loss rises after the first epoch
    result = train.train_lm(model, vocab, sents, valid=valid, optimizer="sgd", lr=200.0, epochs=6,
                            batch_size=4, loss_norm="token", seed=0, patience=1, lr_decay=0.5)
    hist = result.history
    losses_ = [h["valid_loss"] for h in hist]
    best = min(range(len(losses_)), key=losses_.__getitem__)
    assert result.best_epoch == best + 1
    assert train.evaluate(model, vocab, valid)[0] == pytest.approx(losses_[best], rel=1e-6)
    assert any(a > b for a, b in zip(losses_[1:], losses_))  # the case under test happened
    for i in range(1, len(hist)):  # LR halves after each epoch that did not improve
        improved = losses_[i - 1] < min(losses_[: i - 1], default=math.inf)
        assert hist[i]["lr"] == hist[i - 1]["lr"] * (1.0 if improved else 0.5)
    if result.stopped_early:
        assert len(hist) < 6 and all(h["valid_loss"] >= losses_[best] for h in hist[best + 1:])


def test_cli_valid_reports(tmp_path, text):
    res = run_cli(["finetune-lm", "--train", str(text), "--valid", str(text), "-o", str(tmp_path / "v.pt"),
                   "--epochs", "2", "-s", "1", *TINY])
    assert res.exit_code == 0, res.stderr
    assert "valid loss" in res.stderr and "kept epoch" in res.stderr


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("max_norm", [0.0, 1e-3, 1e6])  # none, clipping, a bound never reached
def test_clipped_step_equals_clip_grad_norm_then_step(optimizer, max_norm):
    """SGD folds the clipping factor into its step size; the update is clip_grad_norm_'s."""
    gen = torch.Generator().manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(7, 5, generator=gen, dtype=torch.float64)),
              torch.nn.Parameter(torch.randn(3, generator=gen, dtype=torch.float64))]
    ref = [torch.nn.Parameter(p.detach().clone()) for p in params]
    before = [p.detach().clone() for p in params]
    for ps in (params, ref):
        for p, g in zip(ps, (torch.randn(7, 5, generator=torch.Generator().manual_seed(1), dtype=torch.float64),
                             torch.randn(3, generator=torch.Generator().manual_seed(2), dtype=torch.float64))):
            p.grad = g.clone()
    cls = torch.optim.SGD if optimizer == "sgd" else torch.optim.Adam
    opt, opt_ref = cls(params, lr=0.5), cls(ref, lr=0.5)
    train.clipped_step(opt, params, max_norm, linear=optimizer == "sgd")
    if max_norm:
        torch.nn.utils.clip_grad_norm_(ref, max_norm)
    opt_ref.step()
    for p, r in zip(params, ref):
        torch.testing.assert_close(p, r, rtol=1e-12, atol=1e-12)
    assert opt.param_groups[0]["lr"] == 0.5  # the step size is restored
    moved = math.sqrt(sum(float(((p.detach() - b) ** 2).sum()) for p, b in zip(params, before)))
    assert moved > 0
    if optimizer == "sgd" and max_norm == 1e-3:
        assert moved == pytest.approx(0.5 * 1e-3, rel=1e-3)  # lr x the clipped norm


def test_vocab_word_list_and_arpa(tmp_path, text):
    """--vocab fixes the vocabulary: a word list (file order) or an ARPA's 1-grams; training
    words outside it become <unk>; with --init it is refused."""
    words = tmp_path / "words.txt"
    words.write_text("dog\ncat 12\n\n<unk>\nzebra\ndog\n")
    out = tmp_path / "v.pt"
    res = run_cli(["finetune-lm", "--train", str(text), "-o", str(out), "--epochs", "1", "-s", "1",
                   "--vocab", str(words), *TINY])
    assert res.exit_code == 0, res.stderr
    assert modelfile.read_model_file(str(out))["vocab"] == ["<unk>", "<s>", "</s>", "dog", "cat", "zebra"]
    arpa = tmp_path / "lm.arpa"
    arpa.write_text("\\data\\\nngram 1=5\nngram 2=1\n\n\\1-grams:\n-1.0\t<s>\t-0.3\n-0.5\t</s>\n"
                    "-0.7\tfish\t-0.2\n-0.9\tthe\n-2.0\t<unk>\n\n\\2-grams:\n-0.1\tthe fish\n\n\\end\\\n")
    res = run_cli(["finetune-lm", "--train", str(text), "-o", str(out), "--epochs", "1", "-s", "1",
                   "--vocab", str(arpa), *TINY])
    assert res.exit_code == 0, res.stderr
    assert modelfile.read_model_file(str(out))["vocab"] == ["<unk>", "<s>", "</s>", "fish", "the"]
    bad = tmp_path / "bad.arpa"
    bad.write_text("\\data\\\nngram 1=2\n\n\\1-grams:\n-1.0\tthe\nbroken\n")
    res = run_cli(["finetune-lm", "--train", str(text), "-o", str(tmp_path / "b.pt"), "--vocab", str(bad), *TINY])
    assert res.exit_code == 2 and "bad.arpa:6:" in res.stderr and len(res.stderr.splitlines()) == 1
    empty = tmp_path / "empty.txt"
    empty.write_text("\n<s>\n")
    res = run_cli(["finetune-lm", "--train", str(text), "-o", str(tmp_path / "e.pt"), "--vocab", str(empty), *TINY])
    assert res.exit_code == 2 and len(res.stderr.splitlines()) == 1 and "empty.txt" in res.stderr
    res = run_cli(["finetune-lm", "--init", str(out), "--train", str(text), "-o", str(tmp_path / "i.pt"),
                   "--vocab", str(words)])
    assert res.exit_code == 2 and "--vocab" in res.stderr
