"""score-wer on SCTK's own test data (tests/data/sctk, see its PROVENANCE.md).

Every expected number is read from sclite's own expected outputs shipped with SCTK
(``base/*.raw``, ``base/*.pra``, ``base/test3c.lur``, asclite's ``CT-*.sgml``), never from
running asrpriv; where Debian's sclite is installed it is also run as a cross-check. Each case
is either scored equal to sclite or refused (exit 2, one line, a reason) -- never exit 0 with
another number.

Cases of ``tsclite.sh`` (sclite's test script) and ``ascliteTest.pl``:

| SCTK case | sclite options | asrpriv | outcome |
|---|---|---|---|
| test1 | csrnab.ref/.hyp, -i wsj (ids differ in case; 6 ref alternations) | --ignore-id-case | equal: totals (test1.raw) and all 51 utterances (test1.pra) |
| test1e | same, -e utf-8 | --ignore-id-case --encoding utf-8 | equal (test1e.raw) |
| (issue 27) | csrnab1.ref/.hyp (2 utterances of csrnab, one alternation) | plain | equal to test1.pra's two utterances: 10/64 = 15.63% |
| test1 without --ignore-id-case | | plain | refused: ids not in the reference, hint names --ignore-id-case |
| test3c | lvc_refm.stm / lvc_hypm.ctm (stm alternations, tags) | plain | equal: 53 words, 118.9% (test3c.lur) |
| test6 | mand_ref.stm / mand_hyp.ctm, -e gb, -d | --encoding gb2312 | equal (test6.raw; DP gives diff's numbers here, cross-checked) |
| test15_a | Cantonese stm/ctm, -e utf-8 | plain | equal (test15_a.raw) |
| test15_c | Turkish trn, -e utf-8 babel_turkish | plain | equal (test15_c.raw) |
| test15_d | Ukrainian trn, -e utf-8 ukrainian | plain | equal (test15_d.raw) |
| test17 | Vietnamese trn, -e utf-8 babel_vietnamese | plain | equal (test17.raw) |
| test16_2, 16_6, 16_7 | stm2ctm_missing: hyp ctm without some files/channels | plain | equal (test16_N.raw) |
| test16_1 | hyp ctm with a file the stm lacks | plain | refused; sclite fails too (test16_1.out) |
| test16_3/4/5/8/9, test3/3a/3b | hyp ctm with <ALT_BEGIN> alternations | plain | refused: ctm alternations (lvc files not bundled; same rule) |
| test7, test7_r, test7_noD, test7_6, test7-utf8-* | tests.ref/.hyp, -F -D | plain | refused: nested alternations |
| CT-trn-i-x-x | asclite trn.ref/trn.hyp, per utterance (alternations in ref and hyp) | plain | 50 utterances equal, 3 refused (TRN_REFUSED below: nested alternations) |
| CT-trn-i-x-D, CT-trn-s-x-D | the same, -D (and -s, case-sensitive) | -D (--no-lowercase) | 33 equal (all 26 with optional reference words), 20 refused (TRN_REFUSED_D: reference alternations, or a hypothesis '(word)', with -D) |
| CT-trn-i-F-x, -i-F-D, -s-F-x, -s-F-D | -F (fragments) | no such option | not applicable |
| CT-stmctm-i-x-x | asclite stmctm.stm/.ctm | plain | refused: ctm alternations |
| asclite basic.stm/basic.ctm | 8-field ctm | plain | refused (ctm alternations); sclite fails too (SHOW_3 not in stm) |
| asclite basic.stm + basic.ctm's lines 1-12 | 8-field ctm (conf, type, speaker) | plain | equal: 4 segments, 10 words, 0 errors (by reading; sclite cross-check) |
| CT-basic | basic.trn (commented out in ascliteTest.pl) | plain | refused: nested alternation / empty alternative |
| test13, 13_D, 13_a, 13_aD | ctm reference against ctm (-T) | a .ctm REF | refused: ctm reference |
| test1a/1b/1c/1d, 2, 4, 5, 7_1-7_5, 8, 9-12, 10_1, 14_*, 15_b | sgml input, weights, -d diff, txt, -S, -c, -m | no such option | not applicable |
| CT-rttmstm-i-x-x; asclite-only runs (overlap, mdm04, isg, sastt, generic, todebug) | rttm input, overlap/speaker alignment | no such format | not applicable |
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_cli, run_proc

SCTK = Path(__file__).resolve().parent / "data" / "sctk"
BASE = SCTK / "base"
ASCLITE = SCTK / "asclite"
SCLITE = next((p for p in ("/usr/lib/sctk/bin/sclite", shutil.which("sclite") or "")
               if p and os.access(p, os.X_OK)), None)
needs_sclite = pytest.mark.skipif(SCLITE is None, reason="sctk's sclite not installed")

KEYS = ("sentences", "ref_words", "correct", "substitutions", "deletions", "insertions")


def raw_sum(path: Path) -> dict:
    """Counts of the ``Sum`` row of a sclite ``.raw`` report."""
    m = re.search(r"\|\s*Sum\S*\s*\|\s*(\d+)\s+(\d+)\s*\|\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)",
                  path.read_text(encoding="utf-8", errors="replace"))
    return dict(zip(KEYS, map(int, m.groups())))


def pra_scores(path: Path) -> dict[str, tuple[int, int, int, int]]:
    """``utt -> (#C, #S, #D, #I)`` of a sclite ``.pra`` report."""
    text = path.read_text(encoding="utf-8", errors="replace")
    return {u: tuple(map(int, s.split())) for u, s in
            re.findall(r"id: \((\S+)\)\n(?:.*\n)*?Scores: \(#C #S #D #I\) ([\d ]+)", text)}


def sgml_scores(path: Path) -> dict[str, tuple[int, int, int, int]]:
    """``utt -> (C, S, D, I)`` counted from the PATH elements of a sclite sgml file."""
    out = {}
    lines = path.read_text(encoding="utf-8").split("\n")
    for k, line in enumerate(lines):
        m = re.match(r'<PATH id="\((.*?)\)"', line)
        if m:
            body = lines[k + 1] if not lines[k + 1].startswith("</PATH") else ""
            evals = [tok[0] for tok in body.split(":") if tok]
            out[m.group(1)] = tuple(evals.count(e) for e in "CSDI")
    return out


def score(*args) -> tuple[int, dict | None, str]:
    res = run_cli(["score-wer", "-q", "--format", "json", *map(str, args)])
    return res.exit_code, (json.loads(res.stdout) if res.exit_code == 0 else None), res.stderr


def counts(out: dict) -> dict:
    return {k: out[k] for k in KEYS}


# ------------------------------------------------------------------ scored equal

EQUAL = {
    # case: (asrpriv arguments, expected report)
    "test1": (["--ref", SCTK / "csrnab.ref", "--hyp", SCTK / "csrnab.hyp", "--ignore-id-case"],
              BASE / "test1.raw"),
    "test1e": (["--ref", SCTK / "csrnab.ref", "--hyp", SCTK / "csrnab.hyp", "--ignore-id-case",
                "--encoding", "utf-8"], BASE / "test1e.raw"),
    "test6": (["--ref", SCTK / "mand_ref.stm", "--hyp", SCTK / "mand_hyp.ctm",
               "--encoding", "gb2312"], BASE / "test6.raw"),
    "test15_a": (["--ref", SCTK / "test.cantonese.stm", "--hyp", SCTK / "test.cantonese.ctm"],
                 BASE / "test15_a.raw"),
    # sclite's language localizations (babel_turkish, ukrainian, babel_vietnamese) fold their
    # letters beside A-Z: --case-folding unicode folds those (and every other letter)
    "test15_c": (["--ref", SCTK / "test.turkish.ref", "--hyp", SCTK / "test.turkish.hyp",
                  "--case-folding", "unicode"], BASE / "test15_c.raw"),
    "test15_d": (["--ref", SCTK / "test.ukranian.ref", "--hyp", SCTK / "test.ukranian.hyp",
                  "--case-folding", "unicode"], BASE / "test15_d.raw"),
    "test17": (["--ref", SCTK / "test.vietnamese.ref.trn", "--hyp", SCTK / "test.vietnamese.hyp.trn",
                "--case-folding", "unicode"], BASE / "test17.raw"),
    "test16_2": (["--ref", SCTK / "stm2ctm_missing.ref.stm",
                  "--hyp", SCTK / "stm2ctm_missing.hyp-missall.ctm"], BASE / "test16_2.raw"),
    "test16_6": (["--ref", SCTK / "stm2ctm_missing.ref.stm",
                  "--hyp", SCTK / "stm2ctm_missing.hyp-missfile2.ctm"], BASE / "test16_6.raw"),
    "test16_7": (["--ref", SCTK / "stm2ctm_missing.ref.stm",
                  "--hyp", SCTK / "stm2ctm_missing.hyp-missfile2chanA.ctm"], BASE / "test16_7.raw"),
}


@pytest.mark.parametrize("case", sorted(EQUAL))
def test_scored_equal_to_sclite(case):
    args, expected = EQUAL[case]
    code, out, err = score(*args)
    assert code == 0, err
    assert counts(out) == raw_sum(expected)


#: sclite 2.4.10 (Debian's sctk) with plain ``-e utf-8`` (and with generic or any localization
#: other than the file's own): Sum rows (#Snt #Wrd | Corr Sub Del Ins Err S.Err), copied from
#: its .raw reports. It folds A-Z only, so Cyrillic and Vietnamese capitals stay different words.
SCLITE_GENERIC_UTF8 = {
    "ukrainian": ((SCTK / "test.ukranian.ref", SCTK / "test.ukranian.hyp"),
                  dict(sentences=6, ref_words=66, correct=53, substitutions=13, deletions=0,
                       insertions=2)),  # 15 errors
    "vietnamese": ((SCTK / "test.vietnamese.ref.trn", SCTK / "test.vietnamese.hyp.trn"),
                   dict(sentences=8, ref_words=760, correct=604, substitutions=20, deletions=136,
                        insertions=208)),
}


@pytest.mark.parametrize("case", sorted(SCLITE_GENERIC_UTF8))
def test_default_case_folding_is_sclites(case, tmp_path):
    """Issue 38: the default folds A-Z only, as sclite -e utf-8 does (15 errors on SCTK's
    Ukrainian test where full Unicode folding counts 9; Vietnamese 364, not 344)."""
    (ref, hyp), expected = SCLITE_GENERIC_UTF8[case]
    code, out, err = score("--ref", ref, "--hyp", hyp)
    assert code == 0, err
    assert counts(out) == expected
    assert out["signature"].startswith("case:sclite|")
    if SCLITE is not None:  # the installed sclite says the same
        subprocess.run([SCLITE, "-r", str(ref), "trn", "-h", str(hyp), "trn", "-i", "spu_id",
                        "-e", "utf-8", "-o", "rsum", "-O", str(tmp_path), "-f", "0", "-n", "peer"],
                       check=True, capture_output=True)
        assert raw_sum(tmp_path / "peer.raw") == expected


def test_csrnab_every_utterance_equals_test1_pra(tmp_path):
    """All 51 utterances of test1 (6 with alternations), against sclite's per-utterance scores."""
    pra = pra_scores(BASE / "test1.pra")
    assert len(pra) == 51
    ref = {}
    for line in (SCTK / "csrnab.ref").read_text().splitlines():
        ref[line[line.rindex("(") + 1:-1].lower()] = line
    hyp = {}
    for line in (SCTK / "csrnab.hyp").read_text().splitlines():
        hyp[line[line.rindex("(") + 1:-1].lower()] = line
    with_alt = 0
    for utt, (c, s, d, i) in pra.items():
        r, h = tmp_path / "r.trn", tmp_path / "h.trn"
        r.write_text(ref[utt] + "\n")
        h.write_text(hyp[utt] + "\n")
        with_alt += "{" in ref[utt]
        code, out, err = score("--ref", r, "--hyp", h, "--ignore-id-case")
        assert code == 0, err
        assert (out["correct"], out["substitutions"], out["deletions"], out["insertions"]) \
            == (c, s, d, i), utt
    assert with_alt == 6


def test_csrnab1_alternations_as_sclite():
    """Issue 27: 20.59% with braces and slashes scored as words; sclite says 15.63%."""
    pra = pra_scores(BASE / "test1.pra")
    c = sum(pra[u][0] for u in ("4t0c0203", "4t0c020f"))
    s, d, i = (sum(pra[u][k] for u in ("4t0c0203", "4t0c020f")) for k in (1, 2, 3))
    code, out, err = score("--ref", SCTK / "csrnab1.ref", "--hyp", SCTK / "csrnab1.hyp")
    assert code == 0, err
    assert (out["correct"], out["substitutions"], out["deletions"], out["insertions"]) == (c, s, d, i)
    assert out["ref_words"] == c + s + d == 64
    assert round(out["wer"], 2) == 15.62  # sclite prints 15.6 (10/64 = 15.625)
    text = run_cli(["score-wer", "-q", "--ref", str(SCTK / "csrnab1.ref"),
                    "--hyp", str(SCTK / "csrnab1.hyp")]).stdout
    assert "%WER 15.62 [ 10 / 64, 1 ins, 1 del, 8 sub ]" in text


def test_alternations_are_never_words(tmp_path):
    """No brace, slash or '@' of a trn alternation is ever a reference word."""
    for ref_path in (SCTK / "csrnab1.ref", SCTK / "csrnab.ref"):
        # the hypothesis takes the first alternative of each (one-word) alternation
        text = ref_path.read_text()
        first = re.sub(r"\{\s*([^/}]*?)\s*/[^}]*\}", r"\1", text)
        assert "{" in text and "{" not in first
        hyp_path = tmp_path / ref_path.name
        hyp_path.write_text(first)
        code, out, err = score("--ref", ref_path, "--hyp", hyp_path)
        assert code == 0, err
        # 0 errors, and the word count has no '{', '/', '}' ('@', the null word, is no word)
        words = [w for w in first.split() if w != "@"]
        assert out["errors"] == 0 and out["ref_words"] == len(words) - text.count("\n")
    r = tmp_path / "r.trn"
    r.write_text("a { b / c d / @ } e (u1)\n")
    for hyp, wrd, err_count in [("a b e", 3, 0), ("a c d e", 4, 0), ("a e", 2, 0),
                                ("a { b / c } e", 3, 0), ("a { { b / c } / d } e", None, None),
                                ("a / b e", 3, 1)]:
        h = tmp_path / "h.trn"
        h.write_text(f"{hyp} (u1)\n")
        code, out, stderr = score("--ref", r, "--hyp", h)
        if wrd is None:
            assert code == 2 and "nested" in stderr
        else:
            assert code == 0 and (out["ref_words"], out["errors"]) == (wrd, err_count), hyp
    # Kaldi text with an alternation: refused, not scored as words
    k = tmp_path / "r.txt"
    k.write_text("u1 a { b / c d / @ } e\n")
    (tmp_path / "h.txt").write_text("u1 a b e\n")
    for fmt in ("auto", "kaldi"):
        assert_one_line_error(run_proc(["score-wer", "--input-format", fmt, "--ref", str(k),
                                        "--hyp", str(tmp_path / "h.txt")]), f"{k}:1:", "alternation")
    # per-word paths through alternatives are not sclite's: refused, not printed
    (tmp_path / "h.trn").write_text("a b e (u1)\n")
    details = run_proc(["score-wer", "--ref", str(r), "--hyp", str(tmp_path / "h.trn"),
                        "--details", str(tmp_path / "d")])
    assert_one_line_error(details, f"{r}:1:", "--details")


def test_lur_of_test3c():
    m = re.search(r"Set Sum/Avg\s*\|\s*\[(\d+)\]\s+([\d.]+)", (BASE / "test3c.lur").read_text())
    code, out, err = score("--ref", SCTK / "lvc_refm.stm", "--hyp", SCTK / "lvc_hypm.ctm")
    assert code == 0, err
    assert out["ref_words"] == int(m.group(1))
    assert f"{out['wer']:.1f}" == m.group(2)


def test_eight_field_ctm(tmp_path):
    """asclite's basic.ctm lines carry confidence, type and speaker; sclite reads the word."""
    lines = (ASCLITE / "basic.ctm").read_text().splitlines()[:12]
    assert all(len(x.split()) == 8 for x in lines[2:])
    ctm = tmp_path / "basic12.ctm"
    ctm.write_text("\n".join(lines) + "\n")
    code, out, err = score("--ref", ASCLITE / "basic.stm", "--hyp", ctm)
    assert code == 0, err
    # by reading: SHOW_1/1 JAVA WILL RULES THE WORLD, SHOW_1/2 OR NOT, SHOW_2/1 NICO IS HERE
    # all hypothesized; SHOW_2/2 is an empty segment
    assert counts(out) == dict(sentences=4, ref_words=10, correct=10, substitutions=0,
                               deletions=0, insertions=0)
    if SCLITE:
        proc = subprocess.run([SCLITE, "-r", str(ASCLITE / "basic.stm"), "stm", "-h", str(ctm), "ctm",
                               "-o", "rsum", "-O", str(tmp_path), "-f", "0"],
                              capture_output=True, check=True)
        assert raw_sum(tmp_path / "basic12.ctm.raw") == counts(out), proc.stdout


# ------------------------------------------------------------------ refused

REFUSED = {
    "test1 (no --ignore-id-case)": (["--ref", SCTK / "csrnab.ref", "--hyp", SCTK / "csrnab.hyp"],
                                    "csrnab.hyp:4:", "--ignore-id-case"),
    "test16_1": (["--ref", SCTK / "stm2ctm_missing.ref.stm",
                  "--hyp", SCTK / "stm2ctm_missing.hyp-extra.ctm"], "hyp-extra.ctm:", ""),
    "test16_3": (["--ref", SCTK / "stm2ctm_missing.ref.stm",
                  "--hyp", SCTK / "stm2ctm_missing.hyp-missfile1.ctm"], "missfile1.ctm:", "ctm alternations"),
    "test16_4": (["--ref", SCTK / "stm2ctm_missing.ref.stm",
                  "--hyp", SCTK / "stm2ctm_missing.hyp-missfile1chanA.ctm"], "chanA.ctm:", "ctm alternations"),
    "test16_5": (["--ref", SCTK / "stm2ctm_missing.ref.stm",
                  "--hyp", SCTK / "stm2ctm_missing.hyp-missfile1chanb.ctm"], "chanb.ctm:", "ctm alternations"),
    "test16_8": (["--ref", SCTK / "stm2ctm_missing.ref.stm",
                  "--hyp", SCTK / "stm2ctm_missing.hyp-missfile2chanB.ctm"], "chanB.ctm:", "ctm alternations"),
    "test16_9": (["--ref", SCTK / "stm2ctm_missing.ref.stm",
                  "--hyp", SCTK / "stm2ctm_missing.hyp.ctm"], "hyp.ctm:", "ctm alternations"),
    "test7": (["--ref", SCTK / "tests.ref", "--hyp", SCTK / "tests.hyp"], "tests.ref:16:", "nested"),
    "CT-stmctm-i-x-x": (["--ref", ASCLITE / "stmctm.stm", "--hyp", ASCLITE / "stmctm.ctm"],
                        "stmctm.ctm:", "ctm alternations"),
    "asclite basic.stm/basic.ctm": (["--ref", ASCLITE / "basic.stm", "--hyp", ASCLITE / "basic.ctm"],
                                    "basic.ctm:", ""),
    "CT-basic": (["--ref", ASCLITE / "basic.trn", "--hyp", ASCLITE / "basic.trn"], "basic.trn:", ""),
    "test13 (ctm reference)": (["--ref", SCTK / "stm2ctm_missing.hyp.ctm",
                                "--hyp", SCTK / "stm2ctm_missing.hyp.ctm"], "hyp.ctm", "ctm reference"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_with_a_reason(case):
    args, where, what = REFUSED[case]
    proc = run_proc(["score-wer", *map(str, args)])
    assert_one_line_error(proc, where, what)
    assert proc.stdout == b""


def test_sclite_also_fails_on_test16_1():
    assert "Hyp file has more data than ref file" in (BASE / "test16_1.err").read_text()


# ------------------------------------------------------------------ asclite CT-trn-i-x-x, per utterance

#: utterances of asclite's trn.ref/trn.hyp that score-wer refuses, and why
TRN_REFUSED = {"h_1": "nested", "h_2": "nested", "i_3": "nested"}
#: with -D: every utterance with an alternation in the reference, and the nested hypothesis
TRN_REFUSED_D = {u: "-D" for u in ("f_0", "f_1", "f_2", "f_3", "f_4", "f_5", "f_6", "g_0",
                                   "g_1", "h_0", "h_1", "h_2", "i_3", "i_4", "i_5", "alt-1",
                                   "alt-2", "alt-3", "alt-6")}
TRN_REFUSED_D["comb-2"] = "parentheses with -D"  # a hypothesis word '(d)


def _trn_lines(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith(";;"):
            out[line.rstrip()[line.rstrip().rindex("(") + 1:-1]] = line
    return out


@pytest.mark.parametrize("case, flags, refused", [
    ("CT-trn-i-x-x", (), TRN_REFUSED),
    # sclite -D: '(word)' optionally deletable; alternations with -D are refused here
    ("CT-trn-i-x-D", ("-D",), TRN_REFUSED_D),
    # sclite -s (case-sensitive) -D
    ("CT-trn-s-x-D", ("--no-lowercase", "-D"), TRN_REFUSED_D),
])
def test_asclite_trn_cases_equal_or_refused(tmp_path, case, flags, refused):
    expected = sgml_scores(ASCLITE / f"{case}.sgml")
    ref, hyp = _trn_lines(ASCLITE / "trn.ref"), _trn_lines(ASCLITE / "trn.hyp")
    assert set(expected) == set(ref) == set(hyp)
    table = {}
    for utt in ref:
        r, h = tmp_path / "r.trn", tmp_path / "h.trn"
        r.write_text(ref[utt] + "\n")
        h.write_text(hyp[utt] + "\n")
        code, out, err = score("--ref", r, "--hyp", h, *flags)
        if code == 0:
            got = (out["correct"], out["substitutions"], out["deletions"], out["insertions"])
            assert got == expected[utt], (utt, ref[utt], hyp[utt])
            table[utt] = "equal"
        else:
            assert code == 2 and err.count("\n") == 1 and ("r.trn:1:" in err or "h.trn:1:" in err), err
            table[utt] = err
    assert {u for u, v in table.items() if v != "equal"} == set(refused)
    for utt, why in refused.items():
        assert why in table[utt], (utt, table[utt])


# ------------------------------------------------------------------ the installed sclite agrees

@needs_sclite
@pytest.mark.parametrize("name", ["csrnab1", "csrnab"])
def test_installed_sclite_agrees_on_alternations(tmp_path, name):
    ref, hyp = SCTK / f"{name}.ref", SCTK / f"{name}.hyp"
    subprocess.run([SCLITE, "-r", str(ref), "trn", "-h", str(hyp), "trn", "-i", "wsj",
                    "-o", "rsum", "-O", str(tmp_path), "-f", "0"], capture_output=True, check=True)
    code, out, err = score("--ref", ref, "--hyp", hyp, "--ignore-id-case")
    assert code == 0, err
    assert counts(out) == raw_sum(tmp_path / f"{name}.hyp.raw")


# ------------------------------------------------------------------ utterance sets (68 vs 65)

def test_trn_missing_hypotheses_left_out_as_sclite(tmp_path):
    """sclite with trn REF and HYP scores only HYP's utterances (checked with sclite 2.4);
    --missing-as-deletions counts the others; Kaldi text keeps counting them."""
    r = tmp_path / "r.trn"
    r.write_text("a b c (u1)\nd e (u2)\nf g (u3)\n")
    h = tmp_path / "h.trn"
    h.write_text("a b c (u1)\nd x (u2)\n")
    code, out, err = score("--ref", r, "--hyp", h)
    assert code == 0 and (out["sentences"], out["ref_words"], out["errors"]) == (2, 5, 1)
    loud = run_proc(["score-wer", "--ref", str(r), "--hyp", str(h)], check=True)
    assert b"as sclite does" in loud.stderr and b"1 reference" in loud.stderr
    code, out, err = score("--ref", r, "--hyp", h, "--missing-as-deletions")
    assert (out["sentences"], out["ref_words"], out["errors"], out["missing_hyp"]) == (3, 7, 3, ["u3"])
    k = tmp_path / "h.txt"
    k.write_text("u1 a b c\nu2 d x\n")
    code, out, err = score("--ref", r, "--hyp", k)
    assert (out["sentences"], out["errors"]) == (3, 3)
    if SCLITE:
        subprocess.run([SCLITE, "-r", str(r), "trn", "-h", str(h), "trn", "-i", "spu_id",
                        "-o", "rsum", "-O", str(tmp_path), "-f", "0"], capture_output=True, check=True)
        peer = raw_sum(tmp_path / "h.trn.raw")
        assert (peer["sentences"], peer["ref_words"]) == (2, 5)


def test_ignore_id_case(tmp_path):
    r, h = tmp_path / "r.trn", tmp_path / "h.trn"
    r.write_text("a b (Utt1)\nc (utt2)\n")
    h.write_text("a x (UTT1)\nc (UTT2)\n")
    proc = run_proc(["score-wer", "--ref", str(r), "--hyp", str(h)])
    assert_one_line_error(proc, f"{h}:1:", "only in case", "--ignore-id-case")
    code, out, err = score("--ref", r, "--hyp", h, "--ignore-id-case")
    assert code == 0 and (out["sentences"], out["substitutions"]) == (2, 1)
    h.write_text("a b (UTT1)\nc (utt1)\n")
    proc = run_proc(["score-wer", "--ref", str(r), "--hyp", str(h), "--ignore-id-case"])
    assert_one_line_error(proc, f"{h}:2:", "duplicate utterance id 'utt1'")


def test_encoding_errors_name_the_line(tmp_path):
    code, out, err = score("--ref", SCTK / "mand_ref.stm", "--hyp", SCTK / "mand_hyp.ctm")
    assert code == 2 and "mand_ref.stm:2:" in err and "UTF-8" in err and "--encoding" in err
    proc = run_proc(["score-wer", "--ref", str(SCTK / "mand_ref.stm"),
                     "--hyp", str(SCTK / "mand_hyp.ctm"), "--encoding", "no-such-codec"])
    assert_one_line_error(proc, "no-such-codec")


@needs_sclite
@pytest.mark.parametrize("seed", [1, 2])
def test_random_alternations_equal_installed_sclite_or_refused(tmp_path, seed):
    """Random trn utterances with alternations (with '@', multi-word alternatives) in the
    reference and the hypothesis: each is scored as the installed sclite scores it, or refused."""
    import random

    from asrpriv.errors import InputError
    from asrpriv.wer.report import network_counts
    from asrpriv.wer.transcripts import read_transcript

    rng = random.Random(seed)
    vocab = list("abcdef")

    def words(k):
        return [rng.choice(vocab) for _ in range(k)]

    def text(alt_rate):
        out = []
        for _ in range(rng.randint(1, 7)):
            if rng.random() < alt_rate:
                alts = [" ".join(words(rng.randint(1, 2))) if rng.random() > 0.25 else "@"
                        for _ in range(rng.randint(2, 3))]
                out.append("{ " + " / ".join(alts) + " }")
            else:
                out.append(rng.choice(vocab))
        return " ".join(out)

    r, h = tmp_path / "ref.trn", tmp_path / "hyp.trn"
    utts = [f"s_{k}" for k in range(300)]
    r.write_text("".join(f"{text(0.3)} ({u})\n" for u in utts))
    h.write_text("".join(f"{text(0.1 if k % 3 == 0 else 0.0)} ({u})\n" for k, u in enumerate(utts)))
    subprocess.run([SCLITE, "-r", str(r), "trn", "-h", str(h), "trn", "-i", "spu_id",
                    "-o", "sgml", "-O", str(tmp_path), "-f", "0"], capture_output=True, check=True)
    peer = sgml_scores(tmp_path / "hyp.trn.sgml")
    ref, hyp = read_transcript(str(r), "trn"), read_transcript(str(h), "trn")
    refused = 0
    for u in utts:
        try:
            n, s, d, i = network_counts(ref, u, hyp.words[u], hyp.networks.get(u))
        except InputError:
            refused += 1
            continue
        assert (n - s - d, s, d, i) == peer[u], (u, r.read_text().splitlines()[utts.index(u)],
                                                h.read_text().splitlines()[utts.index(u)])
    print(f"seed {seed}: {refused} of {len(utts)} refused")
    assert refused < len(utts) // 5, refused
