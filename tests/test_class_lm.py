"""Class n-gram LMs (train-ngram --classes; perplexity/rescore-nbest --classes; paper 003 §2.2)."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from conftest import AMI, run_cli
from asrpriv.mixture.streams import ClassLM, KenlmLM, load_lm
from asrpriv.ngram.classes import ClassMap, read_class_map
from asrpriv.ngram.trainer import train

LINES = 20000  # a slice of train_text: ES/IS meetings with gold spans


@pytest.fixture(scope="module")
def slice_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cls")
    lines = (AMI / "train_text").read_text().splitlines()[9000:9000 + LINES]
    text = d / "text"
    text.write_text("\n".join(lines) + "\n")
    utts = {l.split(" ", 1)[0] for l in lines}
    rows = (AMI / "ne" / "train_ne.tsv").read_text().splitlines()
    spans = d / "spans.tsv"
    spans.write_text("\n".join([rows[0]] + [r for r in rows[1:] if r.split("\t", 1)[0] in utts]) + "\n")
    res = run_cli(["train-ngram", "--classes", str(d / "cls.txt"), "--spans", str(spans),
                   str(text), "-o", str(d / "cls.arpa")])
    assert res.exit_code == 0, res.stderr
    return d, text


def dev_sentences(n=None):
    return [l.split()[1:] for l in (AMI / "dev" / "ref.txt").read_text().splitlines()[:n]]


def test_membership_file_is_a_distribution_per_class(slice_files):
    d, _ = slice_files
    cmap = read_class_map(str(d / "cls.txt"))  # checks sums to 1 itself
    classes = cmap.classes()
    assert {"<PER>", "<NUM>", "<TIME>"} <= set(classes)
    for rows in classes.values():
        assert math.isclose(sum(p for _w, p in rows), 1.0, abs_tol=1e-8)
    # P(w|c) is the member's share of the class count in the training text
    counts = {}
    for line in open(d / "text"):
        for w in line.split()[1:]:
            counts[w] = counts.get(w, 0) + 1
    num = classes["<NUM>"]
    total = sum(counts[w] for w, _p in num)
    for w, p in num:
        assert math.isclose(p, counts[w] / total, rel_tol=1e-8)


def test_probabilities_sum_to_one_over_whole_vocabulary(slice_files):
    d, _ = slice_files
    lm = ClassLM(str(d / "cls.arpa"), str(d / "cls.txt"))
    model = lm.model
    unigrams = []
    section = None
    for l in open(d / "cls.arpa"):
        if l.startswith("\\"):
            section = l.strip()
        elif section == "\\1-grams:" and l.strip():
            unigrams.append(l.split("\t")[1].strip())
    plain = [w for w in unigrams if w not in ("<s>", "</s>") and not (w.startswith("<") and w != "<unk>")]
    members = list(model.class_map.member)
    vocab = plain + members
    assert len(set(vocab)) == len(vocab)
    rng = np.random.default_rng(0)
    sents = [s for s in dev_sentences() if len(s) > 3]
    for k in rng.choice(len(sents), 4, replace=False):
        s = sents[k]
        ctx = " ".join(s[:int(rng.integers(0, 3))] + [w for w in s if w in model.class_map.member][:1])
        total = 10 ** list(model.full_scores(ctx, bos=True, eos=True))[-1][0]  # </s>
        for w in vocab:
            total += 10 ** list(model.full_scores(f"{ctx} {w}".strip(), bos=True, eos=False))[-1][0]
        assert abs(total - 1.0) < 1e-4, (ctx, total)


def test_one_word_per_class_equals_word_lm(tmp_path, slice_files):
    _d, text = slice_files
    sentences = [l.split()[1:] for l in text.read_text().splitlines() if len(l.split()) > 1]
    singles = {"laura": "<PER>", "five": "<NUM>", "minutes": "<TIME>"}
    cmap = ClassMap({w: (c, 1.0) for w, c in singles.items()})
    with open(tmp_path / "word.arpa", "w") as f:
        train(sentences, 3).write(f)
    with open(tmp_path / "cls.arpa", "w") as f:
        train((cmap.map_words(s) for s in sentences), 3).write(f)
    with open(tmp_path / "cls.txt", "w") as f:
        cmap.write(f)
    dev = dev_sentences(300) + [["laura", "said", "five", "minutes"]]
    a, oa = KenlmLM(str(tmp_path / "word.arpa")).word_logprobs(dev)
    b, ob = load_lm(str(tmp_path / "cls.arpa"), classes=str(tmp_path / "cls.txt")).word_logprobs(dev)
    assert np.array_equal(oa, ob)
    assert np.allclose(a, b, atol=1e-9)
    word = json.loads(run_cli(["perplexity", "--lm", str(tmp_path / "word.arpa"), "--json", "-"],
                              input="laura said five minutes\n").stdout)
    cls = json.loads(run_cli(["perplexity", "--lm", str(tmp_path / "cls.arpa"), "--classes",
                              str(tmp_path / "cls.txt"), "--json", "-"],
                             input="laura said five minutes\n").stdout)
    assert cls["lm_type"] == "class" and math.isclose(word["ppl"], cls["ppl"], rel_tol=1e-9)


def test_rescore_nbest_scores_class_lm_like_the_stream(tmp_path, slice_files):
    d, _ = slice_files
    nbest = tmp_path / "nb.tsv"
    lines = (AMI / "dev" / "nbest.tsv").read_text().splitlines()
    nbest.write_text("\n".join(lines[:60]) + "\n")
    res = run_cli(["rescore-nbest", "--ngram", str(d / "cls.arpa"), "--classes", str(d / "cls.txt"),
                   str(nbest)])
    assert res.exit_code == 0, res.stderr
    rows = list(csv.DictReader(res.stdout.splitlines(), delimiter="\t"))
    lm = ClassLM(str(d / "cls.arpa"), str(d / "cls.txt"))
    sents = [r["text"].split() for r in rows]
    logp, _ = lm.word_logprobs(sents)
    sums = np.add.reduceat(logp, np.cumsum([0] + [len(s) + 1 for s in sents[:-1]]))
    assert np.allclose([float(r["ngram_score"]) for r in rows], sums, atol=1e-4)


def test_spans_of_several_files_equal_the_concatenated_file(slice_files, tmp_path):
    """--spans A --spans B (a TEXT that is A's text then B's, e.g. bin/sanitized-lm-experiment's
    sanitized T plus an adaptation set) gives the bytes of --spans with A and B's rows in one
    file (one header): what the recipe built with cat and tail before."""
    d, text = slice_files
    rows = (d / "spans.tsv").read_text().splitlines()
    utts = sorted({r.split("\t", 1)[0] for r in rows[1:]})
    cut = utts[len(utts) // 2]
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    a.write_text("\n".join([rows[0]] + [r for r in rows[1:] if r.split("\t", 1)[0] < cut]) + "\n")
    b.write_text("\n".join([rows[0]] + [r for r in rows[1:] if r.split("\t", 1)[0] >= cut]) + "\n")
    assert len(a.read_text().splitlines()) > 10 and len(b.read_text().splitlines()) > 10
    ok = run_cli(["train-ngram", "--classes", str(tmp_path / "cls.txt"), "--spans", str(a),
                  "--spans", str(b), str(text), "-o", str(tmp_path / "cls.arpa")])
    assert ok.exit_code == 0, ok.stderr
    assert (tmp_path / "cls.txt").read_bytes() == (d / "cls.txt").read_bytes()
    assert (tmp_path / "cls.arpa").read_bytes() == (d / "cls.arpa").read_bytes()
    # one utterance's spans in two files: refused, the second file and line named
    bad = run_cli(["train-ngram", "--classes", str(tmp_path / "c2.txt"), "--spans", str(a),
                   "--spans", str(a), str(text), "-o", str(tmp_path / "c2.arpa")])
    assert bad.exit_code == 2 and f"{a}:2:" in bad.stderr and "spans in" in bad.stderr, bad.stderr


def test_bad_class_inputs_one_line_error(tmp_path):
    from conftest import assert_one_line_error, run_proc

    text = tmp_path / "t.txt"
    text.write_text("u1 hello laura\n")
    proc = run_proc(["train-ngram", "--classes", str(tmp_path / "c.txt"), str(text)])
    assert_one_line_error(proc, "--classes FILE and --spans FILE go together")
    bad = tmp_path / "bad.classes"
    bad.write_text("<PER> 0.5 laura\n<NUM> 1 laura\n")
    proc = run_proc(["perplexity", "--lm", str(AMI / "firstpass-en-us-2gram.arpa.gz"),
                     "--classes", str(bad), str(text)])
    assert_one_line_error(proc, "bad.classes:2:", "two classes")
