"""FMP's rounds (paper 000) on Flower's simulation engine give the files of ``fmp-rounds``.

3 virtual clients (AMI adaptation meetings, 6-8 utterances x 4 hypotheses each), a tiny
Transformer trained here, T = 2 rounds (3 parts). The reference runs every client in one
process (``asrpriv fmp-rounds``, :func:`asrpriv.federated.fmp.run_rounds`: what
``bin/fmp-experiment`` runs): split-nbest, rescoring with the factors of the round before,
the counts, the clients' caches, qbar (with DP the noisy release and the parallel sum) and each
client's factors, from the same library round that the Flower messages call one client at a time.
Checked: every qbar file, every client's factors file and the best hypotheses are identical
(no tolerance), without DP and with seeded DP noise (the privacy history compared without its
random release ids); a client that raises in round 1 is dropped and recorded, and the round's
qbar is the sum over the others.
"""

from __future__ import annotations

import json

import pytest

from conftest import AMI, run_cli
from _flower_helpers import need_flower, ok, tiny_lm

CLIENTS = {"ES2002a": 8, "ES2002b": 7, "ES2002c": 6}
SIGMA, ALPHA, BETA, LAM, EPS, MAX_L1, SEED = "5", "0.5", "0.25", "1", "2", "15", 7



@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """nnlm.pt (tiny), weights.txt, u.counts (public background) and nbest.tsv (3 clients)."""
    d = tmp_path_factory.mktemp("fmp")
    tiny_lm(d, 800, "nnlm.pt")
    ok(run_cli(["count-unigrams", "-q", "--text", "--ids", "--public", str(d / "train_text"),
                "-o", str(d / "u.counts")]))
    (d / "weights.txt").write_text("#lm_weight=0.1\n#nnlm_weight=0.5\n#word_penalty=0\n")
    lines = (AMI / "adapt" / "nbest.tsv").read_text(encoding="utf-8").splitlines()
    rows, utts = [lines[0]], {c: [] for c in CLIENTS}
    for line in lines[1:]:
        f = line.split("\t")
        client, utt, rank = f[1], f[0], int(f[2])
        if client in CLIENTS and rank <= 4:
            if utt not in utts[client]:
                if len(utts[client]) == CLIENTS[client]:
                    continue
                utts[client].append(utt)
            rows.append(line)
    (d / "nbest.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return d


def shell_rounds(work, out, T, eps=None, drop=None):
    """Every client's rounds in one process; ``drop``: (client, round) whose counts are lost.

    Without a drop through the CLI step ``fmp-rounds``, with one through the library call."""
    from asrpriv.federated.fmp import FmpSettings, run_rounds

    if drop is None:
        dp = ["--epsilon", eps, "--noise-seed", str(SEED), "--allow-seeded-test-noise"] if eps else []
        ok(run_cli(["fmp-rounds", "-q", "--nbest", str(work / "nbest.tsv"), "--nnlm", str(work / "nnlm.pt"),
                    "--weights", str(work / "weights.txt"), "--background", str(work / "u.counts"),
                    "--rounds", str(T), "--sigma", SIGMA, "--alpha", ALPHA, "--beta", BETA,
                    "--lambda", LAM, "--max-l1", MAX_L1, *dp, "--run-dir", str(out)]))
    else:
        settings = FmpSettings(sigma=float(SIGMA), alpha=float(ALPHA), beta=float(BETA), lam=float(LAM),
                               epsilon=float(eps) if eps else None, max_l1=float(MAX_L1),
                               noise_seed=SEED if eps else None, allow_seeded=bool(eps))
        run_rounds(str(work / "nbest.tsv"), str(work / "nnlm.pt"), str(work / "weights.txt"),
                   str(work / "u.counts"), str(out), T, settings, drop=[drop])
    return flower_best(out)


def flower_best(run):
    return {line.split(" ", 1)[0]: line.split(" ", 1)[1].rstrip("\n") if " " in line else ""
            for line in (run / "hyp.txt").read_text().splitlines()}


def without_ids(text: str) -> str:
    import re

    return re.sub(r'"id": ?"[^"]*"', '"id": ""', text)


def test_fl_fmp_equals_shell_rounds(work, tmp_path):
    """No DP: qbar, factors and hypotheses byte-identical to the shell steps (CLI command)."""
    need_flower()
    T = 2
    run = tmp_path / "run"
    res = ok(run_cli(["fl-fmp", "-q", "--nbest", str(work / "nbest.tsv"), "--nnlm", str(work / "nnlm.pt"),
                      "--weights", str(work / "weights.txt"), "--background", str(work / "u.counts"),
                      "--rounds", str(T), "--sigma", SIGMA, "--alpha", ALPHA, "--beta", BETA,
                      "--lambda", LAM, "--run-dir", str(run), "--workers", "2"]))
    assert res.stdout.strip() == str(run / "hyp.txt")
    shell = tmp_path / "shell"
    shell.mkdir()
    best = shell_rounds(work, shell, T)
    assert flower_best(run) == best and len(best) == sum(CLIENTS.values())
    for t in range(T):
        assert (run / f"qbar-{t}.counts").read_bytes() == (shell / f"qbar-{t}.counts").read_bytes()
        for c in CLIENTS:
            # the client made round t's factors at the start of round t+1, the shell at the end of t
            assert (run / "clients" / c / f"factors-{t}.tsv").read_bytes() == \
                (shell / f"factors-{t}" / f"{c}.tsv").read_bytes()
    for t in range(T + 1):
        report = json.loads((run / f"round-{t}" / "report.json").read_text())
        assert report["dropped"] == []
    assert not list(run.rglob("*.tmp"))


def test_fl_fmp_dp_and_a_failing_client(work, tmp_path):
    """Seeded DP noise: the same qbar (history up to release ids) and factors as the shell; a
    client raising in round 1 is dropped and recorded, and qbar-1 lacks its new counts."""
    need_flower()
    from asrpriv.federated.fmp import FmpRoundsSettings, FmpSettings as RoundSettings
    from asrpriv_flower.fmp import FmpSettings, simulate_fmp

    T, bad = 2, "ES2002b"
    run = tmp_path / "run"
    rounds = RoundSettings(sigma=float(SIGMA), alpha=float(ALPHA), beta=float(BETA), lam=float(LAM),
                           epsilon=float(EPS), max_l1=float(MAX_L1), noise_seed=SEED, allow_seeded=True)
    settings = FmpSettings(FmpRoundsSettings(nbest=str(work / "nbest.tsv"), nnlm=str(work / "nnlm.pt"),
                                             weights=str(work / "weights.txt"),
                                             background=str(work / "u.counts"), run_dir=str(run),
                                             rounds=T, round=rounds),
                           test_faults={f"{bad}@1": "raise"})
    reports = simulate_fmp(settings, workers=2)
    assert [r["round"] for r in reports] == [0, 1, 2]
    assert [d["client"] for d in reports[1]["dropped"]] == [bad]
    assert "injected test fault" in reports[1]["dropped"][0]["reason"]
    assert bad not in reports[1]["contributed"] and reports[0]["dropped"] == []
    shell = tmp_path / "shell"
    shell.mkdir()
    # the failed client kept no cache for round 1 and rescored nothing in it; in the shell its
    # new counts are left out of round 1 (its rescoring still runs there; the hypotheses of
    # the other clients must agree)
    best = shell_rounds(work, shell, T, eps=EPS, drop=(bad, 1))
    for t in range(T):
        ours = without_ids((run / f"qbar-{t}.counts").read_text())
        theirs = without_ids((shell / f"qbar-{t}.counts").read_text())
        assert ours == theirs, t
        assert "#privacy" in ours
    assert not (run / "clients" / bad / "factors-0.tsv").exists()  # it failed before making them
    for c in set(CLIENTS) - {bad}:
        assert without_ids((run / "clients" / c / "factors-0.tsv").read_text()) == \
            without_ids((shell / "factors-0" / f"{c}.tsv").read_text())
    mine = flower_best(run)
    for utt, text in best.items():
        if not utt.startswith(bad):
            assert mine[utt] == text
