"""Issue 25: no file may claim more privacy than it has.

Each test reproduces one finding of the audit (each failed before the fix); the property test
runs random chains of steps over noised, un-noised and seeded inputs and checks that the
output claims DP exactly when every private input went through a noise release, with the
epsilon of their composition.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from asrpriv.privacy.history import History, Release, new_release_id
from asrpriv.privacy.state import PUBLIC, PrivacyState, after_release, combine, raw_state
from conftest import run_cli

TEXT = "a b c d a a b\nb c d e\na c e e d\n"
# 120 utterances: every word is counted ~60-100 times, so Laplace noise of scale 10 (L1 bound
# 5, epsilon 0.5) never clamps every count to 0 (fma-adapt would refuse an empty adaptation)
NBEST = "utt_id\ttext\n" + "".join(f"u{i}\t{words}\n" for i, words in
                                    enumerate(["a b c", "a d e", "b b c", "c d e"] * 30))


def _ok(args):
    result = run_cli(args)
    assert result.exit_code == 0, result.stderr
    return result


def _report(path) -> dict:
    return json.loads(_ok(["privacy-report", "--json", str(path)]).stdout)


def _require_dp(path) -> int:
    return run_cli(["privacy-report", "--require-dp", str(path)]).exit_code


@pytest.fixture()
def work(tmp_path):
    (tmp_path / "bg.txt").write_text(TEXT)
    (tmp_path / "nb.tsv").write_text(NBEST)
    (tmp_path / "vocab.txt").write_text("a\nb\nc\nd\ne\n")
    _ok(["count-unigrams", "--text", "--public", str(tmp_path / "bg.txt"), "-o", str(tmp_path / "bg.counts")])
    _ok(["count-unigrams", "--max-l1", "5", str(tmp_path / "nb.tsv"), "-o", str(tmp_path / "raw.counts")])
    _ok(["train-ngram", "--public", "--discount-fallback", "--order", "2", str(tmp_path / "bg.txt"), "-o", str(tmp_path / "bg.arpa")])
    return tmp_path


def _noisy(work, name, eps="1", seed=None, partition=None):
    raw = work / f"{name}.raw.counts"
    _ok(["count-unigrams", "--max-l1", "5", *(["--partition", partition] if partition else []),
         str(work / "nb.tsv"), "-o", str(raw)])
    out = work / f"{name}.counts"
    _ok(["add-noise", "--epsilon", eps, "--vocab", str(work / "vocab.txt"),
         *(["--seed", str(seed)] if seed is not None else []), str(raw), "-o", str(out)])
    return out


# ------------------------------------------------------------ raw data is never "epsilon 0"

def test_raw_counts_are_not_private_and_never_epsilon_0(work):
    result = _ok(["privacy-report", str(work / "raw.counts")])
    assert "not private" in result.stdout.lower()
    assert "epsilon 0" not in result.stdout
    assert _require_dp(work / "raw.counts") != 0
    noisy = _noisy(work, "n")
    assert _require_dp(noisy) == 0
    assert _report(noisy)["epsilon_pure"] == 1.0


def test_public_counts_are_public_not_dp(work):
    obj = _report(work / "bg.counts")
    assert obj["state"] == "public" and not obj["is_dp"] and "epsilon_pure" not in obj
    assert _require_dp(work / "bg.counts") != 0  # public is not DP: nothing was released


def test_fma_arpa_on_raw_counts_is_not_private(work):
    out = work / "adapted.arpa"
    _ok(["fma-adapt", "--arpa", str(work / "bg.arpa"), "--adapt", str(work / "raw.counts"), "-o", str(out)])
    result = _ok(["privacy-report", str(out)])
    assert "not private" in result.stdout.lower() and "epsilon 0" not in result.stdout
    noisy_out = work / "adapted-dp.arpa"
    _ok(["fma-adapt", "--arpa", str(work / "bg.arpa"), "--adapt", str(_noisy(work, "n")), "-o", str(noisy_out)])
    assert _report(noisy_out)["state"] == "dp"


def test_personal_factors_are_not_private_and_claim_no_epsilon(work):
    noisy = _noisy(work, "g")
    out = work / "f.txt"
    _ok(["fma-adapt", "--background", str(work / "bg.counts"), "--global", str(noisy),
         "--personal", str(work / "raw.counts"), "-o", str(out)])
    header = [line for line in out.read_text().splitlines() if line.startswith("#")]
    assert not any(line.startswith("#epsilon=") for line in header)
    result = _ok(["privacy-report", str(out)])
    assert "not private" in result.stdout.lower()
    assert "mixed" in result.stdout and "device" in result.stdout
    assert _require_dp(out) != 0
    # the global factors alone (beta 0) are DP
    dp_out = work / "g.txt"
    _ok(["fma-adapt", "--background", str(work / "bg.counts"), "--global", str(noisy), "--beta", "0",
         "-o", str(dp_out)])
    assert _report(dp_out)["state"] == "dp" and _require_dp(dp_out) == 0


# ------------------------------------------------------------ models, deltas, ARPA chains

@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A public base LSTM, a client delta, a FedAvg model without DP, a DP FedAvg model and
    a seeded DP model: every model file state the steps write."""
    d = tmp_path_factory.mktemp("models")
    (d / "bg.txt").write_text(TEXT * 3)
    (d / "client.tsv").write_text("utt_id\ttext\tclient\nu1\ta b c\tc1\nu2\ta d e\tc2\nu3\tb c d\tc2\n")
    tiny = ["--arch", "lstm", "--emb-dim", "8", "--hidden-dim", "8", "--layers", "1", "--epochs", "1",
            "--min-count", "1", "--seed", "1", "-q"]
    _ok(["finetune-lm", "--train", str(d / "bg.txt"), "--public", *tiny, "-o", str(d / "base.pt")])
    _ok(["finetune-lm", "--init", str(d / "base.pt"), "--train", str(d / "client.tsv"),
         "--recipe", "client-001", "--by-client", str(d / "deltas"), "--clip", "0.5", "--seed", "1", "-q"])
    _ok(["aggregate", "--model", str(d / "base.pt"), "--server", "fedavg", str(d / "deltas"),
         "-o", str(d / "fedavg.pt"), "-q"])
    dp = ["--clip", "0.5", "--noise-multiplier", "1.0", "--sample-rate", "1", "--expected-clients", "2"]
    _ok(["aggregate", "--model", str(d / "base.pt"), "--server", "fedavg", *dp, str(d / "deltas"),
         "-o", str(d / "dp.pt"), "-q"])
    _ok(["aggregate", "--model", str(d / "base.pt"), "--server", "fedavg", *dp, "--seed", "3",
         str(d / "deltas"), "-o", str(d / "seeded.pt"), "-q"])
    return d


def test_model_states(models):
    assert _report(models / "base.pt")["state"] == "public"
    for name in ("deltas/c1.delta.pt", "fedavg.pt"):
        result = _ok(["privacy-report", str(models / name)])
        assert "not private" in result.stdout.lower() and "epsilon 0" not in result.stdout
        assert _require_dp(models / name) != 0
    dp = _report(models / "dp.pt")
    assert dp["state"] == "dp" and len(dp["releases"]) == 1 and _require_dp(models / "dp.pt") == 0
    assert _report(models / "seeded.pt")["state"] == "seeded" and _require_dp(models / "seeded.pt") != 0


def test_local_noise_covers_the_client_update(models, tmp_path):
    out = tmp_path / "noisy.delta.pt"
    _ok(["add-noise", "--mechanism", "gaussian", "--noise-multiplier", "1", str(models / "deltas/c2.delta.pt"),
         "-o", str(out)])
    assert _report(out)["state"] == "dp"


def test_a_private_start_model_stays_un_noised_in_a_dp_round(models, tmp_path):
    """DP noise covers the clients' clipped updates, not what the start model holds."""
    priv = tmp_path / "priv-base.pt"
    _ok(["finetune-lm", "--train", str(models / "bg.txt"), "--arch", "lstm", "--emb-dim", "8",
         "--hidden-dim", "8", "--layers", "1", "--epochs", "1", "--min-count", "1", "--seed", "1",
         "-q", "-o", str(priv)])
    assert _report(priv)["state"] == "private"
    _ok(["finetune-lm", "--init", str(priv), "--train", str(models / "client.tsv"), "--recipe",
         "client-001", "--by-client", str(tmp_path / "d"), "--clip", "0.5", "--seed", "1", "-q"])
    _ok(["aggregate", "--model", str(priv), "--server", "fedavg", "--clip", "0.5", "--noise-multiplier",
         "1", "--sample-rate", "1", "--expected-clients", "2", str(tmp_path / "d"), "-o",
         str(tmp_path / "out.pt"), "-q"])
    obj = _report(tmp_path / "out.pt")
    assert obj["state"] == "mixed" and [p["what"] for p in obj["private_raw"]] == ["text"]


def test_history_survives_finetune_and_approx_ngram(models, tmp_path):
    dp = _report(models / "dp.pt")
    tuned = tmp_path / "tuned.pt"
    _ok(["finetune-lm", "--init", str(models / "dp.pt"), "--train", str(models / "bg.txt"), "--public",
         "--recipe", "client-001", "-q", "-o", str(tuned)])
    assert _report(tuned)["releases"] == dp["releases"] and _report(tuned)["state"] == "dp"
    arpa = tmp_path / "approx.arpa"
    _ok(["approx-ngram", "--nnlm", str(models / "dp.pt"), "--order", "2", "--public",
         str(models / "bg.txt"), "-o", str(arpa)])
    assert _report(arpa)["releases"] == dp["releases"] and _report(arpa)["state"] == "dp"
    # without --public the text it was approximated on is un-noised private data
    arpa2 = tmp_path / "approx2.arpa"
    _ok(["approx-ngram", "--nnlm", str(models / "dp.pt"), "--order", "2", str(models / "bg.txt"),
         "-o", str(arpa2)])
    assert _report(arpa2)["state"] == "mixed"


def test_seeded_models_are_refused_and_stay_marked(models, tmp_path):
    seeded = str(models / "seeded.pt")
    for args in (["finetune-lm", "--init", seeded, "--train", str(models / "bg.txt"), "--recipe",
                  "client-001", "-q", "-o", str(tmp_path / "x.pt")],
                 ["approx-ngram", "--nnlm", seeded, "--order", "2", str(models / "bg.txt"), "-o",
                  str(tmp_path / "x.arpa")],
                 ["perplexity", "--lm", seeded, str(models / "bg.txt")]):
        result = run_cli(args)
        assert result.exit_code == 2 and "seeded" in result.stderr, (args, result.stderr)
    out = tmp_path / "x.arpa"
    _ok(["approx-ngram", "--allow-seeded-test-noise", "--nnlm", seeded, "--order", "2", "--public",
         str(models / "bg.txt"), "-o", str(out)])
    assert _report(out)["state"] == "seeded"
    tuned = tmp_path / "t.pt"
    _ok(["finetune-lm", "--allow-seeded-test-noise", "--init", seeded, "--train", str(models / "bg.txt"),
         "--public", "--recipe", "client-001", "-q", "-o", str(tuned)])
    assert _report(tuned)["state"] == "seeded"


def test_seeded_arpa_refused_by_rescore_and_interpolate(work):
    seeded = _noisy(work, "s", seed=5)
    arpa = work / "seeded.arpa"
    _ok(["fma-adapt", "--allow-seeded-test-noise", "--arpa", str(work / "bg.arpa"), "--adapt", str(seeded),
         "-o", str(arpa)])
    nbest = work / "nb.scored.tsv"
    nbest.write_text("utt_id\trank\ttext\tam_score\nu1\t1\ta b\t-1\nu1\t2\ta c\t-2\n")
    for args in (["rescore-nbest", "--ngram", str(arpa), str(nbest)],
                 ["interpolate", "--lm", str(arpa), "--lm", str(work / "bg.arpa"), "--weights", "0.5,0.5"]):
        result = run_cli(args)
        assert result.exit_code == 2 and "seeded" in result.stderr, result.stderr
        _ok(args[:1] + ["--allow-seeded-test-noise"] + args[1:])


def test_interpolated_arpa_keeps_history(work):
    noisy = _noisy(work, "n")
    adapted = work / "dp.arpa"
    _ok(["fma-adapt", "--arpa", str(work / "bg.arpa"), "--adapt", str(noisy), "-o", str(adapted)])
    mixed = work / "mix.arpa"
    _ok(["interpolate", "--lm", str(adapted), "--lm", str(work / "bg.arpa"), "--weights", "0.5,0.5",
         "-o", str(mixed)])
    assert _report(mixed)["releases"] == _report(adapted)["releases"]
    assert _report(mixed)["state"] == "dp"
    import kenlm

    assert kenlm.Model(str(mixed)).order == 2  # the header does not stop kenlm


def test_cluster_weights_report_records_state(models, tmp_path):
    labels = tmp_path / "labels.tsv"
    labels.write_text("item\tspeaker\nc1\ta\nc2\tb\n")
    _ok(["cluster-weights", "--labels", str(labels), "--out", str(tmp_path / "audit"), "-q",
         str(models / "deltas/c1.delta.pt"), str(models / "deltas/c2.delta.pt")])
    result = _ok(["privacy-report", str(tmp_path / "audit/report.json")])
    assert "not private" in result.stdout.lower()


# ------------------------------------------------------------ the ledger cannot be edited into a lie

def _edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_edited_epsilon_contradicted_by_noise_scale(work):
    noisy = _noisy(work, "n", eps="1")
    _edit(noisy, '"epsilon":1.0', '"epsilon":0.001')
    _edit(noisy, "#epsilon=1\n", "#epsilon=0.001\n")
    result = run_cli(["privacy-report", str(noisy)])
    assert result.exit_code == 2 and "noise_scale" in result.stderr
    result = run_cli(["aggregate", str(noisy), str(noisy)])
    assert result.exit_code == 2


def test_duplicate_keys_in_history_refused(work):
    noisy = _noisy(work, "n")
    _edit(noisy, '"epsilon":1.0', '"epsilon":1.0,"epsilon":1.0')
    result = run_cli(["privacy-report", str(noisy)])
    assert result.exit_code == 2 and "duplicate" in result.stderr


def test_noise_none_on_a_noisy_file_refused(work):
    noisy = _noisy(work, "n")
    _edit(noisy, "#noise=laplace\n", "#noise=none\n")
    result = run_cli(["aggregate", str(noisy), str(work / "raw.counts")])
    assert result.exit_code == 2 and "noise=none" in result.stderr


@pytest.mark.parametrize("other", ["Alice", "./alice", "alice/", "ALICE/."])
def test_partition_labels_normalized_before_disjointness(work, other):
    a = _noisy(work, "a", partition="alice")
    b = _noisy(work, "b", partition=other)
    result = run_cli(["aggregate", "--disjoint", str(a), str(b)])
    assert result.exit_code == 2 and "overlap" in result.stderr, result.stderr
    c = _noisy(work, "c", partition="bob")
    _ok(["aggregate", "--disjoint", str(a), str(c)])


# ------------------------------------------------------------ the state algebra

def _release(eps, seeded=False):
    return Release(new_release_id(), "laplace", "utterance",
                   {"epsilon": eps, "sensitivity_l1": 1.0, "grid": 1.0}, "", seeded)


def test_algebra_hand_worked():
    raw = raw_state("counts", "utterance")
    noised = after_release(raw, _release(1.0))
    assert noised.kind == "dp" and noised.history.epsilon_pure() == 1.0
    assert combine([noised, raw]).kind == "mixed"
    assert combine([noised, PUBLIC]).kind == "dp"
    assert combine([PUBLIC, PUBLIC]).kind == "public"
    seeded = after_release(raw, _release(0.5, seeded=True))
    assert combine([seeded, noised]).kind == "seeded"
    client = combine([raw_state("text"), raw_state("client update", "client")])
    dp = after_release(client, _release(2.0), covers=("client update",), keep=raw_state("text").raw)
    assert dp.kind == "mixed" and {p.what for p in dp.raw} == {"text"}
    assert PrivacyState().words().startswith("public")


# ------------------------------------------------------------ chains of steps, random inputs

KINDS = st.sampled_from(["raw", "noisy", "seeded", "absent"])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(global_kind=KINDS.filter(lambda k: k != "absent"), personal_kind=KINDS,
       eps=st.sampled_from(["0.5", "1", "2"]), mix=st.booleans())
def test_chains_claim_dp_iff_every_private_input_was_noised(work, global_kind, personal_kind, eps, mix):
    """count -> (noise) -> fma-adapt (factors, and ARPA) -> (interpolate): the output is DP iff
    no un-noised private input and no seeded noise went in; its epsilon is the sum of the
    distinct releases (sequential composition)."""
    made = {}
    for role, kind in (("global", global_kind), ("personal", personal_kind)):
        if kind == "raw":
            made[role] = (work / "raw.counts", None)
        elif kind in ("noisy", "seeded"):
            made[role] = (_noisy(work, role, eps, seed=7 if kind == "seeded" else None), float(eps))
    kinds = [global_kind] + ([personal_kind] if personal_kind != "absent" else [])
    expect_dp = "raw" not in kinds and "seeded" not in kinds
    expect_eps = math.fsum(e for _, e in made.values() if e is not None)
    flag = ["--allow-seeded-test-noise"]

    factors = work / "f.txt"
    args = ["fma-adapt", *flag, "--background", str(work / "bg.counts"), "--global", str(made["global"][0])]
    if "personal" in made:
        args += ["--personal", str(made["personal"][0])]
    else:
        args += ["--beta", "0"]
    _ok(args + ["-o", str(factors)])
    obj = _report(factors)
    assert obj["is_dp"] == expect_dp, obj
    assert (_require_dp(factors) == 0) == expect_dp
    if expect_dp:
        assert obj["epsilon_pure"] == pytest.approx(expect_eps)

    arpa = work / "a.arpa"
    _ok(["fma-adapt", *flag, "--arpa", str(work / "bg.arpa"), "--adapt", str(made["global"][0]), "-o", str(arpa)])
    final = arpa
    if mix:
        final = work / "m.arpa"
        _ok(["interpolate", *flag, "--lm", str(arpa), "--lm", str(work / "bg.arpa"), "--weights", "0.3,0.7",
             "-o", str(final)])
    obj = _report(final)
    assert obj["is_dp"] == (global_kind == "noisy"), obj
    if global_kind == "raw":
        assert obj["state"] == "private"
    if global_kind != "raw":
        assert obj["epsilon_pure"] == pytest.approx(float(eps))


def test_edited_model_history_contradicted_by_its_round_record(models, tmp_path):
    """A DP model whose history was edited to a larger noise multiplier (a smaller epsilon)
    disagrees with its federated_round record: refused."""
    import torch

    payload = torch.load(models / "dp.pt", weights_only=True)
    payload["privacy_history"] = payload["privacy_history"].replace('"noise_multiplier":1.0',
                                                                    '"noise_multiplier":8.0')
    edited = tmp_path / "edited.pt"
    torch.save(payload, edited)
    result = run_cli(["privacy-report", str(edited)])
    assert result.exit_code == 2 and "contradicts" in result.stderr, result.stderr


def test_privacy_report_of_stdin_reads_the_file_once_with_its_lines(work):
    """``privacy-report -``: stdin is read once (the kind from its first lines, then the same
    lines parsed), so the report equals the file's and an error names the file's own line."""
    raw = (work / "raw.counts").read_text()
    assert json.loads(run_cli(["privacy-report", "--json", "-"], input=raw).stdout) == \
        dict(_report(work / "raw.counts"), file="-")
    lines = (work / "bg.counts").read_text().splitlines(keepends=True)
    lines.insert(2, "#noise=laplace\n")   # line 3: noise without a history
    result = run_cli(["privacy-report", "-"], input="".join(lines))
    assert result.exit_code == 2 and "<stdin>:3: noisy counts without a privacy_history" in result.stderr
    arpa = (work / "bg.arpa").read_text()
    assert json.loads(run_cli(["privacy-report", "--json", "-"], input=arpa).stdout)["kind"] == "arpa"
