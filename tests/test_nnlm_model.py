"""Neural LM library: vocabulary, causal models, model files (weights_only, malicious pickles)."""

from __future__ import annotations

import math
import subprocess
import sys
import pickle
from collections import Counter

import pytest
import torch

from asrpriv.errors import InputError
from asrpriv.nnlm import modelfile, train
from asrpriv.nnlm.model import make_config
from asrpriv.nnlm.score import sentence_logprobs
from asrpriv.nnlm.vocab import Vocabulary, build_vocabulary
from conftest import assert_one_line_error, run_proc

SENTS = [s.split() for s in ["the cat sat on the mat", "the dog sat", "a cat and a dog ran far away",
                             "the", "dog on the log"]]
TINY = {"transformer": {"emb_dim": 16, "ffn_dim": 32, "layers": 2, "heads": 2},
        "lstm": {"emb_dim": 16, "hidden_dim": 16, "layers": 2}}


def tiny(arch="transformer", seed=0, **extra):
    vocab = train.vocab_from_sentences(SENTS)
    model, config = train.new_model(arch, vocab, seed=seed, **{**TINY[arch], **extra})
    return model.eval(), vocab, config


def test_vocabulary_specials_order_and_oov():
    vocab = build_vocabulary(Counter({"b": 2, "a": 2, "c": 5, "rare": 1}), min_count=2)
    assert vocab.words == ["<unk>", "<s>", "</s>", "c", "a", "b"]  # count desc, then alphabetical
    assert (vocab.unk_id, vocab.bos_id, vocab.eos_id) == (0, 1, 2)
    assert vocab.encode(["c", "rare", "b"]) == [3, 0, 5]
    assert vocab.id("zzz") == vocab.unk_id and len(vocab) == 6
    assert vocab.is_oov("rare") and not vocab.is_oov("<unk>")
    assert build_vocabulary(Counter({"b": 2, "a": 2, "c": 5}), vocab_size=4).words[3:] == ["c"]
    with pytest.raises(ValueError):
        Vocabulary(["a", "<unk>", "<s>", "</s>"])
    with pytest.raises(ValueError):
        Vocabulary(["<unk>", "<s>", "</s>", "a", "a"])


def test_default_shapes_are_the_papers():
    t = make_config("transformer", 100)
    assert (t["emb_dim"], t["ffn_dim"], t["layers"], t["heads"], t["dropout"]) == (256, 1024, 3, 4, 0.1)
    lstm = make_config("lstm", 100)
    assert (lstm["hidden_dim"], lstm["layers"]) == (512, 2)
    model = modelfile.build_model(t)
    assert model.blocks[0].ff1.out_features == 1024 and model.blocks[0].qkv.in_features == 256
    assert len(model.blocks) == 3 and model.blocks[0].heads == 4


@pytest.mark.parametrize("arch", ["transformer", "lstm"])
def test_causal_and_right_padding_safe(arch):
    model, vocab, _ = tiny(arch)
    x = torch.tensor([[1, 3, 4, 5, 6, 7, 8]])
    full = model(x)
    assert full.shape == (1, 7, len(vocab))
    for cut in (1, 3, 5):
        assert torch.allclose(model(x[:, :cut]), full[:, :cut], atol=1e-5)
    # changing a later token never changes earlier logits
    y = x.clone()
    y[0, 4:] = 2
    assert torch.allclose(model(y)[:, :4], full[:, :4], atol=1e-5)
    # batched (padded, sorted) scoring equals one-by-one scoring
    batched = sentence_logprobs(model, vocab, SENTS, batch_size=3)
    single = [sentence_logprobs(model, vocab, [s])[0] for s in SENTS]
    assert batched == pytest.approx(single, abs=1e-4)


def test_sentence_logprob_is_sum_of_word_and_eos_logprobs():
    model, vocab, _ = tiny("lstm")
    sent = ["the", "cat", "zebra"]  # zebra is OOV -> <unk>
    ids = [vocab.bos_id, *vocab.encode(sent), vocab.eos_id]
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids[:-1]])), -1)[0]
    manual = sum(float(logp[t, ids[t + 1]]) for t in range(len(sent) + 1))
    assert sentence_logprobs(model, vocab, [sent])[0] == pytest.approx(manual, abs=1e-5)
    assert vocab.encode(["zebra"]) == [vocab.unk_id]


@pytest.mark.parametrize("arch", ["transformer", "lstm"])
def test_save_load_roundtrip(tmp_path, arch):
    model, vocab, config = tiny(arch, tie_embeddings=True)
    path = tmp_path / "m.pt"
    modelfile.save_model(str(path), model, vocab, config, note="x")
    raw = torch.load(path, weights_only=True)
    assert raw["kind"] == "model" and raw["vocab"] == vocab.words and raw["note"] == "x"
    loaded, vocab2, config2 = modelfile.load_model(str(path))
    assert not loaded.training and config2 == config and vocab2.words == vocab.words
    for (k, a), (k2, b) in zip(model.state_dict().items(), loaded.state_dict().items()):
        assert k == k2 and torch.equal(a, b)
    assert loaded.output.weight is loaded.embedding.weight
    x = torch.tensor([[1, 3, 4]])
    assert torch.equal(model(x), loaded(x))


def test_delta_is_not_a_model(tmp_path):
    model, vocab, config = tiny()
    modelfile.save_delta(str(tmp_path / "d.pt"), model.state_dict(), vocab, config, weight=7)
    assert modelfile.read_model_file(str(tmp_path / "d.pt"))["weight"] == 7
    with pytest.raises(InputError, match="delta"):
        modelfile.load_model(str(tmp_path / "d.pt"))


class Evil:
    """Unpickling this runs a shell command that creates a marker file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("how", ["torch", "pickle"])
def test_malicious_file_is_refused_and_runs_nothing(tmp_path, how):
    marker = tmp_path / "PWNED"
    evil = tmp_path / "evil.pt"
    payload = {"format": "asrpriv-nnlm", "format_version": 1, "kind": "model", "x": Evil(marker)}
    if how == "torch":
        torch.save(payload, evil)
    else:
        evil.write_bytes(pickle.dumps(payload))
    # check the crafted file really is armed (plain pickle would run it)
    if how == "pickle":
        pickle.loads(evil.read_bytes())
        assert marker.exists()
        marker.unlink()
    with pytest.raises(InputError, match="refused"):
        modelfile.load_model(str(evil))
    assert not marker.exists()
    (tmp_path / "t.txt").write_text("the cat\n")
    if how == "torch":
        proc = run_proc(["perplexity", "--lm", str(evil), str(tmp_path / "t.txt")])
    else:
        proc = run_proc(["finetune-lm", "--init", str(evil), "--train", str(tmp_path / "t.txt"),
                         "-o", str(tmp_path / "o.pt")])
    assert_one_line_error(proc, "evil.pt", "refused")
    assert not marker.exists() and not (tmp_path / "o.pt").exists()


def test_not_a_model_file(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(InputError):
        modelfile.load_model(str(bad))
    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(2)}, other)
    with pytest.raises(InputError, match="format marker"):
        modelfile.load_model(str(other))


def test_train_only_output_refuses_tied_embeddings():
    model, _, _ = tiny(tie_embeddings=True)
    with pytest.raises(ValueError, match="tied"):
        train.set_trainable(model, "output")
    with torch.no_grad():
        assert math.isfinite(float(model(torch.tensor([[1, 3]])).sum()))


def test_dropout_rate_scale_and_repeatability():
    """The 16-bit-draw dropout: drop rate within 8e-6 of p (plus sampling noise), kept values
    scaled so the expectation is preserved exactly, the same mask again after the same seed,
    identity in eval mode."""
    import torch

    from asrpriv.nnlm.model import Dropout

    drop = Dropout(0.1).train()
    x = torch.ones(1000, 1003)  # numel not a multiple of 4
    torch.manual_seed(7)
    y = drop(x)
    kept = y != 0
    rate = 1 - float(kept.float().mean())
    assert abs(rate - 0.1) < 5 * (0.1 * 0.9 / x.numel()) ** 0.5 + 8e-6
    assert torch.all(y[kept] == drop.scale)
    assert drop.keep / 65536 * drop.scale == 1.0  # unbiased: E[mask * scale] = 1
    torch.manual_seed(7)
    assert torch.equal(drop(x), y)
    assert not torch.equal(drop(x), y)  # the generator moved on
    drop.eval()
    assert drop(x) is x
    assert Dropout(0.0).train()(x) is x


def test_vocabulary_from_an_asrpriv_arpa_with_its_metadata_header(tmp_path):
    """`finetune-lm --vocab LM.arpa` on an ARPA written by train-ngram (which opens with '#'
    metadata lines): the vocabulary is the 1-grams, not every line's first field (a bug made it
    every n-gram line's log-prob: a 17x output layer)."""
    from asrpriv.nnlm.vocab import SPECIALS, read_word_list

    text = tmp_path / "t.txt"
    text.write_text("u1 a b c\nu2 b c d\nu3 c d a b\n")
    arpa = tmp_path / "m.arpa"
    run = subprocess.run([sys.executable, "-m", "asrpriv", "train-ngram", "-q", "--ids", "--discount-fallback", str(text),
                          "-o", str(arpa)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert arpa.read_text().startswith("#")            # the metadata header this test is about
    vocab = read_word_list(str(arpa))
    words = [w for w in vocab.words if w not in SPECIALS]
    assert sorted(words) == ["a", "b", "c", "d"]
    # a plain word list whose words start with '#' keeps them
    plain = tmp_path / "words.txt"
    plain.write_text("#tag\nhello\n")
    assert [w for w in read_word_list(str(plain)).words if w not in SPECIALS] == ["#tag", "hello"]
