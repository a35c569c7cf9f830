"""Issue 37: every input counted, every bound composed, fail closed.

One test per attack class of the issue (each failed on the code before it), with the worked
epsilon of the case where there is one, and a hypothesis property over random chains of steps
through the vocabulary, held-out, weights and duplicate-input slots: the claimed epsilon is
never below the true one computed by hand, and a file with any private input is never public.
Every file the suite makes goes through ``privacy-report --require-dp``: exit 0 on the DP ones,
3 on every other (:func:`_require`).
"""

from __future__ import annotations

import json
import os
import shutil
import threading

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from asrpriv.privacy.history import History, Release, new_release_id
from asrpriv.privacy.state import PrivacyState
from asrpriv.provenance import read_state
from conftest import run_cli, run_proc

# 120 utterances of 3 words from 3 clients: every word is counted 60-90 times
NBEST = "utt_id\ttext\tclient\n" + "".join(
    f"u{i}\t{words}\tc{i % 3}\n" for i, words in enumerate(["a b c", "a d e", "b b c", "c d e"] * 30))
# the same list and one more utterance: not a copy, but every utterance is in both
NBEST2 = NBEST + "u999\ta a a\tc0\n"
TEXT = "a b c d a a b\nb c d e\na c e e d\n"
PRIVATE_TEXT = "a secret b\nsecret c d\n"


def _ok(args, input=None):
    result = run_cli([str(a) for a in args], input=input)
    assert result.exit_code == 0, result.stderr
    return result


def _refused(args, *needles, input=None) -> str:
    result = run_cli([str(a) for a in args], input=input)
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert "Traceback" not in result.stderr and len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def _state(path) -> PrivacyState:
    return read_state(str(path))[1]


def _require(path, dp: bool) -> None:
    """privacy-report --require-dp: exit 0 on a DP file, 3 on any other."""
    code = run_cli(["privacy-report", "--require-dp", str(path)]).exit_code
    assert code == (0 if dp else 3), (path, code)


def _epsilon(path) -> float:
    return _state(path).history.epsilon_pure()


def _edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (old, text[:400])
    path.write_text(text.replace(old, new, 1))


def _meta_value(path, key: str) -> str:
    for line in path.read_text().splitlines():
        if line.startswith(f"#{key}="):
            return line.split("=", 1)[1]
    raise KeyError(key)


@pytest.fixture()
def work(tmp_path):
    (tmp_path / "nb.tsv").write_text(NBEST)
    (tmp_path / "nb2.tsv").write_text(NBEST2)
    (tmp_path / "bg.txt").write_text(TEXT)
    (tmp_path / "private.txt").write_text(PRIVATE_TEXT)
    (tmp_path / "vocab.txt").write_text("a\nb\nc\nd\ne\n")
    _ok(["count-unigrams", "--text", "--public", tmp_path / "bg.txt", "-o", tmp_path / "bg.counts"])
    _ok(["count-unigrams", "--max-l1", "5", tmp_path / "nb.tsv", "-o", tmp_path / "raw.counts"])
    _ok(["train-ngram", "--public", "--discount-fallback", "--order", "2", tmp_path / "bg.txt",
         "-o", tmp_path / "bg.arpa"])
    return tmp_path


def _noisy(work, name, eps="1", source="raw.counts", vocab="vocab.txt"):
    out = work / f"{name}.counts"
    _ok(["add-noise", "--epsilon", eps, "--vocab", work / vocab, work / source, "-o", out])
    return out


def _dp_arpa(work, name, counts):
    out = work / f"{name}.arpa"
    _ok(["fma-adapt", "--arpa", work / "bg.arpa", "--adapt", counts, "-o", out])
    return out


# ================================================================ 1. bounds that compose

def test_sum_of_counts_of_one_nbest_adds_their_bounds(work):
    a, b = work / "a.counts", work / "b.counts"
    _ok(["count-unigrams", "--max-l1", "20", work / "nb.tsv", "-o", a])
    _ok(["count-unigrams", "--max-l1", "20", work / "nb2.tsv", "-o", b])
    summed = work / "sum.counts"
    _ok(["aggregate", a, b, "-o", summed])
    # an utterance of nb.tsv is in both files: it moves the sum by up to 20 + 20 = 40
    assert _meta_value(summed, "max_l1") == "40"
    _require(summed, dp=False)
    noisy = _noisy(work, "n", eps="1", source="sum.counts")
    # worked: scale = 40 / 1 = 40, true epsilon = 40 / 40 = 1 = claimed (before: scale 20,
    # claimed 1, true 40 / 20 = 2)
    assert float(_meta_value(noisy, "noise_scale")) == 40.0
    assert _epsilon(noisy) == 1.0
    _require(noisy, dp=True)


def test_sum_with_disjoint_proof_keeps_the_bound(work):
    for name in ("alice", "bob"):
        _ok(["count-unigrams", "--max-l1", "5", "--partition", name, work / ("nb.tsv" if name == "alice" else "nb2.tsv"),
             "-o", work / f"{name}.counts"])
    summed = work / "sum.counts"
    _ok(["aggregate", "--disjoint", work / "alice.counts", work / "bob.counts", "-o", summed])
    assert float(_meta_value(summed, "max_l1")) == 5.0


def test_the_same_counts_twice_refused(work):
    raw = work / "raw.counts"
    _refused(["aggregate", raw, raw], "the same counts")
    copy = work / "copy.counts"
    shutil.copy(raw, copy)
    _refused(["aggregate", raw, copy], "copy.counts", "the same counts")
    noisy = _noisy(work, "n")
    _refused(["aggregate", noisy, noisy], "the same counts")


# ================================================================ 2. inputs the state never saw

def test_mixed_factors_refused_as_a_public_vocabulary(work):
    noisy = _noisy(work, "g")
    factors = work / "mixed.factors"
    # private background counts: 'secret'-like keys of the private data are in the factors
    _ok(["fma-adapt", "--background", work / "raw.counts", "--global", noisy, "--beta", "0",
         "-o", factors])
    assert _state(factors).kind == "mixed"
    _require(factors, dp=False)
    _refused(["add-noise", "--epsilon", "1", "--vocab", factors, work / "raw.counts"],
             "mixed.factors", "not marked public")
    # private counts, DP counts and a private ARPA are refused too; public ones are read
    # by their own readers (never as word lists)
    _refused(["add-noise", "--epsilon", "1", "--vocab", work / "raw.counts", work / "raw.counts"],
             "not marked public")
    _refused(["add-noise", "--epsilon", "1", "--vocab", noisy, work / "raw.counts"], "not marked public")
    out = _ok(["add-noise", "--epsilon", "1", "--vocab", work / "bg.arpa", work / "raw.counts"]).stdout
    assert {line.split("\t")[0] for line in out.splitlines() if not line.startswith("#")} == set("abcde")


def test_train_ngram_public_text_with_a_private_vocabulary_is_not_public(work):
    out = work / "lm.arpa"
    _ok(["train-ngram", "--public", "--discount-fallback", "--order", "2", "--vocab",
         work / "raw.counts", work / "bg.txt", "-o", out])
    assert _state(out).kind == "private"
    _require(out, dp=False)
    public = work / "pub.arpa"
    _ok(["train-ngram", "--public", "--discount-fallback", "--order", "2", "--vocab",
         work / "bg.counts", work / "bg.txt", "-o", public])
    assert _state(public).kind == "public"
    _require(public, dp=False)


def test_interpolate_heldout_and_its_weights_report_carry_the_text(work):
    dp = _dp_arpa(work, "dp", _noisy(work, "n"))
    report = work / "w.json"
    mix = work / "mix.arpa"
    result = _ok(["interpolate", "-q", "--lm", work / "bg.arpa", "--lm", dp, "--heldout",
                  work / "private.txt", "-o", mix])
    report.write_text(result.stdout)
    assert json.loads(result.stdout)["privacy_state"]["kind"] == "mixed"
    assert _state(mix).kind == "mixed"  # the DP release (epsilon 1) plus the private text
    _require(mix, dp=False)
    _require(report, dp=False)
    # the weights report fitted on private text makes a mixture of two PUBLIC LMs private
    bg2 = work / "bg2.arpa"
    _ok(["train-ngram", "--public", "--discount-fallback", "--order", "1", work / "bg.txt", "-o", bg2])
    from_report = work / "mix2.arpa"
    _ok(["interpolate", "-q", "--lm", work / "bg.arpa", "--lm", bg2, "--weights", f"@{report}",
         "-o", from_report])
    # it inherits the report's state: the DP release the weights saw and the private text
    assert _state(from_report).kind == "mixed"
    _require(from_report, dp=False)
    # declared public held-out text: the mixture is DP with the release's epsilon 1
    public_mix = work / "mix3.arpa"
    _ok(["interpolate", "-q", "--lm", work / "bg.arpa", "--lm", dp, "--heldout", work / "bg.txt",
         "--public-heldout", "-o", public_mix])
    assert _state(public_mix).kind == "dp" and _epsilon(public_mix) == 1.0
    _require(public_mix, dp=True)
    # a report without a privacy record (an older one) is NOT private
    old = work / "old.json"
    old.write_text(json.dumps({"weights": [0.5, 0.5]}))
    _ok(["interpolate", "-q", "--lm", work / "bg.arpa", "--lm", bg2, "--weights", f"@{old}",
         "-o", work / "mix4.arpa"])
    assert _state(work / "mix4.arpa").kind == "private"


# ================================================================ models and deltas

TINY = ["--arch", "lstm", "--emb-dim", "8", "--hidden-dim", "8", "--layers", "1", "--epochs", "1",
        "--min-count", "1", "--seed", "1", "-q"]
DP = ["--clip", "0.5", "--noise-multiplier", "1.0", "--sample-rate", "1", "--expected-clients", "2"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    (d / "bg.txt").write_text(TEXT * 3)
    (d / "private.txt").write_text(PRIVATE_TEXT)
    (d / "client.tsv").write_text("utt_id\ttext\tclient\nu1\ta b c\tc1\nu2\ta d e\tc2\nu3\tb c d\tc2\n")
    (d / "c1.tsv").write_text("utt_id\ttext\nu1\ta b c\n")
    _ok(["finetune-lm", "--train", d / "bg.txt", "--public", *TINY, "-o", d / "base.pt"])
    _ok(["finetune-lm", "--init", d / "base.pt", "--train", d / "client.tsv", "--recipe",
         "client-001", "--by-client", d / "deltas", "--clip", "0.5", "--seed", "1", "-q"])
    _ok(["aggregate", "--model", d / "base.pt", "--server", "fedavg", *DP, d / "deltas",
         "-o", d / "dp.pt", "-q"])
    return d


def test_dp_round_counts_every_update_once(models, tmp_path):
    _require(models / "dp.pt", dp=True)
    _require(models / "deltas" / "c1.delta.pt", dp=False)
    # a copy of c1's delta under another name: with z = 1 per client, c1's update would be
    # added twice (sensitivity 2C: its true noise multiplier 0.5, not 1)
    copies = tmp_path / "copies"
    shutil.copytree(models / "deltas", copies)
    shutil.copy(copies / "c1.delta.pt", copies / "c9.delta.pt")
    line = _refused(["aggregate", "--model", models / "base.pt", "--server", "fedavg", *DP, copies,
                     "-o", tmp_path / "x.pt", "-q"], "c9.delta.pt")
    assert "client 'c1'" in line or "the same update" in line
    # without DP too: the same content counts once whatever its label
    _refused(["aggregate", "--model", models / "base.pt", "--server", "fedavg", copies,
              "-o", tmp_path / "x.pt", "-q"], "c9.delta.pt")
    # c1 trained again with another seed, labelled c1: a second update of one client
    again = tmp_path / "c1-again.delta.pt"
    _ok(["finetune-lm", "--init", models / "base.pt", "--train", models / "c1.tsv", "--recipe",
         "client-001", "-o", tmp_path / "m.pt", "--delta-out", again, "--client", "c1", "--clip",
         "0.5", "--seed", "2", "-q"])
    _refused(["aggregate", "--model", models / "base.pt", "--server", "fedavg", *DP,
              models / "deltas", again, "-o", tmp_path / "y.pt", "-q"], "c1-again", "client 'c1'")
    # the round's cohort: every delta must name a sampled client
    cohort = tmp_path / "cohort.txt"
    cohort.write_text("c1\n")
    _refused(["aggregate", "--model", models / "base.pt", "--server", "fedavg", *DP, "--cohort",
              cohort, models / "deltas", "-o", tmp_path / "z.pt", "-q"], "c2.delta.pt", "cohort")
    cohort.write_text("c1\nc2\nc3\n")
    _ok(["aggregate", "--model", models / "base.pt", "--server", "fedavg", *DP, "--cohort", cohort,
         models / "deltas", "-o", tmp_path / "ok.pt", "-q"])
    _require(tmp_path / "ok.pt", dp=True)


def test_finetune_public_with_private_vocabulary_or_validation_is_not_public(models, tmp_path):
    (tmp_path / "v.txt").write_text("a\nb\nc\nd\ne\nsecret\n")
    raw = tmp_path / "raw.counts"
    _ok(["count-unigrams", "--text", "--max-l1", "5", models / "private.txt", "-o", raw])
    cases = {"vocab": (["--vocab", raw], "private"), "valid": (["--valid", models / "private.txt"], "private"),
             "public-valid": (["--valid", models / "bg.txt", "--public-valid"], "public"),
             "plain-vocab": (["--vocab", tmp_path / "v.txt"], "public")}
    for name, (extra, kind) in cases.items():
        out = tmp_path / f"{name}.pt"
        _ok(["finetune-lm", "--train", models / "bg.txt", "--public", *TINY, *extra, "-o", out])
        assert _state(out).kind == kind, name
        _require(out, dp=False)
    # the private counts' words were read by the counts reader: no '#format=...' word
    from asrpriv.nnlm.modelfile import read_model_file

    assert not any(w.startswith("#") for w in read_model_file(str(tmp_path / "vocab.pt"))["vocab"])


def test_no_exact_statistic_in_a_release(models, tmp_path):
    import torch

    noised = []
    for client in ("c1", "c2"):
        out = tmp_path / f"{client}.delta.pt"
        _ok(["add-noise", "--mechanism", "gaussian", "--noise-multiplier", "1.0", "-o", out,
             models / "deltas" / f"{client}.delta.pt"])
        payload = torch.load(out, weights_only=True)
        assert payload["weight"] == 1 and payload["client"] == client
        assert not {"train_words", "train_sentences", "epochs_run"} & set(payload)
        _require(out, dp=True)
        noised.append(out)
    result = _ok(["aggregate", "--model", models / "base.pt", "--server", "fedavg", *noised,
                  "-o", tmp_path / "avg.pt"])
    assert "words" not in result.stderr  # the clients' exact word total stays private
    _require(tmp_path / "avg.pt", dp=True)
    # a noised delta that still records its client's word count (an older version): a plain
    # FedAvg would publish it through the weights
    payload = torch.load(noised[0], weights_only=True)
    payload["weight"] = 289
    torch.save(payload, noised[0])
    _refused(["aggregate", "--model", models / "base.pt", "--server", "fedavg", *noised,
              "-o", tmp_path / "avg2.pt"], "exact word counts")
    by_client = run_cli(["finetune-lm", "--init", str(models / "base.pt"), "--train",
                         str(models / "client.tsv"), "--recipe", "client-001", "--by-client",
                         str(tmp_path / "d2"), "--clip", "0.01", "--seed", "1"])
    assert by_client.exit_code == 0, by_client.stderr
    assert "words" not in by_client.stderr and "clipped" not in by_client.stderr


# ================================================================ 4. a ledger that fails closed

def _edit_payload(src, dst, change) -> None:
    import torch

    payload = torch.load(src, weights_only=True)
    change(payload)
    torch.save(payload, dst)


def test_model_ledger_against_its_round_record(models, tmp_path):
    # z = 1, q = 1, one round: epsilon ~4.8 at delta 1e-5; q lowered to 0.01 would claim ~0.2
    def lower_rate(payload):
        history = json.loads(payload["privacy_history"])
        history["releases"][0]["params"]["sample_rate"] = 0.01
        payload["privacy_history"] = json.dumps(history)

    _edit_payload(models / "dp.pt", tmp_path / "rate.pt", lower_rate)
    _refused(["privacy-report", tmp_path / "rate.pt"], "rate.pt", "sample rate")
    _require(tmp_path / "rate.pt", dp=False)

    def claim_three_rounds(payload):  # what a 3-round model looks like after 2 releases were dropped
        payload["federated_round"]["dp_rounds"] = 3

    _edit_payload(models / "dp.pt", tmp_path / "dropped.pt", claim_three_rounds)
    _refused(["privacy-report", tmp_path / "dropped.pt"], "3 Gaussian round(s)")
    _require(tmp_path / "dropped.pt", dp=False)

    def old_record(payload):  # no dp_rounds (older file): the round counter bounds the releases
        del payload["federated_round"]["dp_rounds"]
        payload["federated_round"]["round"] = 3

    _edit_payload(models / "dp.pt", tmp_path / "old.pt", old_record)
    _refused(["privacy-report", tmp_path / "old.pt"], "round 3")


def test_every_laplace_release_restated(work):
    once = _noisy(work, "once")
    twice = _noisy(work, "twice", source="once.counts")
    assert _epsilon(twice) == 2.0  # worked: 1 + 1, both releases saw every utterance
    _require(twice, dp=True)
    # lower the FIRST release to 0.5 and the total to 1.5: #noise_scale (the last) agrees,
    # #noise_scales does not
    history = json.loads(_meta_value(twice, "privacy_history"))
    history["releases"][0]["params"]["epsilon"] = 0.5
    text = twice.read_text().replace(_meta_value(twice, "privacy_history"),
                                     json.dumps(history, sort_keys=True, separators=(",", ":")))
    twice.write_text(text.replace("#epsilon=2\n", "#epsilon=1.5\n"))
    _refused(["privacy-report", twice], "twice.counts", "noise_scales")
    _require(twice, dp=False)


def test_lowered_bound_contradicted_by_units_and_mass(work):
    raw = work / "raw.counts"
    assert _meta_value(raw, "units") == "120"
    # 120 utterances of 3 words each: mass 360 > 120 * 0.01; a scale of 0.01 for epsilon 1
    # would make the true epsilon 5 / 0.01 = 500
    _edit(raw, "#max_l1=5.0\n", "#max_l1=0.01\n")
    _refused(["add-noise", "--epsilon", "1", "--vocab", work / "vocab.txt", raw], "raw.counts", "max_l1")


def test_factors_and_arpa_epsilon_edits_refused(work):
    noisy = _noisy(work, "n")
    factors = work / "dp.factors"
    _ok(["fma-adapt", "--background", work / "bg.counts", "--global", noisy, "--beta", "0", "-o", factors])
    _require(factors, dp=True)
    original = factors.read_text()
    _edit(factors, "#epsilon=1\n", "#epsilon=0.5\n")
    _refused(["privacy-report", factors], "dp.factors", "epsilon")
    _require(factors, dp=False)
    # the ledger edited too, consistently with #epsilon (release epsilon 1 -> 0.5): the
    # release's scale (5 / 1 = 5) restated in #noise_scales contradicts it (5 / 0.5 = 10)
    factors.write_text(original.replace('"epsilon":1.0', '"epsilon":0.5').replace("#epsilon=1\n",
                                                                               "#epsilon=0.5\n"))
    _refused(["privacy-report", factors], "dp.factors", "noise_scales")
    _require(factors, dp=False)
    arpa = _dp_arpa(work, "dp", noisy)
    _require(arpa, dp=True)
    _edit(arpa, "#epsilon=1\n", "#epsilon=0.5\n")
    _refused(["privacy-report", arpa], "dp.arpa", "epsilon")


def test_deleting_private_raw_never_upgrades(work):
    noisy = _noisy(work, "g")
    factors = work / "mixed.factors"
    _ok(["fma-adapt", "--background", work / "raw.counts", "--global", noisy, "--beta", "0", "-o", factors])
    line = "#private_raw=" + _meta_value(factors, "private_raw") + "\n"
    _edit(factors, line, "")
    assert _state(factors).kind == "mixed"  # unrecorded data beside the release: not DP
    _require(factors, dp=False)
    private = work / "private.arpa"
    _ok(["train-ngram", "--discount-fallback", "--order", "2", work / "private.txt", "-o", private])
    line = "#private_raw=" + _meta_value(private, "private_raw") + "\n"
    _edit(private, line, "")
    assert _state(private).kind == "private"
    _require(private, dp=False)


def test_mixed_adjacency_units_are_not_dp(work):
    by_client = work / "client.counts"
    _ok(["count-unigrams", "--unit", "client", "--max-l1", "5", work / "nb.tsv", "-o", by_client])
    client_arpa = _dp_arpa(work, "client", _noisy(work, "nc", source="client.counts"))
    utt_arpa = _dp_arpa(work, "utt", _noisy(work, "nu"))
    _require(client_arpa, dp=True)
    _require(utt_arpa, dp=True)
    mix = work / "mix.arpa"
    _ok(["interpolate", "-q", "--lm", client_arpa, "--lm", utt_arpa, "--weights", "0.5,0.5", "-o", mix])
    # epsilon 1 per client and epsilon 1 per utterance do not add up to one guarantee
    obj = json.loads(_ok(["privacy-report", "--json", mix]).stdout)
    assert obj["state"] == "mixed-units" and obj["is_dp"] is False
    text = _ok(["privacy-report", mix]).stdout
    assert "total: undefined" in text
    for unit in ("client", "utterance"):  # each unit's release alone: epsilon 1
        assert f"the releases per {unit} alone: epsilon" in text and "1 (pure DP)" in text
    _require(mix, dp=False)


def test_damaged_arpa_is_not_public(work):
    bad = work / "bad.arpa"
    bad.write_text("\\data\\\nngram 1=2\n\n\\1-grams:\n-1.0\ta\nnan\tb\n")  # NaN, no \end\
    _refused(["privacy-report", bad], "bad.arpa")
    _require(bad, dp=False)
    cut = work / "cut.arpa"
    cut.write_text("\\data\\\nngram 1=1\n\n\\1-grams:\n-1.0\ta\n")
    _refused(["privacy-report", cut], "cut.arpa", "\\end\\")
    _require(cut, dp=False)


# ================================================================ 5. robustness

def _fifo_writer(path, data: bytes):
    def write():
        with open(path, "wb") as f:
            f.write(data)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifos_are_read_once_or_refused_at_once(work):
    noisy = _noisy(work, "n")
    factors = work / "f.factors"
    _ok(["fma-adapt", "--background", work / "bg.counts", "--global", noisy, "--beta", "0", "-o", factors])
    for name, source in (("counts", noisy), ("factors", factors), ("arpa", work / "bg.arpa")):
        fifo = work / f"{name}.fifo"
        os.mkfifo(fifo)
        _fifo_writer(fifo, source.read_bytes())
        proc = run_proc(["privacy-report", str(fifo)], timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert name in proc.stdout.decode()
    fifo = work / "lm.fifo"
    os.mkfifo(fifo)  # nothing writes: a refusal must not wait for a writer
    proc = run_proc(["fma-adapt", "--arpa", str(fifo), "--adapt", str(noisy), "-o",
                     str(work / "x.arpa")], timeout=120)
    assert proc.returncode == 2 and "lm.fifo" in proc.stderr.decode() and "FIFO" in proc.stderr.decode()


@pytest.mark.parametrize("number", ["inf", "1e400", "-inf", "3.5", "-1_0"])
def test_arpa_numbers_people_do_not_mean_refused(work, number):
    bad = work / "bad.arpa"
    bad.write_text(f"\\data\\\nngram 1=3\n\n\\1-grams:\n-1.0\t<s>\n{number}\ta\n-0.5\t</s>\n\n\\end\\\n")
    _refused(["fma-adapt", "--arpa", bad, "--adapt", work / "raw.counts", "-o", work / "x.arpa"],
             "bad.arpa:6:")
    _refused(["interpolate", "--lm", bad, "--lm", work / "bg.arpa", "--weights", "0.5,0.5",
              "-o", work / "m.arpa"], "bad.arpa:6:")


def test_underscore_numbers_and_empty_inputs_refused(work):
    _refused(["add-noise", "--epsilon", "1_0", "--vocab", work / "vocab.txt", work / "raw.counts"],
             "--epsilon", "1_0")
    edited = work / "e.counts"
    edited.write_text((work / "raw.counts").read_text().replace("#max_l1=5.0\n", "#max_l1=1_0\n"))
    _refused(["add-noise", "--epsilon", "1", "--vocab", work / "vocab.txt", edited], "e.counts:")
    (work / "empty").write_text("")
    _refused(["fma-adapt", "--background", work / "bg.counts", "--global", work / "empty", "--beta", "0"],
             "empty", "empty input")
    deep = work / "deep.json"
    deep.write_text("[" * 100000)
    _refused(["pick-best", f"a={deep}"], "deep.json")


# ================================================================ 6. random chains

@st.composite
def chains(draw):
    n = draw(st.integers(1, 3))
    inputs = [(draw(st.sampled_from(["raw", "noisy", "public"])), draw(st.sampled_from([2, 5])),
               draw(st.sampled_from(["0.5", "1"]))) for _ in range(n)]
    kind = inputs[0][0]
    inputs = [(kind, b, e) for _, b, e in inputs]  # aggregate sums counts of one noise state
    return {"inputs": inputs, "duplicate": draw(st.booleans()) and n > 1,
            "vocab": draw(st.sampled_from(["plain", "public", "raw", "noisy"])),
            "final_eps": draw(st.sampled_from(["0.5", "1", None])),
            "heldout": draw(st.sampled_from(["public", "private", None])),
            "weights_report": draw(st.booleans()),
            "model_vocab": draw(st.sampled_from([None, "plain", "counts"])),
            "valid": draw(st.sampled_from([None, "public", "private"]))}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chain=chains())
def test_random_chains_never_claim_too_little(work, chain):
    """Counts of one N-best list (each input a fresh count, so every utterance is in every
    input), summed, noised, adapted into an ARPA, mixed with held-out weights: the true
    epsilon is computed by hand (every release saw every utterance: epsilons add up; the
    final release's true epsilon is the sum of the inputs' bounds over its scale)."""
    d = work / f"c{abs(hash(json.dumps(chain, sort_keys=True))) % 10 ** 9}"
    d.mkdir(exist_ok=True)
    paths, true_eps, private = [], 0.0, False
    for i, (kind, bound, eps) in enumerate(chain["inputs"]):
        nb = d / f"nb{i}.tsv"
        nb.write_text(NBEST + "".join(f"x{i}_{j}\ta\tc0\n" for j in range(i)))  # not copies
        p = d / f"in{i}.counts"
        if kind == "public":
            _ok(["count-unigrams", "--public", "--max-l1", str(bound), nb, "-o", p])
        else:
            _ok(["count-unigrams", "--max-l1", str(bound), nb, "-o", p])
            if kind == "noisy":
                _ok(["add-noise", "--epsilon", eps, "--vocab", work / "vocab.txt", p, "-o", p])
                true_eps += float(eps)  # every release saw every utterance: epsilons add up
            else:
                private = True
        paths.append(p)
    if chain["duplicate"]:
        shutil.copy(paths[0], d / "dup.counts")
        _refused(["aggregate", *paths, d / "dup.counts"], "the same counts")
    current = d / "sum.counts"
    _ok(["aggregate", *paths, "-o", current])
    files = [(current, private, true_eps)]  # (file, has un-noised private data, true epsilon)
    if chain["final_eps"] is not None and chain["inputs"][0][0] != "public":
        vocab = {"plain": work / "vocab.txt", "public": work / "bg.counts", "raw": work / "raw.counts",
                 "noisy": paths[0] if chain["inputs"][0][0] == "noisy" else work / "raw.counts"}[chain["vocab"]]
        args = ["add-noise", "--epsilon", chain["final_eps"], "--vocab", vocab, current,
                "-o", d / "final.counts"]
        if chain["vocab"] in ("raw", "noisy"):
            _refused(args, "not marked public")
        else:
            _ok(args)
            current = d / "final.counts"
            scale = float(_meta_value(current, "noise_scale"))
            # by hand: an utterance is in every input, each bounded: sensitivity = sum of bounds
            true_eps += sum(b for _, b, _ in chain["inputs"]) / scale
            private = False
            files.append((current, private, true_eps))
    (d / "bg.arpa").write_bytes((work / "bg.arpa").read_bytes())
    arpa = _dp_arpa(d, "lm", current)
    files.append((arpa, private, true_eps))
    if chain["heldout"] is not None:
        held = work / ("bg.txt" if chain["heldout"] == "public" else "private.txt")
        report, mix = d / "w.json", d / "mix.arpa"
        out = _ok(["interpolate", "-q", "--lm", work / "bg.arpa", "--lm", arpa, "--heldout", held,
                   *(["--public-heldout"] if chain["heldout"] == "public" else []), "-o", mix]).stdout
        report.write_text(out)
        private = private or chain["heldout"] == "private"
        files += [(mix, private, true_eps), (report, private, true_eps)]
        if chain["weights_report"]:
            again = d / "mix2.arpa"
            _ok(["interpolate", "-q", "--lm", work / "bg.arpa", "--lm", arpa, "--weights", f"@{report}",
                 "-o", again])
            files.append((again, private, true_eps))
    if chain["model_vocab"] is not None:
        # a public training text; the vocabulary slot brings the chain's counts (or a plain
        # list), the validation slot public or private text
        model = d / "lm.pt"
        vocab = work / "vocab.txt" if chain["model_vocab"] == "plain" else current
        valid = {"public": ["--valid", work / "bg.txt", "--public-valid"],
                 "private": ["--valid", work / "private.txt"], None: []}[chain["valid"]]
        _ok(["finetune-lm", "--train", work / "bg.txt", "--public", *TINY, "--vocab", vocab,
             *valid, "-o", model])
        from_counts = chain["model_vocab"] == "counts"
        counts_private, counts_eps = next((p, e) for f, p, e in files if f == current)
        files.append((model, (from_counts and counts_private) or chain["valid"] == "private",
                      counts_eps if from_counts else 0.0))
    for path, has_private, eps in files:
        state = _state(path)
        if has_private:
            assert state.kind not in ("public", "dp"), (path, state.kind)
        if state.kind == "public":
            assert eps == 0 and not has_private, path
        if state.kind == "dp":
            claimed = state.history.epsilon_pure()
            assert claimed >= eps * (1 - 1e-9), (path, claimed, eps)
        assert (state.kind == "dp") == (not has_private and eps > 0), (path, state.kind)
        _require(path, dp=state.kind == "dp")


def test_mixed_units_by_the_algebra():
    def release(unit):
        return Release(new_release_id(), "laplace", unit, {"epsilon": 1.0, "sensitivity_l1": 1.0, "grid": 1.0})

    both = PrivacyState(History().add(release("utterance")).add(release("client")))
    assert both.kind == "mixed-units" and not both.is_dp
    assert "NOT" in both.words()
    one = PrivacyState(History().add(release("client")).add(release("client")))
    assert one.kind == "dp" and one.history.epsilon_pure() == 2.0
    mixed = both.history.add(release("utterance"))
    assert mixed.restricted("utterance").epsilon_pure() == 2.0
    assert mixed.restricted("client").epsilon_pure() == 1.0
    assert len(mixed.restricted("client")) == 1 and not mixed.restricted("none").releases


def test_integer_options_refuse_digit_groups(tmp_path):
    """Python reads '1_0' as 10; every integer option of the CLI refuses it (exit 2), as the
    float options do (issue 37)."""
    import subprocess
    import sys

    nbest = tmp_path / "n.tsv"
    nbest.write_text("utt_id\tclient\trank\ttext\nu1\tc1\t1\ta b\n", encoding="utf-8")
    for args in (["select-nbest", "--top", "1_0", str(nbest)],
                 ["privacy-report", "--noise-multiplier", "1", "--sample-rate", "0.1",
                  "--rounds", "1_0"]):
        proc = subprocess.run([sys.executable, "-m", "asrpriv", *args], capture_output=True,
                              text=True)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "expected a whole number, got '1_0'" in proc.stderr
    ok = subprocess.run([sys.executable, "-m", "asrpriv", "select-nbest", "--top", "10",
                         str(nbest)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
