"""Issue 38, worked by hand: the five cases where score-wer differed from sclite/sc_stats, the
client bootstrap, the per-unit table of WER changes with its sign test, and --holm.

Every expected number is derived in the comments (or read from SCTK's files), not from
running asrpriv; where Debian's sclite/sc_stats are installed they confirm it.
"""

from __future__ import annotations

import json
import math

import pytest

import _sctk_peer as peer
from conftest import assert_one_line_error, run_cli, run_proc
from test_score_wer_sctk import SCTK


def _json(*args) -> dict:
    res = run_cli(["score-wer", "-q", "--format", "json", *map(str, args)])
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def _trn(path, lines: dict[str, str]) -> str:
    return peer.write_trn(path, lines)


# ------------------------------------------------------------------ 1. MAPSSWE: insertions at the end

def test_mapsswe_counts_insertions_at_the_end_of_an_utterance(tmp_path):
    """REF 'a b c d e f', A exact, B 'a b c d e f x y'. sc_stats' walk runs until both paths end:
    after f (good in both, the last good word at index 5) B's insertions open an error region
    that the end closes, so the segment is 'e f' plus 'x y': ref words (2 + 2) // 2 = 2, errors
    A 0, B 2. One segment, mean(A - B) = -2, sd 0 (one difference), Z 0 (sd = 0), p 1.
    (Before the fix the walk stopped with A's path: 0 segments.)"""
    ref = _trn(tmp_path / "ref.trn", {"s-u1": "a b c d e f"})
    a = _trn(tmp_path / "a.trn", {"s-u1": "a b c d e f"})
    b = _trn(tmp_path / "b.trn", {"s-u1": "a b c d e f x y"})
    c = _json("--ref", ref, "--hyp", a, "--compare", b)["compare"]
    assert (c["segments"], c["seg_ref_words"], c["seg_errors_a"], c["seg_errors_b"]) == (1, 2, 0, 2)
    assert (c["mean"], c["sd"], c["z"], c["p_value"]) == (-2.0, 0.0, 0.0, 1.0)
    assert c["wer_a"] == 0.0 and c["wer_b"] == pytest.approx(100 * 2 / 6)
    if peer.sctk_bin("sc_stats"):
        peer.sclite(tmp_path, ref, [a, b])
        assert peer.sc_stats(tmp_path, a, b) == {"segments": 1, "pct_a": "0.00", "pct_b": "100.00",
                                                  "mean": "-2.000", "sd": "0.000", "z": "0.000"}


def test_mapsswe_two_utterances_by_hand(tmp_path):
    """u1 as above (segment: A 0, B 2 errors, 2 ref words); u2 'a b', A 'a' (path C D), B 'b'
    (path D C): no word is correct in both, the region runs to the end: one segment, A 1, B 1
    error, (2 + 2) // 2 = 2 ref words. d = (-2, 0): mean -1, sd sqrt(((-1)^2 + 1^2) / 1) =
    sqrt 2, Z = -1 / (sqrt 2 / sqrt 2) = -1; % error in segments 1/4 = 25% and 3/4 = 75%."""
    ref = _trn(tmp_path / "ref.trn", {"s-u1": "a b c d e f", "s-u2": "a b"})
    a = _trn(tmp_path / "a.trn", {"s-u1": "a b c d e f", "s-u2": "a"})
    b = _trn(tmp_path / "b.trn", {"s-u1": "a b c d e f x y", "s-u2": "b"})
    c = _json("--ref", ref, "--hyp", a, "--compare", b)["compare"]
    assert c["segments"] == 2 and c["seg_ref_words"] == 4
    assert (c["seg_pct_a"], c["seg_pct_b"]) == (25.0, 75.0)
    assert c["mean"] == -1.0 and c["sd"] == pytest.approx(math.sqrt(2)) and c["z"] == pytest.approx(-1.0)
    assert c["p_value"] == pytest.approx(math.erfc(1 / math.sqrt(2)))   # 2 (1 - Phi(1)) = 0.3173


# ------------------------------------------------------------------ 2. case folding as sclite

def test_default_folds_a_to_z_only_as_sclite(tmp_path):
    """sclite -e utf-8 folds A-Z only: 'É Д A' against 'é д a' is 2 substitutions (É/é, Д/д),
    A/a correct; --case-folding unicode folds every letter (0 errors); --no-lowercase folds
    none (3 substitutions)."""
    ref = _trn(tmp_path / "ref.trn", {"s-u1": "É Д A"})
    hyp = _trn(tmp_path / "hyp.trn", {"s-u1": "é д a"})
    out = _json("--ref", ref, "--hyp", hyp)
    assert (out["correct"], out["substitutions"]) == (1, 2)
    assert out["signature"].startswith("case:sclite|")
    uni = _json("--ref", ref, "--hyp", hyp, "--case-folding", "unicode")
    assert (uni["correct"], uni["substitutions"]) == (3, 0) and uni["signature"].startswith("case:lc|")
    mixed = _json("--ref", ref, "--hyp", hyp, "--no-lowercase")
    assert mixed["substitutions"] == 3 and mixed["signature"].startswith("case:mixed|")
    if peer.sctk_bin("sclite"):
        assert peer.sclite(tmp_path, ref, [hyp])["hyp.trn"]["sum"]["substitutions"] == 2


def test_two_byte_letters_stay_apart_as_in_sclite(tmp_path):
    """Ģ/ģ (U+0122/U+0123, two UTF-8 bytes each): sclite keeps them apart; so does the default."""
    ref = _trn(tmp_path / "ref.trn", {"s-u1": "Ģ ģ"})
    hyp = _trn(tmp_path / "hyp.trn", {"s-u1": "ģ ģ"})
    assert _json("--ref", ref, "--hyp", hyp)["substitutions"] == 1
    assert _json("--ref", ref, "--hyp", hyp, "--case-folding", "unicode")["substitutions"] == 0


# ------------------------------------------------------------------ 3. Buckwalter '}' inside words

def test_buckwalter_braces_are_letters(tmp_path):
    """'Alr}ys w}A b} c' against 'Alr}ys w}A b c': '}' outside an alternation is a letter, as
    sclite reads it (it prints REF 'alr}ys w}a B} c'): 3 correct, b}/b one substitution."""
    ref = _trn(tmp_path / "ref.trn", {"s-u1": "Alr}ys w}A b} c", "s-u2": "x } y"})
    hyp = _trn(tmp_path / "hyp.trn", {"s-u1": "Alr}ys w}A b c", "s-u2": "x } y"})
    out = _json("--ref", ref, "--hyp", hyp)
    assert (out["ref_words"], out["correct"], out["substitutions"]) == (7, 6, 1)
    if peer.sctk_bin("sclite"):
        s = peer.sclite(tmp_path, ref, [hyp])["hyp.trn"]["sum"]
        assert (s["ref_words"], s["correct"], s["substitutions"]) == (7, 6, 1)


def test_brace_inside_a_word_is_refused_with_its_reason(tmp_path):
    """sclite 2.4.10 crashes (SIGSEGV) on 'b{c': refused, one line, FILE:LINE."""
    ref = _trn(tmp_path / "ref.trn", {"s-u1": "a b{c d"})
    hyp = _trn(tmp_path / "hyp.trn", {"s-u1": "a b d"})
    proc = run_proc(["score-wer", "--ref", ref, "--hyp", hyp])
    assert_one_line_error(proc, "ref.trn:1: '{' inside a word")


# ------------------------------------------------------------------ 4. alt-4 / alt-5

@pytest.mark.parametrize("utt", ["alt-4", "alt-5"])
def test_sctk_alt4_alt5_scored_as_sclite(tmp_path, utt):
    """SCTK tests.ref 'a { c / @ } d' against tests.hyp 'a {c / @} d' (alt-4) and
    'a {@ / c} d' (alt-5): sclite scores C=3 (the reference's first non-@ alternative)."""
    def line(path):
        return next(x for x in path.read_text().splitlines() if x.endswith(f"({utt})"))

    ref, hyp = tmp_path / "ref.trn", tmp_path / "hyp.trn"
    ref.write_text(line(SCTK / "tests.ref") + "\n")
    hyp.write_text(line(SCTK / "tests.hyp") + "\n")
    out = _json("--ref", ref, "--hyp", hyp)
    assert (out["ref_words"], out["correct"], out["errors"]) == (3, 3, 0)


def test_other_ties_between_two_networks_stay_refused(tmp_path):
    """A tie sclite's pick is not known for: one line, the reason that docs/FORMATS.md lists."""
    ref = _trn(tmp_path / "ref.trn", {"s-u1": "{ a / a a / @ } b"})
    hyp = _trn(tmp_path / "hyp.trn", {"s-u1": "a { b / a b / c b }"})
    proc = run_proc(["score-wer", "--ref", ref, "--hyp", hyp])
    assert_one_line_error(proc, "tie in sclite's cost")


# ------------------------------------------------------------------ 5. the client as the unit

def _clients(tmp_path, per_client=10):
    """Two clients of 10 one-word utterances: client c1 all correct, c2 all wrong."""
    ref, hyp, b, spk = {}, {}, {}, []
    for c in ("c1", "c2"):
        for k in range(per_client):
            u = f"{c}_u{k}"
            ref[u] = "a"
            hyp[u] = "a" if c == "c1" else "x"
            b[u] = "x" if (c == "c1" and k < 5) or c == "c2" else "a"
            spk.append(f"{u} {c}\n")
    paths = []
    for name, table in (("ref.txt", ref), ("a.txt", hyp), ("b.txt", b)):
        (tmp_path / name).write_text("".join(f"{u} {t}\n" for u, t in table.items()))
        paths.append(str(tmp_path / name))
    (tmp_path / "utt2client").write_text("".join(spk))
    return (*paths, str(tmp_path / "utt2client"))


def test_client_bootstrap_is_wider_than_utterance_bootstrap(tmp_path):
    """By hand: resampling 2 clients gives WER 0 (c1 twice, p 1/4), 50 (p 1/2) or 100 (c2 twice,
    p 1/4), so the 95% percentile interval is [0, 100] (2.5% and 97.5% fall inside the masses
    at 0 and 100). Resampling the 20 utterances gives 100 X / 20 with X ~ Binomial(20, 1/2):
    P(X <= 5) = 0.021 < 0.025 <= P(X <= 6) = 0.058, so the interval is about [30, 70]."""
    ref, a, _b, u2c = _clients(tmp_path)
    by_client = _json("--ref", ref, "--hyp", a, "--bootstrap", 2000, "--seed", 3,
                      "--bootstrap-unit", "client", "--utt2client", u2c)["bootstrap"]
    by_utt = _json("--ref", ref, "--hyp", a, "--bootstrap", 2000, "--seed", 3)["bootstrap"]
    assert by_client["unit"] == "client" and by_client["units"] == 2
    assert (by_client["wer_low"], by_client["wer_high"]) == (0.0, 100.0)
    assert by_utt["units"] == 20 and 25.0 <= by_utt["wer_low"] <= 35.0 and 65.0 <= by_utt["wer_high"] <= 75.0
    assert by_client["wer_high"] - by_client["wer_low"] > by_utt["wer_high"] - by_utt["wer_low"]


def test_client_bootstrap_draws_as_documented(tmp_path):
    """An independent computation of the resampling: numpy's default_rng(seed).integers(0, U,
    (B, U)), WER = 100 sum(errors) / sum(words) per row, linear percentiles; the paired
    difference uses the same rows."""
    import numpy as np

    ref, a, b, u2c = _clients(tmp_path)
    out = _json("--ref", ref, "--hyp", a, "--compare", b, "--bootstrap", 500, "--seed", 11,
                "--bootstrap-unit", "client", "--utt2client", u2c)["bootstrap"]
    errs_a, errs_b, words = np.array([0, 10]), np.array([5, 10]), np.array([10, 10])  # c1, c2
    idx = np.random.default_rng(11).integers(0, 2, size=(500, 2))
    wer = 100 * errs_a[idx].sum(1) / words[idx].sum(1)
    diff = 100 * (errs_a[idx].sum(1) - errs_b[idx].sum(1)) / words[idx].sum(1)
    assert (out["wer_low"], out["wer_high"]) == tuple(np.percentile(wer, [2.5, 97.5]))
    assert (out["diff_low"], out["diff_high"]) == tuple(np.percentile(diff, [2.5, 97.5]))
    assert out["diff"] == pytest.approx(100 * (10 - 15) / 20)


def test_client_bootstrap_needs_a_client_map(tmp_path):
    ref, a, _b, _u2c = _clients(tmp_path)
    proc = run_proc(["score-wer", "--ref", ref, "--hyp", a, "--bootstrap", "10",
                     "--bootstrap-unit", "client"])
    assert_one_line_error(proc, "--bootstrap-unit client needs --utt2client")


def test_client_map_from_an_nbest_client_column(tmp_path):
    ref, a, _b, u2c = _clients(tmp_path)
    rows = [line.split() for line in open(u2c)]
    nbest = tmp_path / "n.tsv"
    nbest.write_text("utt_id\trank\ttext\tclient\n"
                     + "".join(f"{u}\t1\ta\t{c}\n" for u, c in rows))
    kw = ("--bootstrap", 200, "--seed", 2, "--bootstrap-unit", "client")
    assert _json("--ref", ref, "--hyp", a, *kw, "--utt2client", nbest)["bootstrap"] == \
        _json("--ref", ref, "--hyp", a, *kw, "--utt2client", u2c)["bootstrap"]


def test_per_client_table_and_sign_test(tmp_path):
    """A against B per client: c1 A 0 errors, B 5: improves; c2 10 and 10: tie. The sign test
    over the one changed client: n = 1, p = min(1, 2 * 1/2) = 1."""
    ref, a, b, u2c = _clients(tmp_path)
    units = _json("--ref", ref, "--hyp", a, "--compare", b, "--utt2client", u2c)["compare"]["units"]
    assert (units["unit"], units["units"], units["improve"], units["worsen"], units["tie"]) == \
        ("client", 2, 1, 0, 1)
    assert units["sign_test_p"] == 1.0
    assert [(r["client"], r["errors_a"], r["errors_b"], r["change"]) for r in units["rows"]] == \
        [("c1", 0, 5, "improve"), ("c2", 10, 10, "tie")]


def test_sign_test_by_hand():
    """Exact two-sided sign test: 6 improve, 0 worsen: 2 * (1/2)^6 = 0.03125; 4 vs 1:
    2 * (1 + 5) / 32 = 0.375; 3 vs 3: min(1, 2 * 42/64) = 1."""
    from asrpriv.wer.step import sign_test

    assert sign_test(6, 0) == 0.03125
    assert sign_test(1, 4) == 0.375
    assert sign_test(3, 3) == 1.0 and sign_test(0, 0) == 1.0


# ------------------------------------------------------------------ Holm over the comparisons

def test_holm_over_several_compared_systems(tmp_path):
    """Two systems compared with A: MAPSSWE p-values p1, p2; Holm (m = 2): the smaller is
    doubled, the larger is max(that, itself) -- computed here from the report's own p-values."""
    n = 12
    ref = _trn(tmp_path / "ref.trn", {f"s-u{k}": "a b c d e f g h" for k in range(n)})
    a = _trn(tmp_path / "a.trn", {f"s-u{k}": "a b c d e f g h" for k in range(n)})
    b = _trn(tmp_path / "b.trn", {f"s-u{k}": ("a x y d e f g h" if k % 2 else "a x c d e f g h")
                                  for k in range(n)})
    c = _trn(tmp_path / "c.trn", {f"s-u{k}": ("a b c d e f g h", "a b z d e f g h", "a b z z e f g h")[k % 3]
                                  for k in range(n)})
    out = _json("--ref", ref, "--hyp", a, "--compare", b, "--compare", c, "--holm")
    comps = out["comparisons"]
    assert out["compare"] == comps[0]
    assert [x["system_b"].rsplit("/", 1)[-1] for x in comps] == ["b.trn", "c.trn"]
    p = [x["p_value"] for x in comps]
    assert all(0 < q < 0.05 for q in p) and p[0] != p[1]
    lo = min(p)
    expected = [min(1.0, 2 * lo) if q == lo else max(min(1.0, 2 * lo), q) for q in p]
    assert [x["p_holm"] for x in comps] == pytest.approx(expected)
    assert all(x["holm_family"] == 2 for x in comps)
    assert [x["significant_holm"] for x in comps] == [q < 0.05 for q in expected]
    text = run_cli(["score-wer", "-q", "--ref", ref, "--hyp", a, "--compare", b, "--compare", c,
                    "--holm"]).stdout
    assert text.count("Holm-adjusted p") == 2 and f"B2: {c}" in text


def test_holm_needs_a_comparison(tmp_path):
    ref = _trn(tmp_path / "ref.trn", {"s-u1": "a"})
    proc = run_proc(["score-wer", "--ref", ref, "--hyp", ref, "--holm"])
    assert_one_line_error(proc, "--holm adjusts the p-values of comparisons")


def test_single_compare_report_keeps_its_keys(tmp_path):
    """One --compare without a unit map: the JSON keys are those of before (no 'comparisons')."""
    ref = _trn(tmp_path / "ref.trn", {"s-u1": "a b c"})
    out = _json("--ref", ref, "--hyp", ref, "--compare", ref)
    assert "comparisons" not in out and "units" not in out["compare"]
    assert set(out["compare"]) == {
        "test", "min_good", "system_b", "wer_a", "wer_b", "errors_a", "errors_b", "segments",
        "mean", "sd", "z", "p_value", "significant", "alpha", "better", "seg_ref_words",
        "seg_errors_a", "seg_errors_b", "seg_pct_a", "seg_pct_b", "missing_hyp_b", "extra_hyp_b"}


# ------------------------------------------------------------------ one door

def test_cli_and_library_entry_give_the_same_report(tmp_path):
    """score-wer's command makes one call, asrpriv.api.score_wer_files (STEP_ENTRIES['score-wer']):
    the same settings give the same JSON report."""
    from asrpriv import api

    ref, a, b, u2c = _clients(tmp_path)
    settings = api.ScoreWerSettings(ref=ref, hyp=a, compare=(b,), utt2client=u2c, bootstrap=50,
                                    seed=4, bootstrap_unit="client", holm=True, output=None)
    report = api.score_wer_files(settings, warn=lambda _m: None)
    cli = _json("--ref", ref, "--hyp", a, "--compare", b, "--utt2client", u2c, "--bootstrap", 50,
                "--seed", 4, "--bootstrap-unit", "client", "--holm")
    assert json.loads(json.dumps(report.as_dict())) == cli
    assert api.STEP_ENTRIES["score-wer"] == "asrpriv.wer.step:score_wer_files"


def test_null_arcs_cost_a_thousandth_as_in_sclite(tmp_path):
    """REF '{ b / @ } { @ / b a } { c a / @ }' against 'c': by 3/3/4 two paths cost 3, 'c a'
    through two '@' (delete a) and the empty string through three '@' (insert c); sclite adds
    0.001 per '@' passed (3.002 < 3.003), so it scores 'c a': 2 reference words, 1 correct,
    1 deletion. Padded with 400 substituted words the same tie sits at a cost above 1,000,
    where sclite's float32 sums cannot be trusted to keep the 0.001: refused there."""
    from asrpriv.wer.alignment import SCLITE_WEIGHTS
    from asrpriv.wer.network import _null_counts, parse_alternations, simplify
    from rapidfuzz.distance import Levenshtein

    text = "{ b / @ } { @ / b a } { c a / @ }"
    _w, net = simplify(parse_alternations(text, None, 1))
    cheapest = {}
    for words, nulls in _null_counts(net).items():
        cost = Levenshtein.distance(words, ("c",), weights=SCLITE_WEIGHTS)
        cheapest.setdefault(cost, set()).add(nulls)
    assert cheapest[3] == {2, 3}           # a 3/3/4 tie that only the '@' count breaks
    ref = _trn(tmp_path / "ref.trn", {"s-u1": text})
    hyp = _trn(tmp_path / "hyp.trn", {"s-u1": "c"})
    out = _json("--ref", ref, "--hyp", hyp)
    assert (out["ref_words"], out["correct"], out["deletions"], out["insertions"]) == (2, 1, 1, 0)
    if peer.sctk_bin("sclite"):
        s = peer.sclite(tmp_path, ref, [hyp])["hyp.trn"]["sum"]
        assert {k: out[k] for k in peer.KEYS} == s
    long_ref = _trn(tmp_path / "long.trn", {"s-u1": text + " x" * 400})
    long_hyp = _trn(tmp_path / "longh.trn", {"s-u1": "c" + " y" * 400})
    proc = run_proc(["score-wer", "--ref", long_ref, "--hyp", long_hyp])
    assert_one_line_error(proc, "long.trn:1:", "float32")
