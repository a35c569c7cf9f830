#!/usr/bin/env python3
"""count-unigrams --text vs `tr -s ' ' '\\n' | sort | uniq -c` on >= 100 MB of real text, and
start-up times of `asrpriv --help` and `count-unigrams` on a tiny file.

Prints ratios measured in this run. Targets: >= 5x faster than the shell pipeline;
`asrpriv --help` < 0.3 s; count-unigrams on a tiny file < 0.5 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = ROOT / "examples" / "data" / "ami" / "train_text"
ASRPRIV = [sys.executable, "-m", "asrpriv"]


def timed(cmd, **kwargs) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, **kwargs)
    return time.perf_counter() - start


def best_of(n, cmd, **kwargs) -> float:
    return min(timed(cmd, **kwargs) for _ in range(n))


def main() -> None:
    target_mb = float(os.environ.get("BENCH_MB", "100"))
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "big.txt"
        # the AMI training words without ids, repeated to the target size
        words = "".join(line.split(" ", 1)[1] if " " in line else "\n"
                        for line in TEXT.read_text(encoding="utf-8").splitlines(keepends=True))
        reps = int(target_mb * 1e6 / len(words.encode())) + 1
        with open(big, "w", encoding="utf-8") as f:
            for _ in range(reps):
                f.write(words)
        size_mb = big.stat().st_size / 1e6
        out = Path(tmp) / "out"
        ours = best_of(2, [*ASRPRIV, "count-unigrams", "--text", str(big), "-o", str(out)])
        # as a user types it (this machine's locale, C.UTF-8 here), and with byte collation
        shell = timed(["bash", "-c", f"tr -s ' ' '\\n' < {big} | sort | uniq -c > {out}.sh"])
        shell_c = timed(["bash", "-c", f"export LC_ALL=C; tr -s ' ' '\\n' < {big} | sort | uniq -c > {out}.sh"])
        locale = os.environ.get("LC_ALL") or os.environ.get("LANG") or "POSIX"
        print(f"count-unigrams --text on {size_mb:.0f} MB ({os.cpu_count()} cores): {ours:.2f} s")
        print(f"  tr|sort|uniq -c, locale {locale}: {shell:.2f} s -> speed-up {shell / ours:.1f}x (target >= 5x)")
        print(f"  tr|sort|uniq -c, LC_ALL=C:      {shell_c:.2f} s -> speed-up {shell_c / ours:.1f}x")
        tiny = Path(tmp) / "tiny.tsv"
        tiny.write_text("utt_id\trank\ttext\nu1\t1\thello world\nu1\t2\thello word\n")
        help_s = best_of(5, [*ASRPRIV, "--help"], stdout=subprocess.DEVNULL)
        tiny_s = best_of(5, [*ASRPRIV, "count-unigrams", str(tiny)], stdout=subprocess.DEVNULL)
        py_s = best_of(5, [sys.executable, "-c", "pass"])
        print(f"asrpriv --help: {help_s:.3f} s (target < 0.3 s; bare python start {py_s:.3f} s)")
        print(f"count-unigrams on a tiny file: {tiny_s:.3f} s (target < 0.5 s)")
        from _record import record

        record("count_unigrams", shell / ours, ">= 5x", repeats=2,
               best={"ours_s": ours, "shell_s": shell, "shell_lc_c_s": shell_c},
               help_s=help_s, tiny_s=tiny_s,
               what=f"count-unigrams --text speed-up over tr|sort|uniq -c ({size_mb:.0f} MB)")


if __name__ == "__main__":
    main()
