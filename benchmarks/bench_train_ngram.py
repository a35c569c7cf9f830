#!/usr/bin/env python3
"""train-ngram on the full AMI train_text (807k words), against a pure-Python baseline.

Baseline, measured in the same run: counting the 1..3-grams of the same sentences with
``collections.Counter`` of tuples (the least a dict-based trainer must do, before any
smoothing). Prints the wall time of ``asrpriv train-ngram --ids -o FILE`` (a real process:
reading, counting, Kneser-Ney, writing ARPA) and of the library call alone, and their ratio
to the baseline. Target: the whole step in a few seconds (< 5 s on the 2-core dev machine).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = ROOT / "examples" / "data" / "ami" / "train_text"


def baseline_counts(sentences, order=3):
    tables = [Counter() for _ in range(order)]
    for words in sentences:
        s = ["<s>", *words, "</s>"]
        for n in range(1, order + 1):
            tables[n - 1].update(zip(*(s[i:] for i in range(n))))
    return tables


def main() -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from asrpriv.ngram import train
    from asrpriv.ngram.counting import read_sentences

    sentences = list(read_sentences(str(TEXT), ids=True))
    start = time.perf_counter()
    tables = baseline_counts(sentences)
    t_base = time.perf_counter() - start

    start = time.perf_counter()
    model = train(sentences, 3)
    t_lib = time.perf_counter() - start
    assert model.ngram_counts()[1:] == [len(t) for t in tables[1:]]

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "lm.arpa"
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "asrpriv", "train-ngram", "--ids", "-q", str(TEXT),
                        "-o", str(out)], check=True)
        t_cli = time.perf_counter() - start
        size = out.stat().st_size

    words = sum(len(s) for s in sentences)
    print(f"AMI train_text: {len(sentences)} sentences, {words} words; 3-gram counts {model.ngram_counts()}")
    print(f"baseline Counter-of-tuples counting only: {t_base:.2f} s")
    print(f"library count + modified KN (no I/O):     {t_lib:.2f} s  ratio {t_lib / t_base:.2f}x baseline")
    print(f"asrpriv train-ngram end to end (ARPA {size / 1e6:.1f} MB): {t_cli:.2f} s  "
          f"ratio {t_cli / t_base:.2f}x baseline")
    from _record import record

    record("train_ngram", t_cli / t_base, "none", repeats=1,
           best={"cli_s": t_cli, "library_s": t_lib, "counter_s": t_base},
           what="train-ngram end to end / Counter-of-tuples counting (no target: context)")


if __name__ == "__main__":
    main()
