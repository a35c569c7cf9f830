"""One library under every face: for each step, its library entry (through ``asrpriv.api``) and
the CLI give the same output on the same (tiny) input; the library imports no click."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from asrpriv import api
from asrpriv.cli import COMMANDS
from conftest import AMI, ROOT, run_cli

#: steps whose API/CLI equality is not checked here yet, and why (each is someone's open work)
PENDING = {
    # recipe helper steps added this session (issue 26 recipes part): their library halves are
    # asrpriv.io.select, asrpriv.audit.subsets and asrpriv.federated.fmp.run_rounds, but the
    # commands still hold their option checks; each gets one entry next
    "select-nbest": "library half asrpriv.io.select; checks still in the command",
    "select-text": "library half asrpriv.io.select; checks still in the command",
    "pick-best": "library half asrpriv.io.select.pick_lowest; parsing still in the command",
    "audit-items": "library half asrpriv.audit.subsets (make_items, write_items)",
    "fmp-rounds": "asrpriv.federated.fmp.run_rounds (NNLM rescoring: slow for this test)",
    "fl-fmp": "Flower app, being rebuilt on library calls (issue 26 recipes part)",
    "fl-simulate": "Flower app (needs Ray); same as fl-fmp",
}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Tiny inputs shared by the cases: an N-best slice, text, a bigram ARPA, counts."""
    d = tmp_path_factory.mktemp("tiny")
    rows = (AMI / "dev" / "nbest.tsv").read_text(encoding="utf-8").splitlines()[:80]
    (d / "nbest.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    utts = list(dict.fromkeys(r.split("\t")[0] for r in rows[1:]))
    refs = {line.split(" ", 1)[0]: line for line in
            (AMI / "dev" / "ref.txt").read_text(encoding="utf-8").splitlines()}
    (d / "ref.txt").write_text("".join(refs[u] + "\n" for u in utts), encoding="utf-8")
    text = (AMI / "train_text").read_text(encoding="utf-8").splitlines()[:300]
    (d / "text").write_text("".join(t.split(" ", 1)[1] + "\n" for t in text if " " in t),
                            encoding="utf-8")
    (d / "ktext").write_text("\n".join(text) + "\n", encoding="utf-8")
    for order in (2, 3):
        assert run_cli(["train-ngram", "-q", "--order", str(order), str(d / "text"),
                        "-o", str(d / f"lm{order}.arpa")]).exit_code == 0
    assert run_cli(["count-unigrams", "-q", "--max-l1", "15", str(d / "nbest.tsv"),
                    "-o", str(d / "nb.counts")]).exit_code == 0
    assert run_cli(["count-unigrams", "-q", "--text", "--public", str(d / "text"),
                    "-o", str(d / "bg.counts")]).exit_code == 0
    return d


def _cli(*args: str) -> None:
    result = run_cli(["-q" if a == "{q}" else a for a in args])
    assert result.exit_code == 0, result.stderr


def _same(a: Path, b: Path) -> None:
    assert a.read_bytes() == b.read_bytes(), f"{a} != {b}"


def case_count_unigrams(d, a, c):
    api.count_unigrams(api.CountSettings(input=str(d / "nbest.tsv"), sigma=2, max_l1=15,
                                         output=str(a)))
    _cli("count-unigrams", "--sigma", "2", "--max-l1", "15", str(d / "nbest.tsv"), "-o", str(c))
    _same(a, c)
    with pytest.raises(api.AsrprivError, match="2\\^52"):  # the check lives in the library
        api.count_unigrams(api.CountSettings(input=str(d / "nbest.tsv"), max_l1=2.0 ** 60,
                                             grid=1.0, output=None))


def case_aggregate(d, a, c):
    api.count_unigrams(api.CountSettings(input=str(d / "nbest.tsv"), sigma=1, max_l1=15,
                                         output=str(d / "nb1.counts")))
    api.write_counts(str(a), api.aggregate_counts([str(d / "nb.counts"), str(d / "nb1.counts")]))
    _cli("aggregate", "-q", str(d / "nb.counts"), str(d / "nb1.counts"), "-o", str(c))
    _same(a, c)


def case_add_noise(d, a, c):
    (d / "vocab").write_text("".join(w + "\n" for w in sorted(api.read_counts(str(d / "bg.counts")).counts)))
    api.add_noise_counts(api.LaplaceSettings(input=str(d / "nb.counts"), epsilon="2",
                                             vocab=str(d / "vocab"), seed=5, output=str(a)))
    _cli("add-noise", "-q", "--epsilon", "2", "--vocab", str(d / "vocab"), "--seed", "5",
         str(d / "nb.counts"), "-o", str(c))
    ours, theirs = api.read_counts(str(a)), api.read_counts(str(c))
    assert ours.counts == theirs.counts  # same seed, same exact sampler
    for meta in (ours.meta, theirs.meta):  # each release has its own random id
        releases = json.loads(meta.pop("privacy_history"))["releases"]
        assert [r["mechanism"] for r in releases] == ["laplace"]
    assert ours.meta == theirs.meta


def case_fma_adapt(d, a, c):
    api.fma_factors_files(str(d / "bg.counts"), str(d / "nb.counts"), alpha=0.5, beta=0.0,
                          output=str(a))
    _cli("fma-adapt", "--background", str(d / "bg.counts"), "--global", str(d / "nb.counts"),
         "--alpha", "0.5", "--beta", "0", "-o", str(c))
    _same(a, c)
    api.fma_adapt_arpa(str(d / "lm2.arpa"), str(d / "nb.counts"), str(a) + ".arpa", beta=0.5)
    _cli("fma-adapt", "-q", "--arpa", str(d / "lm2.arpa"), "--adapt", str(d / "nb.counts"),
         "--beta", "0.5", "-o", str(c) + ".arpa")
    _same(Path(str(a) + ".arpa"), Path(str(c) + ".arpa"))


def case_rescore_nbest(d, a, c):
    api.rescore_nbest(api.RescoreSettings(inputs=[str(d / "nbest.tsv")], ngram=[str(d / "lm2.arpa")],
                                          lm_weight=8.0, output=str(a)))
    _cli("rescore-nbest", "-q", "--ngram", str(d / "lm2.arpa"), "--lm-weight", "8",
         str(d / "nbest.tsv"), "-o", str(c))
    _same(a, c)


def case_tune_weights(d, a, c):
    grids = {"lm_weights": "0:10:5", "nnlm_weights": "0", "word_penalties": "-1,0"}
    api.tune_weights(str(d / "nbest.tsv"), str(d / "ref.txt"), **grids, output=str(a))
    _cli("tune-weights", "-q", "--ref", str(d / "ref.txt"), "--lm-weights", "0:10:5",
         "--nnlm-weights", "0", "--word-penalties", "-1,0", str(d / "nbest.tsv"), "-o", str(c))
    _same(a, c)


def case_split_nbest(d, a, c):
    api.split_nbest(str(d / "nbest.tsv"), 2, str(a), max_per_client=3)
    _cli("split-nbest", "-q", "--parts", "2", "--max-per-client", "3", str(d / "nbest.tsv"),
         "-o", str(c))
    for k in range(2):
        _same(a / f"part-{k}.tsv", c / f"part-{k}.tsv")


def case_sample_clients(d, a, c):
    (d / "clients").write_text("".join(f"c{i:02d}\n" for i in range(40)))
    _, chosen = api.sample_clients(str(d / "clients"), 0.5, 3, seed=7, output=str(a))
    _cli("sample-clients", "-q", "--rate", "0.5", "--round", "3", "--seed", "7",
         str(d / "clients"), "-o", str(c))
    _same(a, c)
    assert a.read_text().split() == chosen


def case_train_ngram(d, a, c):
    api.train_ngram(api.TrainSettings(text=str(d / "text"), order=3, output=str(a)))
    _cli("train-ngram", "-q", "--order", "3", str(d / "text"), "-o", str(c))
    _same(a, c)


def case_sanitize(d, a, c):
    (d / "lex").write_text("PER\tandy\nPER\tabigail\nLOC\tedinburgh\nLOC\tparis\n")
    api.sanitize(api.SanitizeSettings(text=str(d / "ktext"), lexicon=str(d / "lex"),
                                      classes=("PER", "LOC"), seed=3, output=str(a)))
    _cli("sanitize", "-q", "--lexicon", str(d / "lex"), "--classes", "PER,LOC", "--seed", "3",
         str(d / "ktext"), "-o", str(c))
    _same(a, c)


def case_confidence(d, a, c):
    api.confidence(api.ConfidenceSettings(input=str(d / "nbest.tsv"), scale=0.5,
                                          reference=str(d / "ref.txt"), report=str(a) + ".json",
                                          output=str(a)))
    _cli("confidence", "-q", "--scale", "0.5", "--reference", str(d / "ref.txt"),
         "--report", str(c) + ".json", str(d / "nbest.tsv"), "-o", str(c))
    _same(a, c)
    _same(Path(str(a) + ".json"), Path(str(c) + ".json"))


def case_perplexity(d, a, c):
    lms = (str(d / "lm2.arpa"), str(d / "lm3.arpa"))
    api.perplexity(api.PerplexitySettings(text=str(d / "ktext"), ids=True, lm_paths=lms,
                                          weights="0.3,0.7", as_json=True, output=str(a)))
    _cli("perplexity", "-q", "--ids", "--lm", lms[0], "--lm", lms[1], "--weights", "0.3,0.7",
         "--json", str(d / "ktext"), "-o", str(c))
    _same(a, c)


def case_interpolate(d, a, c):
    lms = (str(d / "lm2.arpa"), str(d / "lm3.arpa"))
    api.interpolate(api.InterpolateSettings(lm_paths=lms, weights="0.3,0.7", output=str(a)))
    _cli("interpolate", "-q", "--lm", lms[0], "--lm", lms[1], "--weights", "0.3,0.7",
         "-o", str(c))
    _same(a, c)
    fit = api.interpolate(api.InterpolateSettings(lm_paths=lms, heldout=str(d / "ktext"), ids=True))
    result = run_cli(["interpolate", "-q", "--lm", lms[0], "--lm", lms[1], "--heldout",
                      str(d / "ktext"), "--ids"])
    cli = json.loads(result.stdout)
    for report in (fit.report, cli):
        report.pop("seconds")  # timings
    assert fit.report == cli


def case_cluster_weights(d, a, c):
    utts = [line.split(" ", 1)[0] for line in (d / "ref.txt").read_text().splitlines()]
    (d / "utt2c").write_text("".join(f"{u} c{i % 6}\n" for i, u in enumerate(utts)))
    assert run_cli(["count-unigrams", "-q", "--utt2client", str(d / "utt2c"), "--by-client",
                    str(d / "clients.d"), str(d / "nbest.tsv")]).exit_code == 0
    items = sorted((d / "clients.d").iterdir())
    (d / "labels.tsv").write_text("item\tgroup\n" + "".join(
        f"{p.name.split('.')[0]}\tg{i % 2}\n" for i, p in enumerate(items)))
    api.cluster_weights(api.AuditRequest(inputs=[str(p) for p in items],
                                         labels_path=str(d / "labels.tsv"), clusters=2, seed=1),
                        str(a))
    _cli("cluster-weights", "-q", "--labels", str(d / "labels.tsv"), "--clusters", "2",
         "--seed", "1", "--out", str(c), *map(str, items))
    for name in ("assignments.tsv", "report.json"):
        _same(a / name, c / name)


def case_score_wer(d, a, c):
    def kaldi(path):
        return dict(line.split(" ", 1) for line in path.read_text().splitlines() if " " in line)

    (d / "hyp.txt").write_text("".join(
        f"{line.split(chr(32), 1)[0]} hello {line.split(chr(32), 1)[1]}\n"
        for line in (d / "ref.txt").read_text().splitlines()))
    ours = api.score_wer(kaldi(d / "ref.txt"), kaldi(d / "hyp.txt"))
    result = run_cli(["score-wer", "--format", "json", "--ref", str(d / "ref.txt"),
                      "--hyp", str(d / "hyp.txt")])
    cli = json.loads(result.stdout)
    assert (ours.substitutions, ours.deletions, ours.insertions, ours.ref_words) == \
        (cli["substitutions"], cli["deletions"], cli["insertions"], cli["ref_words"])


def case_import_nbest(d, a, c):
    src = ROOT / "examples" / "importers" / "srilm" / "nbest2"
    api.import_nbest("srilm", str(src), str(a), drop=frozenset({"<s>", "</s>", "-pau-"}))
    _cli("import-nbest", "-q", "--from", "srilm", str(src), "-o", str(c))
    _same(a, c)


def _tiny_model(d):
    model = d / "tiny.pt"
    if not model.exists():
        _cli("finetune-lm", "-q", "--public", "--arch", "lstm", "--emb-dim", "8", "--hidden-dim",
             "8", "--layers", "1", "--epochs", "1", "--min-count", "1", "--seed", "1",
             "--threads", "1", "--train", str(d / "text"), "-o", str(model))
    return model


def case_finetune_lm(d, a, c):
    base = _tiny_model(d)
    common = dict(train_path=str(d / "text"), init_path=str(base), recipe="client-001",
                  seed=3, threads=1, public=True)
    api.run_finetune(api.FinetuneRequest(output=str(a), **common))
    _cli("finetune-lm", "-q", "--init", str(base), "--train", str(d / "text"), "--recipe",
         "client-001", "--seed", "3", "--threads", "1", "--public", "-o", str(c))
    _same(a, c)


def case_approx_ngram(d, a, c):
    base = _tiny_model(d)
    api.approx_ngram(api.ApproxSettings(text=str(d / "text"), model=str(base), order=2,
                                        threads=1, public=True, output=str(a)))
    _cli("approx-ngram", "-q", "--nnlm", str(base), "--order", "2", "--threads", "1", "--public",
         str(d / "text"), "-o", str(c))
    _same(a, c)


def case_privacy_report(d, a, c):
    ours = api.privacy_epsilon(1.0, 0.01, 100, 1e-5)
    result = run_cli(["privacy-report", "--noise-multiplier", "1", "--sample-rate", "0.01",
                      "--rounds", "100", "--delta", "1e-5", "--json"])
    cli = json.loads(result.stdout)
    assert ours["epsilon_rdp"] == cli["epsilon_rdp"] and ours["epsilon_pld"] == cli["epsilon_pld"]


CASES = {name: globals()["case_" + name.replace("-", "_")] for name in COMMANDS
         if "case_" + name.replace("-", "_") in globals()}


def test_every_step_has_a_case_or_a_reason():
    assert set(CASES) | set(PENDING) == set(COMMANDS)
    assert not set(CASES) & set(PENDING)


@pytest.mark.parametrize("step", sorted(COMMANDS))
def test_api_and_cli_give_the_same_output(step, tiny, tmp_path):
    if step in PENDING:
        pytest.skip(PENDING[step])
    CASES[step](tiny, tmp_path / "api", tmp_path / "cli")


def test_every_entry_is_documented_in_api_md():
    table = (ROOT / "docs" / "API.md").read_text(encoding="utf-8")
    for step, entry in api.STEP_ENTRIES.items():
        assert f"`{step}`" in table and f"`{entry}`" in table, step


def test_import_api_loads_neither_click_nor_torch():
    code = ("import sys, asrpriv.api; "
            "print(sorted(m for m in ('click', 'torch', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_only_the_cli_imports_click():
    package = ROOT / "src" / "asrpriv"
    offenders = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel.startswith("commands/") or rel in ("cli.py", "__main__.py"):
            continue
        clicky = {m for m in _imports(path) if m == "click" or m.startswith("click.")
                  or m in ("asrpriv.cli",) or m.startswith("asrpriv.commands")}
        if clicky:
            offenders.append(f"{rel}: {sorted(clicky)}")
    assert offenders == []
