"""One of each (issue 39): one clip-bound check, errors that name the caller's argument (the
CLI maps them to flags in one place), API adapters that go through the step entries, and
importers that return rows instead of printing."""

from __future__ import annotations

import math

import pytest

from asrpriv import api
from asrpriv.errors import AsrprivError, arg, cli_flag, spelled
from conftest import AMI, ROOT, run_cli

SRILM = ROOT / "examples" / "importers" / "srilm" / "nbest2"


@pytest.mark.parametrize("bad", [0, -1.0, math.inf, math.nan, True, "1"])
def test_one_clip_check_everywhere(bad):
    """Every place that takes a clip bound C refuses a bad one with the same words."""
    from asrpriv.federated.clip import check_clip
    from asrpriv.federated.privatize import DpSettings

    wanted = f"clip must be a finite number > 0, got {bad!r}"
    with pytest.raises(AsrprivError) as err:
        check_clip(bad)
    assert str(err.value) == wanted
    with pytest.raises(AsrprivError) as err:
        DpSettings(1.0, bad, 10.0, None, None, 0.1).check()
    assert str(err.value) == wanted
    assert check_clip(0.5) == 0.5 and check_clip(2) == 2.0


def test_clip_check_speaks_the_cli_flag(tmp_path):
    res = run_cli(["aggregate", "--server", "fedavg", "--model", "m.pt", "--noise-multiplier",
                   "1", "--clip", "0", "--expected-clients", "2", "--sample-rate", "0.5",
                   "-o", str(tmp_path / "out.pt"), "d1"])
    assert res.exit_code == 2
    assert "--clip must be a finite number > 0, got 0.0" in res.stderr


def test_arg_spells_names_for_python_and_flags_under_the_cli():
    assert arg("max_l1") == "max_l1"
    with spelled(cli_flag):
        assert arg("max_l1") == "--max-l1"
    assert arg("max_l1") == "max_l1"  # the spelling ends with its block
    # the CLI's own mapping: an option whose name differs from its flag (--from for source)
    res = run_cli(["import-nbest", "--from", "tsv", "--words", "w.txt", str(SRILM)])
    assert res.exit_code == 2 and res.stderr.strip().endswith("--words does not apply to --from tsv")
    with pytest.raises(api.AsrprivError, match="^words does not apply to source tsv$"):
        api.import_nbest("tsv", str(SRILM), words="w.txt")


def test_library_errors_never_name_a_flag_for_python_callers(tmp_path):
    """Python callers read the names of the arguments they passed (no '--' anywhere)."""
    nbest = str(AMI / "dev" / "nbest.tsv")
    cases = [
        (lambda: api.count_unigrams(api.CountSettings(input=nbest, sigma=-1.0)), "sigma"),
        (lambda: api.select_nbest(api.SelectNbestSettings(input=nbest, top=0)), "top"),
        (lambda: api.rescore_nbest(api.RescoreSettings(inputs=[nbest], nnlm_weight=2.0)),
         "nnlm_weight"),
        (lambda: api.aggregate(api.AggregateSettings(inputs=[nbest], server="fedavg")), "server"),
        (lambda: api.fma_adapt(api.FmaAdaptSettings(adapt=nbest)), "adapt"),
    ]
    for call, name in cases:
        with pytest.raises(AsrprivError) as err:
            call()
        assert name in str(err.value) and "--" not in str(err.value), str(err.value)


def test_import_nbest_returns_rows_and_prints_nothing(tmp_path, capsys):
    result = api.import_nbest("srilm", str(SRILM))
    out = capsys.readouterr()
    assert out.out == ""
    assert isinstance(result.rows, list) and len(result.rows) == 100 and result.utterances == 5
    first = result.rows[0]
    assert first.utt_id == "ES2011a_0001" and first.rank == 1
    assert "<s>" not in first.text.split() and "score" in first.scores  # srilm's drop default
    # the same rows as the CLI's TSV, read independently
    cli = run_cli(["import-nbest", "-q", "--from", "srilm", str(SRILM)]).stdout.splitlines()
    header = cli[0].split("\t")
    assert header == ["utt_id", "rank", "am_score", "lm_score", "score", "text"]
    for row, line in zip(result.rows, cli[1:]):
        values = dict(zip(header, line.split("\t")))
        assert (row.utt_id, row.rank, row.text) == (values["utt_id"], int(values["rank"]),
                                                     values["text"])
        for column in ("am_score", "lm_score", "score"):
            assert row.scores[column] == pytest.approx(float(values[column]), abs=1e-6)
    written = api.import_nbest("srilm", str(SRILM), output=str(tmp_path / "x.tsv"))
    assert capsys.readouterr().out == "" and written.rows == []
    assert (tmp_path / "x.tsv").read_text(encoding="utf-8").splitlines() == cli


def test_read_nbest_raises_the_library_error_type(tmp_path):
    with pytest.raises(api.InputError, match="No such file or directory"):
        api.read_nbest(str(tmp_path / "missing.tsv"))
    with pytest.raises(api.InputError, match="Is a directory"):
        api.read_nbest(str(tmp_path))


def test_add_laplace_noise_goes_through_the_step_entry():
    """The adapter runs add-noise's entry: seeded input is refused as the CLI refuses it."""
    counts = api.count_text(["a b", "b c"], max_l1=2)
    first = api.add_laplace_noise(counts, ["a", "b", "c", "d"], epsilon=1.0, seed=3)
    assert sorted(first.counts.counts) == ["a", "b", "c", "d"] and first.scale == 2.0
    assert first.counts.meta.get("seeded") == "1"
    with pytest.raises(AsrprivError, match="seeded"):
        api.add_laplace_noise(first.counts, ["a", "b"], epsilon=1.0)
    again = api.add_laplace_noise(first.counts, ["a", "b"], epsilon=1.0, seed=4, allow_seeded=True)
    assert sorted(again.counts.counts) == ["a", "b"]


def test_score_hypotheses_uses_rescore_nbests_weight_rule(tmp_path):
    """Weights given > the weights file > the default; the file's range check is the step's."""
    from asrpriv.rescore.combine import DEFAULT_NNLM_WEIGHT, DEFAULT_WORD_PENALTY
    from asrpriv.rescore.pipeline import RescoreSettings, resolve_weights

    weights = tmp_path / "w.txt"
    weights.write_text("#lm_weight=3\n#nnlm_weight=0.2\n#word_penalty=1.5\n")
    w = resolve_weights(RescoreSettings(weights=str(weights), lm_weight=7.0))
    assert (w.lm_weight, w.nnlm_weight, w.word_penalty) == (7.0, 0.2, 1.5)
    w = resolve_weights(RescoreSettings(lm_weight=7.0))
    assert (w.nnlm_weight, w.word_penalty) == (DEFAULT_NNLM_WEIGHT, DEFAULT_WORD_PENALTY)
    arpa = tmp_path / "lm.arpa"
    assert run_cli(["train-ngram", "-q", "--order", "2", str(AMI / "train_text"), "--ids",
                    "-o", str(arpa)]).exit_code == 0
    scored = api.score_hypotheses(["okay so", "okay sew"], acoustic=[-1.0, -1.0], ngram=str(arpa),
                                  weights=str(weights), lm_weight=7.0)
    assert [s.weights for s in scored] == [{"lm_weight": 7.0, "nnlm_weight": 0.2,
                                            "word_penalty": 1.5}] * 2
    # with the n-gram only, its score is the whole LM part: -1 + 7 * ngram + 1.5 * 2
    assert scored[0].score == pytest.approx(-1.0 + 7.0 * scored[0].ngram_score + 3.0)
    with pytest.raises(AsrprivError, match="^nnlm_weight must lie in \\[0, 1\\], got 2.0$"):
        api.score_hypotheses(["okay"], ngram=str(arpa), nnlm_weight=2.0)


def test_one_seed_rule():
    """Round t of draw d from base S: S * 100000 + d * 1000 + t, for FMP and Flower alike."""
    from asrpriv.federated.fmp import FmpSettings
    from asrpriv.federated.seeds import derive_seed

    assert derive_seed(None, 3) is None
    assert derive_seed(7, 0) == 700000 and derive_seed(7, 12) == 700012
    assert derive_seed(7, 12, draw=2) == 702012
    seeds = {derive_seed(s, t, d) for s in (1, 2) for d in range(3) for t in (0, 1, 999)}
    assert len(seeds) == 18  # no two rounds or draws share a seed
    # one draw may run paper 001's 1,000 rounds and more; with several draws t stays < 1000
    assert derive_seed(1, 1000) == 101000
    with pytest.raises(AsrprivError):
        derive_seed(1, 1000, draw=1)
    with pytest.raises(AsrprivError):
        derive_seed(1, 100000)
    assert FmpSettings(noise_seed=5).round_seed(3) == 500003
    assert FmpSettings(noise_seed=5, noise_draw=2).round_seed(3) == 502003
    assert FmpSettings().round_seed(3) is None
    flower = pytest.importorskip("asrpriv_flower.settings")
    settings = flower.FlSettings(init="m.pt", train="t.tsv", run_dir="r", rounds=2,
                                 sample_rate=0.5, seed=3)
    assert settings.round_seed(3, 4) == derive_seed(3, 4) == 300004


def test_recipes_derive_seeds_by_the_one_rule(tmp_path):
    """The recipes' seeds come from the rule, never from their own arithmetic: one-shot noise
    through recipe.sh's derive_seed (python -m asrpriv.federated.seeds), rounds through the
    steps' --noise-seed S --noise-draw D (checked against the range before anything runs)."""
    import re
    import subprocess
    import sys

    from asrpriv.federated.seeds import derive_seed

    for args, want in ((["3", "5", "2"], 302005), (["3", "5"], 300005), (["0", "999", "99"], 99999)):
        assert want == derive_seed(*map(int, args))  # the rule, written out: S*100000 + D*1000 + T
        out = subprocess.run([sys.executable, "-m", "asrpriv.federated.seeds", *args],
                             capture_output=True, text=True)
        assert out.returncode == 0 and out.stdout == f"{want}\n", out.stderr
        env = {"PYTHON": sys.executable, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "src")}
        sh = subprocess.run(["bash", "-c", f'. "{ROOT}/bin/lib/recipe.sh"; derive_seed "$@"', "_", *args],
                            capture_output=True, text=True, env=env)
        assert sh.returncode == 0 and sh.stdout == f"{want}\n", sh.stderr
    for bad in (["3", "1000", "1"], ["3", "x"], ["3"], ["3", "1", "100"], ["-3", "1"]):
        out = subprocess.run([sys.executable, "-m", "asrpriv.federated.seeds", *bad],
                             capture_output=True, text=True)
        assert out.returncode == 2 and out.stdout == "" and len(out.stderr.splitlines()) == 1, bad
    # no recipe writes seed arithmetic of its own
    for script in sorted((ROOT / "bin").iterdir()):
        if script.is_file():
            for n, line in enumerate(script.read_text(encoding="utf-8").splitlines(), 1):
                assert not re.search(r"\$\(\([^)]*SEED", line), f"{script.name}:{n}: {line}"
    # the round steps take the draw: refused without a seed, and out of the rule's range first
    fmp = ["fmp-rounds", "--nbest", "n.tsv", "--nnlm", "m.pt", "--weights", "w.txt", "--background",
           "u.counts", "--run-dir", str(tmp_path / "run"), "--epsilon", "1"]
    res = run_cli([*fmp, "--rounds", "2", "--noise-draw", "1"])
    assert res.exit_code == 2 and "--noise-draw applies to --noise-seed" in res.stderr
    res = run_cli([*fmp, "--rounds", "1000", "--noise-seed", "3", "--noise-draw", "1",
                   "--allow-seeded-test-noise"])
    assert res.exit_code == 2 and "got round 1000, draw 1" in res.stderr, res.stderr
    fl = ["fl-rounds", "--init", "m.pt", "--train", "t.tsv", "--run-dir", str(tmp_path / "fl"),
          "--sample-rate", "0.5", "--clip", "1", "--noise-multiplier", "1", "--expected-clients", "1"]
    res = run_cli([*fl, "--rounds", "2", "--noise-draw", "1"])
    assert res.exit_code == 2 and "--noise-draw applies to --noise-seed" in res.stderr
    res = run_cli([*fl, "--rounds", "1000", "--noise-seed", "3", "--noise-draw", "1",
                   "--allow-seeded-test-noise"])
    assert res.exit_code == 2 and "got round 1000, draw 1" in res.stderr, res.stderr
    assert not (tmp_path / "run").exists() and not (tmp_path / "fl").exists()
