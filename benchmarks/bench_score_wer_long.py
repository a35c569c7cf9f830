"""Benchmark: score-wer on one very long line, plain vs --details / --compare (issue 28).

Data: one utterance of N reference words (default 30,000) drawn with a seeded RNG from a
3,000-word vocabulary; hypotheses A and B perturb it (about 5% substitutions, 2% deletions,
1% insertions each, different seeds). Each step runs as its own process
(``python -m asrpriv score-wer``), so its peak resident memory (``ru_maxrss``) is its own.

Timed, in one run:

* ``plain``: ``score-wer --ref R --hyp A`` (RapidFuzz counts);
* ``--details``: the same with per-word alignments written to a file (sclite's dynamic
  programme, checkpointed: costs of every k-th row, k ~ sqrt(N), one block of back pointers
  at a time; memory O(N sqrt N) instead of the (N+1)^2 byte pointer table);
* ``--compare``: A against B with MAPSSWE (two alignments);
* with ``--old``: the full-table programme it replaced (``_align_full``), for reference
  (about 0.9 GB and minutes at 30,000 words).

Prints seconds, peak MB and the ratios ``--details / plain`` (memory and time). Target: memory
within a small constant of the plain path's (the issue's 0.91 GB -> tens of MB).
Usage: ``python benchmarks/bench_score_wer_long.py [N] [--old]``.
"""

from __future__ import annotations

import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import resource, sys
sys.argv = ["asrpriv"] + sys.argv[1:]
from asrpriv.cli import main
try:
    main()
finally:
    print("MAXRSS", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""

OLD = r"""
import resource, sys
from asrpriv.wer.alignment import _align_full
ref = open(sys.argv[1]).read().split()[1:]
hyp = open(sys.argv[2]).read().split()[1:]
path = _align_full(ref, hyp)
print("MAXRSS", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def perturb(words: list[str], vocab: list[str], seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for w in words:
        u = rng.random()
        if u < 0.05:
            out.append(rng.choice(vocab))
        elif u < 0.07:
            continue
        else:
            out.append(w)
        if rng.random() < 0.01:
            out.append(rng.choice(vocab))
    return out


def run(code: str, args: list[str]) -> tuple[float, float]:
    """Seconds and peak MB of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          cwd=ROOT)
    sec = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"failed: {args}\n{proc.stderr}")
    kb = next(int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("MAXRSS"))
    return sec, kb / 1024.0


def main() -> None:
    argv = [a for a in sys.argv[1:] if a != "--old"]
    n = int(argv[0]) if argv else 30_000
    rng = random.Random(0)
    vocab = [f"w{i}" for i in range(3000)]
    ref = [rng.choice(vocab) for _ in range(n)]
    with tempfile.TemporaryDirectory(prefix="bench_score_wer_long.") as tmp:
        t = Path(tmp)
        files = {}
        for name, words in (("ref", ref), ("a", perturb(ref, vocab, 1)), ("b", perturb(ref, vocab, 2))):
            files[name] = t / f"{name}.txt"
            files[name].write_text("u1 " + " ".join(words) + "\n")
        base = ["score-wer", "-q", "--format", "json", "--ref", str(files["ref"]),
                "--hyp", str(files["a"]), "-o", str(t / "out.json")]
        results = {
            "plain": run(CHILD, base),
            "--details": run(CHILD, base + ["--details", str(t / "details.txt")]),
            "--compare": run(CHILD, base + ["--compare", str(files["b"])]),
        }
        if "--old" in sys.argv[1:]:
            results["old full table (alignment only)"] = run(OLD, [str(files["ref"]), str(files["a"])])
    print(f"one line of {n} reference words")
    print(f"{'':34s} {'seconds':>8s} {'peak MB':>8s}")
    for name, (sec, mb) in results.items():
        print(f"{name:34s} {sec:8.2f} {mb:8.1f}")
    (ps, pm), (ds, dm) = results["plain"], results["--details"]
    print(f"\n--details / plain memory ratio: {dm / pm:.2f} (target: a small constant; "
          f"the full table needs ~{(n + 1) ** 2 / 2**20:.0f} MB of pointers alone)")
    print(f"--details / plain time ratio: {ds / ps:.2f}")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _record import record

    cm = results["--compare"][1]
    record("score_wer_long", dm / pm, "<= 2x", best={"plain_mb": pm, "details_mb": dm, "compare_mb": cm,
                                                      "plain_s": ps, "details_s": ds},
           what=f"score-wer --details / plain, peak RSS on one {n:,}-word line (linear memory; "
                f"--compare {cm / pm:.2f}x; time {ds / ps:.2f}x)")


if __name__ == "__main__":
    main()
