"""Correctness of the rescoring scores against independent computations.

- NNLM: batched, length-sorted scores equal a brute-force one-sentence-at-a-time computation
  and the nnlm package's own sentence_logprobs (natural log, </s> included).
- FMP normalized (paper 000 Eq. 1): equals p'(w|h) = f(w) p(w|h) / sum_v f(v) p(v|h) computed
  by hand over the whole vocabulary; unnormalized: ln p(w|h) + ln f(w).
- n-gram: equals kenlm.Model.score(bos, eos) * ln 10, and a back-off computation by hand.
- the total score formula and the weights file.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from _rescore_helpers import BIGRAM, cached_model, ami_sentences

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    return cached_model(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def lstm_path(tmp_path_factory):
    return cached_model(tmp_path_factory.mktemp("models"), arch="lstm", sentences=200)


def _hyps(n=30, seed=3):
    """Real dev hypotheses (with OOVs) plus an empty one and a one-word one."""
    rows = []
    with open(BIGRAM.parent / "dev" / "nbest.tsv", encoding="utf-8") as f:
        next(f)
        for line in f:
            rows.append(line.rstrip("\n").split("\t")[-1].split())
    rng = random.Random(seed)
    return rng.sample(rows, n) + [[], ["okay"]]


def _nbest(n_utts=6, skip=40):
    """Whole real N-best lists (hypotheses sharing prefixes), with a duplicate and an empty
    hypothesis appended to the last utterance: (hyps, units)."""
    from asrpriv.io.nbest import NbestReader

    hyps, units = [], []
    for u, utt in enumerate(list(NbestReader(str(BIGRAM.parent / "dev" / "nbest.tsv")))[skip:skip + n_utts]):
        for h in utt.hyps:
            hyps.append(h.words)
            units.append(u)
    hyps += [hyps[-1], []]
    units += [units[-1]] * 2
    return hyps, units


def _brute_force(model, vocab, words, f=None, normalized=True):
    """One sentence at a time, float64, explicit probabilities (no log_softmax)."""
    ids = vocab.encode(words)
    inp = torch.tensor([[vocab.bos_id] + ids])
    with torch.inference_mode():
        logits = model(inp)[0].double()
    probs = torch.exp(logits - logits.max(dim=-1, keepdim=True).values)
    probs = probs / probs.sum(dim=-1, keepdim=True)  # p(v|h) for every position
    total = 0.0
    for t, target in enumerate(ids + [vocab.eos_id]):
        p = probs[t]
        if f is None:
            total += math.log(float(p[target]))
        elif normalized:
            fac = torch.exp(f.double())
            total += math.log(float(fac[target] * p[target] / (fac * p).sum()))
        else:
            total += math.log(float(p[target])) + float(f[target])
    return total


@pytest.mark.parametrize("which", ["transformer", "lstm", "transformer-padded"])
def test_nnlm_batched_equals_brute_force(which, model_path, lstm_path):
    from asrpriv.nnlm.score import sentence_logprobs
    from asrpriv.rescore.nnlm import NnlmScorer

    path = lstm_path if which == "lstm" else model_path
    hyps = _hyps()
    scorer = NnlmScorer(str(path), batch_tokens=97)  # small budget: many uneven batches
    assert scorer.method == ("padded" if which == "lstm" else "tree")
    if which.endswith("padded"):
        scorer.method = "padded"
    got = scorer.score([scorer.encode(h) for h in hyps])
    for words, value in zip(hyps, got):
        assert value == pytest.approx(_brute_force(scorer.model, scorer.vocab, words), abs=1e-4)
    peer = sentence_logprobs(scorer.model, scorer.vocab, hyps)
    assert got == pytest.approx(peer, abs=1e-4)
    # the batch budget does not change anything
    again = NnlmScorer(str(path), batch_tokens=100000).score([scorer.encode(h) for h in hyps])
    assert again == pytest.approx(got, abs=1e-4)


@pytest.mark.parametrize("budget", [1, 300, 100000])
def test_prefix_trees_equal_brute_force_on_real_nbest(model_path, budget, monkeypatch):
    """Whole N-best lists, whose hypotheses share prefixes, scored as prefix trees (one state
    per distinct history) equal one-sentence-at-a-time scores, with and without units."""
    from asrpriv.nnlm import model as model_module
    from asrpriv.rescore.nnlm import NnlmScorer

    if budget == 300:  # attention of wide rows in query chunks
        monkeypatch.setattr(model_module, "TREE_QUERY_CHUNK", 5)
    scorer = NnlmScorer(str(model_path), batch_tokens=budget)
    hyps, units = _nbest()
    seqs = [scorer.encode(h) for h in hyps]
    with_units = scorer.score(seqs, units=units)
    without = scorer.score(seqs)
    for words, a, b in zip(hyps, with_units, without):
        expected = _brute_force(scorer.model, scorer.vocab, words)
        assert a == pytest.approx(expected, abs=1e-4)
        assert b == pytest.approx(expected, abs=1e-4)
    assert with_units[-3] == with_units[-2]  # the duplicate


def test_normalizer_survives_huge_logits(tmp_path, model_path):
    """Logits beyond fp32's exp range (> 88) take the max-shifted path and stay exact."""
    from asrpriv.nnlm.modelfile import load_model, save_model
    from asrpriv.rescore.nnlm import NnlmScorer

    model, vocab, config = load_model(str(model_path))
    with torch.no_grad():
        model.output.weight.mul_(40.0)
        model.output.bias.fill_(0.0)
        model.output.bias[vocab.id("the")] = 95.0  # exp(95) overflows fp32
    path = tmp_path / "hot.pt"
    save_model(str(path), model, vocab, config)
    scorer = NnlmScorer(str(path))
    hyps, units = _nbest(3)
    got = scorer.score([scorer.encode(h) for h in hyps], units=units)
    for words, value in zip(hyps, got):
        expected = _brute_force(scorer.model, scorer.vocab, words)
        assert math.isfinite(value)
        assert value == pytest.approx(expected, rel=1e-5, abs=1e-3)


def test_prefix_forest_structure():
    """Nodes are exactly the distinct (row, history) pairs; positions rebuild each sentence;
    the attention mask is each node's ancestors and itself."""
    from asrpriv.rescore.prefix_tree import PrefixForest

    rng = random.Random(1)
    seqs, keys = [], []
    for u in range(12):
        base = [rng.randrange(6) for _ in range(rng.randint(0, 9))]
        for _ in range(rng.randint(1, 8)):
            cut = rng.randint(0, len(base))
            seqs.append(base[:cut] + [rng.randrange(6) for _ in range(rng.randint(0, 3))])
            keys.append(u // 3)
    bos, eos = 100, 101
    classes = [k % 2 for k in keys]
    forest = PrefixForest(seqs, keys, bos, eos, max_nodes=20, classes=classes)
    history = {}
    for node in range(forest.n_nodes):
        path, p = [], node
        while p >= 0:
            path.append(int(forest.tokens[p]))
            p = int(forest.parents[p])
        history[node] = tuple(reversed(path))
        assert history[node][0] == bos and len(history[node]) == forest.depths[node] + 1
    row_of = np.repeat(np.arange(len(forest.row_size)), forest.row_size)
    # distinct within a row
    assert len({(row_of[n], history[n]) for n in history}) == forest.n_nodes
    assert forest.row_size.max() <= 20 or forest.row_size.max() == max(len(s) + 1 for s in seqs)
    for s, seq in enumerate(seqs):
        at = forest.pos_seq == s
        nodes, targets = forest.pos_node[at], forest.pos_target[at]
        assert list(targets) == seq + [eos]
        for t, node in enumerate(nodes):
            assert history[node] == (bos, *seq[:t])
        assert len(set(row_of[nodes])) == 1 and forest.row_key[row_of[nodes[0]]] == keys[s]
    # history ids: equal exactly for equal (class, history), across rows
    node_class = {}
    for s, _seq in enumerate(seqs):
        for n in forest.pos_node[forest.pos_seq == s]:
            node_class[n] = classes[s]
    ids = {}
    for n in history:
        ids.setdefault((node_class[n], history[n]), set()).add(int(forest.history[n]))
    assert all(len(v) == 1 for v in ids.values())
    assert len({next(iter(v)) for v in ids.values()}) == len(ids) == len(forest.history_node)
    for h, n in enumerate(forest.history_node):
        assert forest.history[n] == h
    for n in history:
        assert forest.history_class[forest.history[n]] == node_class[n]
    assert len(forest.history_node) < forest.n_nodes  # rows of one class share their roots
    # attention layout of every batch
    seen = []
    for rows in forest.batches(60):
        assert len(rows) == 1 or forest.row_size[rows].max() * len(rows) <= 60
        nodes, slots, allowed = forest.layout(rows)
        width = allowed.shape[-1]
        seen.extend(nodes)
        slot_of = dict(zip(nodes.tolist(), slots.tolist()))
        flat = allowed.reshape(-1, width)
        for n in nodes:
            expect = set()
            p = n
            while p >= 0:
                expect.add(slot_of[p] % width)
                p = int(forest.parents[p])
            assert set(np.flatnonzero(flat[slot_of[n]]).tolist()) == expect
    assert sorted(seen) == list(range(forest.n_nodes))


def _factor_vector(vocab, seed=5, n=80):
    g = torch.Generator().manual_seed(seed)
    f = torch.zeros(len(vocab))
    idx = torch.randperm(len(vocab), generator=g)[:n]
    f[idx] = torch.randn(n, generator=g) * 1.5
    return f


@pytest.mark.parametrize("method", ["tree", "padded"])
def test_fmp_normalized_equals_explicit_normalization(model_path, method):
    from asrpriv.rescore.nnlm import NnlmScorer

    scorer = NnlmScorer(str(model_path), batch_tokens=200)
    scorer.method = method
    f = _factor_vector(scorer.vocab)
    hyps, units = _nbest(4)
    seqs = [scorer.encode(h) for h in hyps]
    got = scorer.score(seqs, [0] * len(seqs), [f], units)
    plain = scorer.score(seqs)
    for words, value, base in zip(hyps, got, plain):
        assert value == pytest.approx(_brute_force(scorer.model, scorer.vocab, words, f), abs=1e-4)
    assert any(abs(a - b) > 0.1 for a, b in zip(got, plain))  # the factors did something


@pytest.mark.parametrize("method", ["tree", "padded"])
def test_fmp_unnormalized_adds_log_factor(model_path, method):
    from asrpriv.rescore.nnlm import NnlmScorer

    scorer = NnlmScorer(str(model_path), normalized=False)
    scorer.method = method
    f = _factor_vector(scorer.vocab, seed=9)
    hyps = _hyps(30, seed=4)
    seqs = [scorer.encode(h) for h in hyps]
    got = scorer.score(seqs, [0] * len(seqs), [f])
    for words, value in zip(hyps, got):
        assert value == pytest.approx(_brute_force(scorer.model, scorer.vocab, words, f, normalized=False),
                                      abs=1e-4)
        # by hand: plain score + sum of the factors of the targets (words and </s>)
    plain = scorer.score(seqs)
    for seq, value, base in zip(seqs, got, plain):
        assert value == pytest.approx(base + float(sum(f[i] for i in seq + [scorer.vocab.eos_id])), abs=1e-4)


@pytest.mark.parametrize("method", ["tree", "padded"])
def test_groups_pick_their_own_factors(model_path, method):
    from asrpriv.rescore.nnlm import NnlmScorer

    scorer = NnlmScorer(str(model_path), batch_tokens=300)
    scorer.method = method
    f1, f2 = _factor_vector(scorer.vocab, 1), _factor_vector(scorer.vocab, 2)
    hyps, units = _nbest(9)
    seqs = [scorer.encode(h) for h in hyps]
    # one client per utterance (-1 none, 0 f1, 1 f2): output blocks mix groups
    groups = [u % 3 - 1 for u in units]
    got = scorer.score(seqs, groups, [f1, f2], units)
    ref_none = scorer.score(seqs)
    ref1 = scorer.score(seqs, [0] * len(seqs), [f1])
    ref2 = scorer.score(seqs, [0] * len(seqs), [f2])
    for i, g in enumerate(groups):
        expected = (ref_none, ref1, ref2)[g + 1][i]
        assert got[i] == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("factors", ["none", "groups", "huge"])
def test_worker_threads_give_the_one_thread_scores(model_path, monkeypatch, factors):
    """With several torch threads the tree scorer runs its forward passes and output blocks on
    worker threads (each op single-threaded, the same cut into tasks with any thread count);
    the scores are bit-identical to one thread's,
    with factor groups mixed in a block and with factors too large to enter as weights, and
    the caller's thread count is restored, also after an error in a worker."""
    from asrpriv.rescore import nnlm as nnlm_module
    from asrpriv.rescore.nnlm import NnlmScorer

    # many small tasks: blocks, tiles and target blocks that cut through groups and rows
    for name, value in (("OUTPUT_BLOCK", 7), ("OUTPUT_ROWS", 50), ("TARGET_BLOCK", 13), ("MIN_TASK_SLOTS", 8)):
        monkeypatch.setattr(nnlm_module, name, value)
    scorer = NnlmScorer(str(model_path), batch_tokens=300)
    hyps, units = _nbest(9)
    seqs = [scorer.encode(h) for h in hyps]
    if factors == "none":
        args = (None, None)
        groups = [-1] * len(seqs)
    else:
        f1, f2 = _factor_vector(scorer.vocab, 1), _factor_vector(scorer.vocab, 2)
        if factors == "huge":  # |f| > SCALE_LIMIT: the factors are added to each tile instead
            f2 = f2 * (2 * nnlm_module.SCALE_LIMIT / float(f2.abs().max()))
        groups = [u % 3 - 1 for u in units]
        args = (groups, [f1, f2])
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = scorer.score(seqs, *args, units)
        torch.set_num_threads(3)
        three = scorer.score(seqs, *args, units)
        assert torch.get_num_threads() == 3
        assert three == one
        for words, g, value in list(zip(hyps, groups, three))[::7]:
            f = None if g < 0 else args[1][g]
            assert value == pytest.approx(_brute_force(scorer.model, scorer.vocab, words, f), abs=1e-4)
        with pytest.raises(Exception):
            scorer.score([[len(scorer.vocab) + 5]], None, None, [0])  # an id outside the embedding
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)


def test_factor_table_maps_words_and_counts_ignored(tmp_path, model_path):
    from asrpriv.nnlm.modelfile import load_model
    from asrpriv.rescore.factors import FactorTable

    _model, vocab, _config = load_model(str(model_path))
    known = vocab.words[10]
    (tmp_path / "f.tsv").write_text(f"#lambda=1\n{known}\t0.75\nzzzunknownword\t2.0\nqqq\t-1\n")
    table = FactorTable(vocab, factors_file=str(tmp_path / "f.tsv"))
    vec = table.vector(str(tmp_path / "f.tsv"))
    assert float(vec[vocab.id(known)]) == pytest.approx(0.75)
    assert float(vec.abs().sum()) == pytest.approx(0.75)  # every other word: factor 1 (log 0)
    assert table.ignored_words == 2
    table.vector(str(tmp_path / "f.tsv"))
    assert table.ignored_words == 2 and table.files_loaded == 1


def test_ngram_equals_kenlm():
    import kenlm

    from asrpriv.rescore.ngram import NgramScorer

    scorer = NgramScorer(str(BIGRAM))
    model = kenlm.Model(str(BIGRAM))
    hyps = _hyps(50) + [["qqqzzz", "the"]]  # an OOV word
    got = scorer.score_many(hyps)
    for words, value in zip(hyps, got):
        assert value == pytest.approx(model.score(" ".join(words), bos=True, eos=True) * math.log(10), abs=1e-4)


ARPA = """\\data\\
ngram 1=5
ngram 2=4

\\1-grams:
-1.0\t<unk>\t0
-99\t<s>\t-0.30103
-0.69897\t</s>
-0.52288\ta\t-0.17609
-0.39794\tb\t-0.22185

\\2-grams:
-0.30103\t<s> a
-0.15490\ta b
-0.52288\tb </s>
-0.69897\tb a

\\end\\
"""


def test_ngram_backoff_by_hand(tmp_path):
    """A hand-worked ARPA: ln P(<s> a b a a </s>) from the back-off rules, in natural log."""
    from asrpriv.rescore.ngram import NgramScorer

    path = tmp_path / "tiny.arpa"
    path.write_text(ARPA)
    scorer = NgramScorer(str(path))
    # a|<s>: bigram -0.30103; b|a: bigram -0.15490; a|b: bigram -0.69897;
    # a|a: backoff(a) + P(a) = -0.17609 - 0.52288; </s>|a: backoff(a) + P(</s>) = -0.17609 - 0.69897
    log10 = -0.30103 - 0.15490 - 0.69897 + (-0.17609 - 0.52288) + (-0.17609 - 0.69897)
    assert scorer.score(["a", "b", "a", "a"]) == pytest.approx(log10 * math.log(10), abs=1e-4)
    # an OOV word gets <unk>'s probability; <s> backs off into the unigram
    log10 = (-0.30103 + -1.0) + (0 + -0.69897)  # backoff(<s>) + P(<unk>); backoff(<unk>)=0 + P(</s>)
    assert scorer.score(["zzz"]) == pytest.approx(log10 * math.log(10), abs=1e-4)
    assert scorer.score([]) == pytest.approx((-0.30103 - 0.69897) * math.log(10), abs=1e-4)


def test_total_formula_by_hand():
    from asrpriv.rescore.combine import Weights

    w = Weights(lm_weight=7.0, nnlm_weight=0.25, word_penalty=-0.5)
    assert w.total(-100.0, -20.0, -16.0, 5) == pytest.approx(-100 + 7 * (0.75 * -20 + 0.25 * -16) - 2.5)
    assert w.total(-100.0, None, -16.0, 5) == pytest.approx(-100 + 7 * -16 - 2.5)   # w counts as 1
    assert w.total(-100.0, -20.0, None, 5) == pytest.approx(-100 + 7 * -20 - 2.5)   # w counts as 0
    default = Weights()
    assert (default.lm_weight, default.nnlm_weight) == (6.5, 0.5)
    assert default.word_penalty == pytest.approx(math.log(0.65), abs=1e-3)


def test_weights_file_roundtrip(tmp_path):
    import io

    from asrpriv.rescore.combine import Weights, read_weights, write_weights

    buf = io.StringIO()
    write_weights(buf, Weights(9.5, 0.3, -1.25), {"wer": "20.1"})
    (tmp_path / "w.txt").write_text(buf.getvalue())
    wf = read_weights(str(tmp_path / "w.txt"))
    assert (wf.weights.lm_weight, wf.weights.nnlm_weight, wf.weights.word_penalty) == (9.5, 0.3, -1.25)
    assert wf.meta == {"wer": "20.1"}


def test_plan_batches_respects_budget():
    from asrpriv.rescore.nnlm import plan_batches

    rng = random.Random(0)
    lengths = [rng.randint(1, 40) for _ in range(500)]
    batches = plan_batches(lengths, 256)
    assert sorted(i for b in batches for i in b) == list(range(500))
    for b in batches:
        assert len(b) == 1 or max(lengths[i] for i in b) * len(b) <= 256
    assert plan_batches([300], 256) == [[0]]


def test_sentences_helper_is_real_text():
    assert sum(len(s) for s in ami_sentences(100)) > 500
