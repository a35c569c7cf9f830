"""score-wer: hand-worked cases, independent checks (jiwer, brute force, scipy) and real sclite."""

from __future__ import annotations

import json
import math
import os
import random
import re
import shutil
import subprocess
import sys

import pytest

from conftest import AMI, LIBRI, assert_one_line_error, run_cli, run_proc

from asrpriv.wer.alignment import SCLITE_WEIGHTS, count_errors, counts_of, sclite_align
from asrpriv.wer.mapsswe import mapsswe, statistic


def _json(result) -> dict:
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def _write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return str(path)


# ------------------------------------------------------------------ hand-worked and independent

def test_hand_worked_counts_and_jiwer(tmp_path):
    import jiwer

    ref = _write(tmp_path / "ref", "u1 a b c d\nu2 the cat sat\nu3 x\n")
    hyp = _write(tmp_path / "hyp", "u1 a x c d e\nu2 the cat sat\nu3 y\n")
    out = _json(run_cli(["score-wer", "--ref", ref, "--hyp", hyp, "--format", "json"]))
    # u1: 1 substitution (b->x), 1 insertion (e); u3: 1 substitution; 8 reference words
    assert (out["substitutions"], out["deletions"], out["insertions"]) == (2, 0, 1)
    assert out["ref_words"] == 8 and out["errors"] == 3 and out["correct"] == 6
    assert out["wer"] == pytest.approx(100 * 3 / 8)
    assert out["sentences"] == 3 and out["sentence_errors"] == 2
    assert out["ser"] == pytest.approx(100 * 2 / 3)
    # jiwer on the same pairs (by id): same error total
    j = jiwer.process_words(["a b c d", "the cat sat", "x"], ["a x c d e", "the cat sat", "y"])
    assert j.substitutions + j.deletions + j.insertions == out["errors"]
    assert out["wer"] == pytest.approx(100 * j.wer)
    assert out["signature"] == "case:sclite|strip:none|align:sclite|version:0.1.0"


def test_one_character_lines_are_not_dropped(tmp_path):
    """jiwer's CLI drops one-character lines and reports 0.0; we score them."""
    ref = _write(tmp_path / "ref", "u1 a\nu2 b\n")
    hyp = _write(tmp_path / "hyp", "u1 c\nu2 b\n")
    out = _json(run_cli(["score-wer", "--ref", ref, "--hyp", hyp, "--format", "json"]))
    assert out["wer"] == pytest.approx(50.0) and out["substitutions"] == 1


def test_sclite_tie_prefers_deletion_plus_insertion():
    # unit weights tie 2 S against D+I; sclite's 3/3/4 weights choose D+I (one word correct)
    assert count_errors(["a", "b"], ["b", "c"]) == (0, 1, 1)
    assert [e for e, _, _ in sclite_align(["a", "b"], ["b", "c"])] == ["D", "C", "I"]


def _weighted(ref, hyp):
    """Independent brute-force DP of sclite's cost (ins 3, del 3, sub 4)."""
    n, m = len(ref), len(hyp)
    d = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        for j in range(m + 1):
            if i == 0 or j == 0:
                d[i][j] = 3 * (i + j)
            else:
                d[i][j] = min(d[i - 1][j] + 3, d[i][j - 1] + 3,
                              d[i - 1][j - 1] + (0 if ref[i - 1] == hyp[j - 1] else 4))
    return d[n][m]


def test_alignments_are_sclite_optimal_random():
    rng = random.Random(7)
    for _ in range(400):
        ref = [rng.choice("abcd") for _ in range(rng.randint(0, 9))]
        hyp = [rng.choice("abcde") for _ in range(rng.randint(0, 9))]
        best = _weighted(ref, hyp)
        path = sclite_align(ref, hyp)
        # the path spells out both strings and has the optimal cost
        assert [ref[r] for _, r, _ in path if r >= 0] == ref
        assert [hyp[h] for _, _, h in path if h >= 0] == hyp
        s, d, i = counts_of(path)
        assert 4 * s + 3 * (d + i) == best
        for ev, r, h in path:
            if ev == "C":
                assert ref[r] == hyp[h]
            if ev == "S":
                assert ref[r] != hyp[h]
        s2, d2, i2 = count_errors(ref, hyp)
        assert 4 * s2 + 3 * (d2 + i2) == best
        assert d2 - i2 == len(ref) - len(hyp)


# ------------------------------------------------------------------ MAPSSWE by hand

def _path(ref, hyp):
    return sclite_align(ref.split(), hyp.split())


def test_mapsswe_hand_worked_segments():
    ref = "a b c d e f g"
    pa = _path(ref, "a x c d e f g")    # error at word 2
    pb = _path(ref, "a b c d y f g")    # error at word 5
    r = mapsswe([(pa, pb)])
    # segment 1: words 1-4 (A 1 error, B 0); segment 2: words 3-7 (A 0, B 1)
    assert r.segments == 2 and r.seg_ref_words == 4 + 5
    assert (r.seg_errors_a, r.seg_errors_b) == (1, 1)
    assert r.mean == 0.0 and r.sd == pytest.approx(math.sqrt(2.0)) and r.z == 0.0
    # an utterance without error in either system adds no segment
    r2 = mapsswe([(pa, pb), (_path(ref, ref), _path(ref, ref))])
    assert r2.segments == 2


def test_mapsswe_statistic_matches_scipy():
    scipy_stats = pytest.importorskip("scipy.stats")
    diffs = [1, -1, 0, 2, 1, 1, -2, 3, 0, 1]
    mean, sd, z = statistic(diffs)
    t = scipy_stats.ttest_1samp(diffs, 0.0)
    assert z == pytest.approx(t.statistic)
    assert sd == pytest.approx(scipy_stats.tstd(diffs))
    from asrpriv.wer.mapsswe import two_sided_p

    assert two_sided_p(z) == pytest.approx(2 * scipy_stats.norm.sf(abs(z)))


# ------------------------------------------------------------------ CLI behaviour

def test_trn_auto_detected_and_pipe(tmp_path):
    ref = _write(tmp_path / "ref.trn", "a b c (u1)\nd e (u2)\n")
    hyp_text = "u2 d\nu1 a b c\n"  # other order, Kaldi text: matched by id
    proc = run_proc(["score-wer", "--ref", ref, "--hyp", "-", "--format", "json"],
                    input=hyp_text, check=True)
    out = json.loads(proc.stdout)
    assert out["deletions"] == 1 and out["errors"] == 1 and out["ref_words"] == 5
    text = run_proc(["score-wer", "--ref", ref, "--hyp", "-"], input=hyp_text, check=True)
    assert b"%WER 20.00 [ 1 / 5, 0 ins, 1 del, 0 sub ]" in text.stdout


def test_missing_hypothesis_counts_as_deletions(tmp_path):
    ref = _write(tmp_path / "ref", "u1 a b\nu2 c d e\nu3 f\n")
    hyp = _write(tmp_path / "hyp", "u1 a b\nu3\n")  # u3 empty hypothesis is valid
    proc = run_proc(["score-wer", "--ref", ref, "--hyp", hyp, "--format", "json"], check=True)
    out = json.loads(proc.stdout)
    assert out["missing_hyp"] == ["u2"]
    assert out["deletions"] == 4 and out["ref_words"] == 6
    assert b"u2" in proc.stderr and b"without hypothesis" in proc.stderr
    quiet = run_proc(["score-wer", "-q", "--ref", ref, "--hyp", hyp], check=True)
    assert quiet.stderr == b""


def test_extra_hypothesis_is_an_error_unless_allowed(tmp_path):
    ref = _write(tmp_path / "ref", "u1 a b\n")
    hyp = _write(tmp_path / "hyp", "u1 a b\nzz c\n")
    details = tmp_path / "details.txt"
    proc = run_proc(["score-wer", "--ref", ref, "--hyp", hyp, "--details", str(details)])
    assert_one_line_error(proc, f"{hyp}:2:", "'zz'")
    assert not details.exists()
    ok = run_proc(["score-wer", "--ref", ref, "--hyp", hyp, "--allow-extra", "--format", "json"],
                  check=True)
    out = json.loads(ok.stdout)
    assert out["extra_hyp"] == ["zz"] and out["errors"] == 0
    assert b"warning" in ok.stderr and b"zz" in ok.stderr


@pytest.mark.parametrize("content, where, what", [
    (b"u1 a\nu1 b\n", ":2:", "duplicate"),
    (b"u1 a\n  b c\n", ":2:", "without an utterance id"),
    (b"u1 a\nu2 caf\xe9\n", ":2:", "UTF-8"),
])
def test_bad_hypothesis_input(tmp_path, content, where, what):
    ref = _write(tmp_path / "ref", "u1 a\nu2 b\n")
    hyp = tmp_path / "hyp"
    hyp.write_bytes(content)
    assert_one_line_error(run_proc(["score-wer", "--ref", ref, "--hyp", str(hyp)]),
                          f"{hyp}{where}", what)


def test_unterminated_trn_id(tmp_path):
    ref = tmp_path / "ref.trn"
    ref.write_text("a b (u1)\nc d (u2\n")
    assert_one_line_error(run_proc(["score-wer", "--input-format", "trn", "--ref", str(ref),
                                    "--hyp", str(ref)]), f"{ref}:2:", "trn id")


def test_bad_usage(tmp_path):
    ref = _write(tmp_path / "ref", "u1 a\n")
    assert_one_line_error(run_proc(["score-wer", "--ref", "-", "--hyp", "-"], input="u1 a\n"),
                          "standard input")
    empty = _write(tmp_path / "empty", "")
    assert_one_line_error(run_proc(["score-wer", "--ref", empty, "--hyp", ref]), "empty input")
    spk = _write(tmp_path / "spk", "u9 s\n")
    assert_one_line_error(run_proc(["score-wer", "--ref", ref, "--hyp", ref, "--utt2spk", spk]),
                          spk, "'u1'")


def test_normalization_is_explicit_and_signed(tmp_path):
    ref = _write(tmp_path / "ref", "u1 Hello, world!\n")
    hyp = _write(tmp_path / "hyp", "u1 hello world\n")
    lc = _json(run_cli(["score-wer", "--ref", ref, "--hyp", hyp, "--format", "json"]))
    assert lc["errors"] == 2
    both = _json(run_cli(["score-wer", "--ref", ref, "--hyp", hyp, "--format", "json",
                          "--strip-punct"]))
    assert both["errors"] == 0 and "strip:punct" in both["signature"]
    cs = _json(run_cli(["score-wer", "--ref", ref, "--hyp", hyp, "--format", "json",
                        "--strip-punct", "--no-lowercase"]))
    assert cs["errors"] == 1 and cs["signature"].startswith("case:mixed|strip:punct|")


def test_utt2spk_and_details(tmp_path):
    ref = _write(tmp_path / "ref", "u1 a b c\nu2 d e\nu3 f\n")
    hyp = _write(tmp_path / "hyp", "u1 a c\nu2 d e g\nu3 f\n")
    spk = _write(tmp_path / "spk", "u1 A\nu2 B\nu3 A\n")
    details = tmp_path / "ali.txt"
    out = _json(run_cli(["score-wer", "--ref", ref, "--hyp", hyp, "--format", "json",
                         "--utt2spk", spk, "--details", str(details)]))
    assert out["speakers"]["A"]["deletions"] == 1 and out["speakers"]["A"]["ref_words"] == 4
    assert out["speakers"]["B"]["insertions"] == 1 and out["speakers"]["B"]["sentences"] == 1
    text = details.read_text()
    assert "id: (u1)\nScores: (#C #S #D #I) 2 0 1 0\nREF:  a b c\nHYP:  a * c\nEval:   D\n" in text
    assert "REF:  d e *\nHYP:  d e g\nEval:     I\n" in text
    table = run_cli(["score-wer", "--ref", ref, "--hyp", hyp, "--utt2spk", spk]).stdout
    assert re.search(r"\| A +\| +2 +4 \|", table)


def test_command_module_is_light():
    code = ("import sys, asrpriv.commands.score_wer; "
            "bad = [m for m in ('torch', 'numpy', 'scipy', 'rapidfuzz', 'jiwer') if m in sys.modules];"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------ peer: real sclite / sc_stats

def _sctk_bin(tool: str) -> str | None:
    for cand in (f"/usr/lib/sctk/bin/{tool}", shutil.which(tool)):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


needs_sctk = pytest.mark.skipif(_sctk_bin("sclite") is None or _sctk_bin("sc_stats") is None,
                                reason="sctk (sclite, sc_stats) not installed; "
                                       "bin/install-system-deps installs it")


def _kaldi_table(path) -> dict[str, list[str]]:
    out = {}
    for line in open(path, encoding="utf-8"):
        parts = line.split()
        if parts:
            out[parts[0]] = parts[1:]
    return out


def _rank1(nbest_tsv) -> dict[str, list[str]]:
    out = {}
    with open(nbest_tsv, encoding="utf-8") as f:
        cols = f.readline().rstrip("\n").split("\t")
        iu, ir, it = cols.index("utt_id"), cols.index("rank"), cols.index("text")
        for line in f:
            row = line.rstrip("\n").split("\t")
            if row[ir] == "1":
                out[row[iu]] = row[it].split()
    return out


def _write_trn(path, table) -> str:
    with open(path, "w", encoding="utf-8") as f:
        for utt, words in table.items():
            f.write(f"{' '.join(words)} ({utt})\n")
    return str(path)


def _sclite(tmp_path, ref_trn, hyp_trns):
    """Run sclite; return {hyp name: (sum counts, {utt: eval string})}."""
    args = [_sctk_bin("sclite"), "-r", ref_trn, "trn"]
    for h in hyp_trns:
        args += ["-h", h, "trn"]
    args += ["-i", "rm", "-o", "rsum", "sgml", "-O", str(tmp_path), "-f", "0"]
    subprocess.run(args, check=True, capture_output=True)
    result = {}
    for h in hyp_trns:
        name = os.path.basename(h)
        raw = open(tmp_path / f"{name}.raw").read()
        m = re.search(r"\| Sum\S* +\|\s*(\d+)\s+(\d+)\s*\|\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)",
                      raw)
        snt, wrd, corr, sub, dele, ins, err, serr = map(int, m.groups())
        paths, cur = {}, None
        for line in open(tmp_path / f"{name}.sgml", encoding="utf-8"):
            pm = re.match(r'<PATH id="\((.*?)\)"', line)
            if pm:
                cur = pm.group(1)
            elif cur is not None:
                paths[cur] = "" if line.startswith("</PATH") else "".join(
                    tok[0] for tok in line.strip().split(":"))
                cur = None
        result[name] = (dict(sentences=snt, ref_words=wrd, correct=corr, substitutions=sub,
                             deletions=dele, insertions=ins, errors=err, sentence_errors=serr),
                        paths)
    return result


def _sc_stats(tmp_path, a_trn, b_trn):
    sgml = b"".join(open(tmp_path / f"{os.path.basename(p)}.sgml", "rb").read()
                    for p in (a_trn, b_trn))
    proc = subprocess.run([_sctk_bin("sc_stats"), "-p", "-t", "mapsswe", "-v", "-n", "-"],
                          input=sgml, capture_output=True, check=True, cwd=tmp_path)
    m = re.search(r"\(# segs: (\d+)\).*\(mean: (\S+)\) \(std dev: (\S+)\) \(Z Stat: (\S+)\)",
                  proc.stdout.decode())
    return int(m.group(1)), m.group(2), m.group(3), m.group(4)


SETS = {
    "ami": (AMI / "dev" / "ref.txt", lambda: _kaldi_table(AMI / "dev" / "decoder_1best.txt"),
            lambda: _rank1(AMI / "dev" / "nbest.tsv")),
    "libri": (LIBRI / "test-clean.ref.txt", lambda: _rank1(LIBRI / "test-clean.nbest.tsv"),
              lambda: _kaldi_table(LIBRI / "test-clean.rnnt_baseline.txt")),
}


@needs_sctk
@pytest.mark.parametrize("name", sorted(SETS))
def test_agrees_with_sclite_and_sc_stats(tmp_path, name):
    ref_path, sys_a, sys_b = SETS[name]
    ref = _kaldi_table(ref_path)
    a, b = sys_a(), sys_b()
    ref_trn = _write_trn(tmp_path / "ref.trn", ref)
    a_trn = _write_trn(tmp_path / "a.trn", a)
    b_trn = _write_trn(tmp_path / "b.trn", b)
    peer = _sclite(tmp_path, ref_trn, [a_trn, b_trn])
    keys = ("sentences", "ref_words", "correct", "substitutions", "deletions", "insertions",
            "errors", "sentence_errors")
    for hyp_trn in (a_trn, b_trn):
        counts, _ = peer[os.path.basename(hyp_trn)]
        # fast path (RapidFuzz), reference in Kaldi text, hypothesis in trn
        out = _json(run_cli(["score-wer", "--ref", str(ref_path), "--hyp", hyp_trn,
                             "--format", "json"]))
        assert {k: out[k] for k in keys} == counts
    # --details uses sclite's dynamic programme: word-for-word equal paths
    details = tmp_path / "a.details"
    out = _json(run_cli(["score-wer", "--ref", ref_trn, "--hyp", a_trn, "--compare", b_trn,
                         "--format", "json", "--details", str(details)]))
    counts_a, paths_a = peer["a.trn"]
    assert {k: out[k] for k in keys} == counts_a
    scores = {}
    for block in details.read_text().split("\n\n"):
        if block.strip():
            lines = block.split("\n")
            utt = lines[0][5:-1]
            scores[utt] = tuple(int(x) for x in lines[1].split()[-4:])
    assert len(scores) == len(ref)
    for utt, (c, s, d, i) in scores.items():
        peer_eval = paths_a[utt.lower()]
        assert (c, s, d, i) == tuple(peer_eval.count(k) for k in "CSDI"), utt
    for utt, words in ref.items():
        ev = "".join(e for e, _, _ in sclite_align(words, a.get(utt, [])))
        assert ev == paths_a[utt.lower()], utt
    segs, mean, sd, z = _sc_stats(tmp_path, a_trn, b_trn)
    c = out["compare"]
    assert c["segments"] == segs
    assert f"{c['mean']:5.3f}" == mean and f"{c['sd']:5.3f}" == sd and f"{c['z']:5.3f}" == z
    assert c["wer_a"] == pytest.approx(100 * counts_a["errors"] / counts_a["ref_words"])
    assert c["wer_b"] == pytest.approx(100 * peer["b.trn"][0]["errors"] / counts_a["ref_words"])
    assert c["significant"] == (abs(c["z"]) > 1.959964)


def test_forced_counts_agree_with_brute_force():
    """count_errors' shortcuts (counts fixed by the unit distance and the lengths, or by the LCS
    bound) never change the counts: compared with sclite_align's path counts and an independent
    DP of sclite's cost, on pairs with many substitutions."""
    from rapidfuzz.distance import Levenshtein

    from asrpriv.wer.alignment import _forced_counts

    rng = random.Random(11)
    hit = 0
    for _ in range(600):
        ref = [rng.choice("abcdefgh") for _ in range(rng.randint(2, 14))]
        hyp = [w if rng.random() < 0.6 else rng.choice("abcdefghij") for w in ref]
        if rng.random() < 0.5:
            del hyp[rng.randrange(len(hyp))]
        s, d, i = count_errors(ref, hyp)
        assert 4 * s + 3 * (d + i) == _weighted(ref, hyp)
        forced = _forced_counts(ref, hyp, len(ref), len(hyp), Levenshtein.distance(ref, hyp))
        if forced is not None:
            assert forced == (s, d, i) == counts_of(sclite_align(ref, hyp))
            hit += forced[0] >= 2     # the bound's branch (two or more substitutions)
    assert hit > 50   # the shortcut is exercised


def test_pairing_by_order_equals_pairing_by_id():
    """score() pairs word lists by position when both files list the same ids in the same order;
    the same hypotheses in another order (paired by id lookups) give the same report."""
    from asrpriv.wer.report import score, same_ids_in_order
    from asrpriv.wer.transcripts import Normalizer, Transcript

    rng = random.Random(5)
    ref = {f"u{k}": [rng.choice("abcdef") for _ in range(rng.randint(0, 9))] for k in range(200)}
    hyp = {u: [w if rng.random() < 0.7 else rng.choice("abcdefg") for w in r] for u, r in ref.items()}
    shuffled = list(hyp.items())
    rng.shuffle(shuffled)
    ref_t = Transcript(None, "kaldi", ref, {})
    in_order = Transcript(None, "kaldi", hyp, {})
    other_order = Transcript(None, "kaldi", dict(shuffled), {})
    assert same_ids_in_order(ref_t, in_order) and not same_ids_in_order(ref_t, other_order)
    a = score(ref_t, in_order, Normalizer()).totals
    b = score(ref_t, other_order, Normalizer()).totals
    assert a == b and a.errors > 0
    brute = [0, 0, 0]
    for u, r in ref.items():
        for k, v in enumerate(counts_of(sclite_align(r, hyp[u]))):
            brute[k] += v
    assert (a.substitutions, a.deletions, a.insertions) == tuple(brute)
