"""Issue 14, privacy half: escaped words, validated metadata, seeds, the ledger, quiet steps.

Each test reproduces one finding of the audit (it failed before the fix)."""

from __future__ import annotations

import hashlib
import io
import json
import random

import pytest
from hypothesis import given, settings, strategies as st

from asrpriv.io.counts import parse_counts, read_counts, write_counts
from asrpriv.io.factors import read_factors, write_factors
from asrpriv.io.words import is_word
from asrpriv.privacy.history import History
from conftest import run_cli

GRID = "0.0009765625"
BOUNDED = f"#format=asrpriv-counts/2\n#unit=utterance\n#max_l1=5\n#grid={GRID}\n"


def _ok(args, input=None):
    result = run_cli(args, input=input)
    assert result.exit_code == 0, result.stderr
    return result


def _refused(args, *needles, input=None):
    result = run_cli(args, input=input)
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr and len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[-1], lines[-1]
    return lines[-1]


def _meta_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("#")]


def _read_text(text: str):
    return parse_counts("x.counts", enumerate(text.splitlines(), 1))


# ------------------------------------------------------------ 1. words round-trip

WORDS = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                min_size=1, max_size=12).filter(is_word)
SPECIAL = st.sampled_from(["#", "#unit=alice_smith_555-0199", "\\", "\\#", "\\\\x", "#format=x",
                           "##", "=", "#max_l1=1", "a#b", "\\n"])


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.one_of(WORDS, SPECIAL),
                       st.integers(0, 10 ** 6).map(lambda k: k / 1024), max_size=8))
def test_counts_round_trip_every_word(counts):
    out = io.StringIO()
    write_counts(out, {"unit": "utterance"}, counts)
    meta, back = _read_text(out.getvalue())
    assert back == counts and meta == {"format": "asrpriv-counts/2", "unit": "utterance"}
    again = io.StringIO()
    write_counts(again, meta, back)
    assert again.getvalue() == out.getvalue()  # write(read(x)) == x


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.one_of(WORDS, SPECIAL), st.integers(-999, 999).map(lambda k: k / 8),
                       min_size=1, max_size=6))
def test_factors_round_trip_every_word(tmp_path_factory, factors):
    path = tmp_path_factory.mktemp("f") / "f.tsv"
    with open(path, "w", encoding="utf-8") as stream:
        write_factors(stream, {"alpha": "0.5"}, factors)
    meta, back = read_factors(str(path))
    assert back == factors and meta["alpha"] == "0.5"


def test_escaped_forms_are_unique():
    # a backslash not followed by '#' or '\' is never written, so it is refused on read
    with pytest.raises(Exception, match="bad word"):
        _read_text("#format=asrpriv-counts/2\n\\abc\t1\n")


def test_injected_metadata_word_stays_a_word(tmp_path):
    """The audit's pipeline: a private token shaped like metadata must not become metadata."""
    token = "#unit=alice_smith_555-0199"
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\\" + token + "\nhello\n\\#\n")
    raw = _ok(["count-unigrams", "--text", "--max-l1", "5"], input=f"{token} hello\n# hello\n").stdout
    raw2 = _ok(["count-unigrams", "--text", "--max-l1", "5"],
               input=f"{token} hello\n# hello\nhello\n").stdout
    summed = tmp_path / "sum.counts"
    (tmp_path / "raw.counts").write_text(raw)
    (tmp_path / "raw2.counts").write_text(raw2)
    _ok(["aggregate", str(tmp_path / "raw.counts"), str(tmp_path / "raw2.counts"), "-o", str(summed)])
    meta, counts = read_counts(str(summed))
    assert counts == {token: 2.0, "hello": 5.0, "#": 2.0} and meta["unit"] == "utterance"
    assert meta["max_l1"] == "10"  # two inputs of bound 5, not proven disjoint: 5 + 5
    noisy = _ok(["add-noise", "--epsilon", "1", "--vocab", str(vocab), str(summed)]).stdout
    assert all("alice" not in line for line in _meta_lines(noisy))
    assert f"\\{token}\t" in noisy
    meta, counts = _read_text(noisy)
    assert set(counts) == {token, "hello", "#"} and meta["unit"] == "utterance"


def test_old_format_read_when_unambiguous(tmp_path):
    old = tmp_path / "old.counts"
    old.write_text(f"#format=asrpriv-counts/1\n#unit=utterance\n\\w\t2\nx\t1\n")
    assert read_counts(str(old))[1] == {"\\w": 2.0, "x": 1.0}  # no escaping in /1
    old.write_text("#format=asrpriv-counts/1\n#unit=alice_smith\t1\nx\t1\n")
    _refused(["aggregate", str(old)], "old.counts:2:", "ambiguous")


# ------------------------------------------------------------ 6. metadata validation

@pytest.mark.parametrize("lines, line, what", [
    ("#max_l1=-5\n", 3, "max_l1"),
    ("#grid=nan\n", 3, "grid"),
    ("#unit=banana\n", 3, "unit"),
    ("#max_l1=inf\n", 3, "max_l1"),
    ("#epsilon=-1\n", 3, "epsilon"),
    ("#epsilon=nan\n", 3, "epsilon"),
    ("#noise=gaussian\n", 3, "noise"),
    ("#max_l1=20\n#max_l1=1\n", 4, "duplicate"),
    ("#banana=1\n", 3, "unknown"),
    ("#no value here\n", 3, "malformed"),
    ("#privacy_history={\n", 3, "history"),
])
def test_bad_metadata_refused_with_file_and_line(tmp_path, lines, line, what):
    bad = tmp_path / "bad.counts"
    bad.write_text("#format=asrpriv-counts/2\n#source=text\n" + lines + "x\t1\n")
    _refused(["aggregate", str(bad)], f"bad.counts:{line}:", what)


def test_unknown_format_refused(tmp_path):
    bad = tmp_path / "bad.counts"
    bad.write_text("#format=nonsense\nx\t1\n")
    _refused(["aggregate", str(bad)], "bad.counts:1:", "format")


def test_bad_factors_metadata_refused(tmp_path):
    bad = tmp_path / "f.tsv"
    bad.write_text("#format=asrpriv-factors/2\n#alpha=nan\nx\t0.5\n")
    with pytest.raises(Exception, match="f.tsv:2:.*alpha"):
        read_factors(str(bad))


# ------------------------------------------------------------ 3. seeds

def _noisy(tmp_path, name, *extra, text="a b\n", partition=None):
    raw = tmp_path / f"{name}.raw"
    args = ["count-unigrams", "--text", "--max-l1", "5", "-o", str(raw)]
    _ok(args + (["--partition", partition] if partition else []), input=text)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("a\nb\nc\n")
    out = tmp_path / f"{name}.counts"
    result = _ok(["add-noise", "--epsilon", "1", "--vocab", str(vocab), "-o", str(out), *extra, str(raw)])
    return out, result


def test_seeded_release_is_marked_warned_even_quiet_and_refused(tmp_path):
    seeded, result = _noisy(tmp_path, "s", "--seed", "5", "-q")
    assert "NOT private" in result.stderr  # -q does not hide it
    assert any("seed" in line for line in _meta_lines(seeded.read_text()))
    plain, result = _noisy(tmp_path, "p")
    assert not any("seed" in line for line in _meta_lines(plain.read_text()))
    assert "NOT private" not in result.stderr
    vocab = str(tmp_path / "vocab.txt")
    bg = tmp_path / "bg.counts"
    _ok(["count-unigrams", "--text", "--public", "-o", str(bg)], input="a b c\n")
    steps = {"aggregate": ["aggregate", str(seeded)],
             "add-noise": ["add-noise", "--epsilon", "1", "--vocab", vocab, str(seeded)],
             "fma-adapt": ["fma-adapt", "--background", str(bg), "--global", str(seeded),
                           "--alpha", "0.5", "--beta", "0"]}
    for args in steps.values():
        _refused(args, "seeded", "--allow-seeded-test-noise")
        out = _ok(args + ["--allow-seeded-test-noise"]).stdout
        assert "#seeded=1" in _meta_lines(out)  # the mark propagates downstream


def test_negative_seed_differs_and_derivation_is_stretched(tmp_path):
    from asrpriv.privacy.randomness import SEED_ITERATIONS, noise_rng, seeded_state

    a = [noise_rng(5).random() for _ in range(3)]
    b = [noise_rng(-5).random() for _ in range(3)]
    assert a != b and [noise_rng(5).random() for _ in range(3)] == a
    expected = hashlib.pbkdf2_hmac("sha256", b"-5", b"asrpriv-noise-seed/1", SEED_ITERATIONS)
    assert seeded_state(-5) == int.from_bytes(expected, "big") and SEED_ITERATIONS >= 100_000
    plus = _read_text(_noisy(tmp_path, "plus", "--seed", "5", "--no-clamp")[0].read_text())[1]
    minus = _read_text(_noisy(tmp_path, "minus", "--seed", "-5", "--no-clamp")[0].read_text())[1]
    assert plus != minus


# ------------------------------------------------------------ 4. the ledger

def test_disjoint_needs_proof(tmp_path):
    a, _ = _noisy(tmp_path, "a", partition="alice")
    b, _ = _noisy(tmp_path, "b", partition="bob")
    c, _ = _noisy(tmp_path, "c", partition="alice")
    u, _ = _noisy(tmp_path, "u")
    meta = _read_text(_ok(["aggregate", "--disjoint", str(a), str(b)]).stdout)[0]
    assert float(meta["epsilon"]) == 1.0
    _refused(["aggregate", "--disjoint", str(a), str(a)], "the same counts")
    _refused(["aggregate", "--disjoint", str(a), str(c)], "alice", "overlap")
    _refused(["aggregate", "--disjoint", str(a), str(u)], "no partition", "--partition")
    # the same file twice is refused (issue 37: the same data is not a larger sample)
    _refused(["aggregate", str(a), str(a)], "the same counts")
    meta = _read_text(_ok(["aggregate", str(a), str(b), str(c)]).stdout)[0]
    assert float(meta["epsilon"]) == 3.0


def test_by_client_partitions_are_disjoint_and_summable(tmp_path):
    text = "u1 a b\nu2 b c\nu3 c c\n"
    (tmp_path / "u2c").write_text("u1 A\nu2 B\nu3 A\n")
    _ok(["count-unigrams", "--text", "--ids", "--utt2client", str(tmp_path / "u2c"), "--max-l1", "3",
         "--partition", "r0", "--by-client", str(tmp_path / "new")], input=text)
    assert read_counts(str(tmp_path / "new" / "A.counts"))[0]["partition"] == "r0/A"
    meta = _read_text(_ok(["aggregate", "--disjoint", str(tmp_path / "new" / "A.counts"),
                           str(tmp_path / "new" / "B.counts")]).stdout)[0]
    assert meta["partition"] == "r0/A,r0/B"


def test_forged_or_lowered_ledger_refused(tmp_path):
    a, _ = _noisy(tmp_path, "a")
    text = a.read_text()
    lowered = tmp_path / "lowered.counts"
    lowered.write_text(text.replace("#epsilon=1\n", "#epsilon=0.1\n"))
    _refused(["aggregate", str(lowered)], "lowered.counts:", "disagrees")
    dropped = tmp_path / "dropped.counts"
    dropped.write_text("".join(line + "\n" for line in text.splitlines()
                               if not line.startswith(("#privacy_history", "#epsilon"))))
    _refused(["aggregate", str(dropped)], "dropped.counts:", "privacy_history")
    history = History.from_json(read_counts(str(a))[0]["privacy_history"])
    assert history.epsilon_pure() == 1.0 and history.releases[0].params["sensitivity_l1"] == 5.0


def test_sensitivity_below_bound_refused(tmp_path):
    raw = tmp_path / "raw.counts"
    _ok(["count-unigrams", "--text", "--max-l1", "20", "-o", str(raw)], input="a b\n")
    vocab = tmp_path / "v.txt"
    vocab.write_text("a\nb\n")
    _refused(["add-noise", "--epsilon", "1", "--vocab", str(vocab), "--sensitivity", "1", str(raw)],
             "below", "max_l1")
    meta = _read_text(_ok(["add-noise", "--epsilon", "1", "--vocab", str(vocab), "--sensitivity", "40",
                           str(raw)]).stdout)[0]
    assert json.loads(meta["privacy_history"])["releases"][0]["params"]["sensitivity_l1"] == 40.0


def test_private_counts_refused_as_vocab(tmp_path):
    raw = tmp_path / "raw.counts"
    _ok(["count-unigrams", "--text", "--max-l1", "5", "-o", str(raw)], input="secret words\n")
    private = tmp_path / "private.counts"
    _ok(["count-unigrams", "--text", "-o", str(private)], input="secret other\n")
    _refused(["add-noise", "--epsilon", "1", "--vocab", str(private), str(raw)], "not marked public")
    public = tmp_path / "public.counts"
    _ok(["count-unigrams", "--text", "--public", "-o", str(public)], input="secret other\n")
    out = _ok(["add-noise", "--epsilon", "1", "--vocab", str(public), str(raw)]).stdout
    assert set(_read_text(out)[1]) == {"secret", "other"}
    noisy = tmp_path / "noisy.counts"
    noisy.write_text(out)  # issue 37: only a file whose state is public is a vocabulary
    _refused(["add-noise", "--epsilon", "1", "--vocab", str(noisy), str(raw)], "not marked public",
             "dp")


def test_fma_adapt_factors_carry_history(tmp_path):
    a, _ = _noisy(tmp_path, "a")
    bg = tmp_path / "bg.counts"
    _ok(["count-unigrams", "--text", "--public", "-o", str(bg)], input="a b c\n")
    out = tmp_path / "f.tsv"
    _ok(["fma-adapt", "--background", str(bg), "--global", str(a), "--alpha", "0.5", "--beta", "0",
         "-o", str(out)])
    meta, _ = read_factors(str(out))
    assert meta["privacy_history"] == read_counts(str(a))[0]["privacy_history"]
    assert float(meta["epsilon"]) == 1.0


# ------------------------------------------------------------ 5. no data-dependent talk

def test_no_private_statistics_on_stderr_by_default(tmp_path):
    raw = tmp_path / "raw.counts"
    result = _ok(["count-unigrams", "--text", "--max-l1", "1", "-o", str(raw)],
                 input="a b c\nsecret x\nb\n")
    assert "3" not in result.stderr and "clipped" not in result.stderr
    result = _ok(["count-unigrams", "--text", "--max-l1", "1", "--debug-private-stats", "-o",
                  str(raw)], input="a b c\nsecret x\nb\n")
    assert "3 utterance(s), 2 clipped" in result.stderr
    vocab = tmp_path / "v.txt"
    vocab.write_text("a\nb\n")
    result = _ok(["add-noise", "--epsilon", "1", "--vocab", str(vocab), str(raw)])
    assert "dropped" not in result.stderr
    result = _ok(["add-noise", "--epsilon", "1", "--vocab", str(vocab), "--debug-private-stats", str(raw)])
    assert "dropped 3 input word(s)" in result.stderr
