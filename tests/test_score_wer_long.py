"""score-wer alignments of long lines: the checkpointed programme gives the same paths as the
full back-pointer table (the implementation before it, kept as ``_align_full``) and keeps
memory far below the table's (n+1)(m+1) bytes. No timings."""

from __future__ import annotations

import json
import random
import tracemalloc

import pytest

from conftest import AMI, LIBRI, run_cli
from asrpriv.wer import alignment
from asrpriv.wer.alignment import _align_checkpointed, _align_full, sclite_align


def _table(path) -> dict[str, list[str]]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.lower().split()
        if parts:
            out[parts[0]] = parts[1:]
    return out


def _pairs():
    for ref_path, hyp_path in ((AMI / "dev" / "ref.txt", AMI / "dev" / "decoder_1best.txt"),
                               (LIBRI / "test-clean.ref.txt", LIBRI / "test-clean.rnnt_baseline.txt")):
        ref, hyp = _table(ref_path), _table(hyp_path)
        yield [(ref[u], hyp.get(u, [])) for u in ref]


def _check_bundled(utterances: int, chunks: int, chunk: int) -> int:
    n = 0
    for pairs in _pairs():
        # utterances one by one, through both programmes
        for r, h in pairs[:utterances]:
            assert _align_checkpointed(r, h) == _align_full(r, h)
            n += 1
        # long lines: `chunk` utterances joined, the dispatch picks the checkpointed programme
        for start in range(0, min(len(pairs), chunks * chunk), chunk):
            chunk_pairs = pairs[start:start + chunk]
            r = [w for p in chunk_pairs for w in p[0]]
            h = [w for p in chunk_pairs for w in p[1]]
            assert (len(r) + 1) * (len(h) + 1) > alignment.LARGE_CELLS
            assert sclite_align(r, h) == _align_full(r, h)
    return n


def test_same_paths_as_the_full_table_on_bundled_data():
    assert _check_bundled(utterances=250, chunks=2, chunk=40) == 500


@pytest.mark.slow
def test_same_paths_on_all_bundled_data():
    assert _check_bundled(utterances=10**9, chunks=3, chunk=200) > 1000


def test_same_paths_on_random_ties():
    rng = random.Random(3)
    for _ in range(500):
        vocab = rng.choice([2, 3, 6])
        r = [rng.randrange(vocab) for _ in range(rng.randint(0, 40))]
        h = [rng.randrange(vocab) for _ in range(rng.randint(0, 40))]
        assert _align_checkpointed(r, h) == _align_full(r, h)


def test_memory_far_below_the_table():
    rng = random.Random(0)
    r = [f"w{rng.randrange(500)}" for _ in range(2000)]
    h = [w if rng.random() > 0.1 else "x" for w in r if rng.random() > 0.02]
    tracemalloc.start()
    try:
        path = sclite_align(r, h)
        _cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    table = (len(r) + 1) * (len(h) + 1)  # bytes of the back-pointer table alone
    assert peak < table / 4, (peak, table)
    assert sum(1 for e, _r, _h in path if e != "I") == len(r)


def test_details_of_one_long_line(tmp_path):
    """--details on one 2,000-word line equals the plain path's counts."""
    rng = random.Random(1)
    ref = [f"w{rng.randrange(300)}" for _ in range(2000)]
    hyp = [w if rng.random() > 0.1 else "zz" for w in ref if rng.random() > 0.03]
    (tmp_path / "r").write_text("u1 " + " ".join(ref) + "\n")
    (tmp_path / "h").write_text("u1 " + " ".join(hyp) + "\n")
    args = ["score-wer", "-q", "--format", "json", "--ref", str(tmp_path / "r"), "--hyp", str(tmp_path / "h")]
    plain = json.loads(run_cli(args).stdout)
    res = run_cli(args + ["--details", str(tmp_path / "d")])
    detailed = json.loads(res.stdout)
    assert detailed["errors"] == plain["errors"] and detailed["ref_words"] == 2000
    assert "Scores: (#C #S #D #I)" in (tmp_path / "d").read_text()
