#!/usr/bin/env python3
"""interpolate: EM weights of 3 LMs on 10k held-out sentences vs computing the streams alone.

LMs: two 3-grams trained (train-ngram's library) on different parts of AMI train_text, and the
2M-bigram first-pass ARPA. Held-out: 10,000 other train_text sentences.

Baseline, measured in the same run, in its own process: load the three LMs with kenlm and
compute every token's log-probability under each (``full_scores``): the probability streams
alone, which any weight estimator needs. Timed against it: ``asrpriv interpolate --heldout``
end to end (a real process: loading, streams, EM to 1e-6, JSON). Target: <= 2x. Each is run
twice, alternated; the best of each is compared.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AMI = ROOT / "examples" / "data" / "ami"
FIRSTPASS = AMI / "firstpass-en-us-2gram.arpa.gz"

BASELINE = """
import sys, kenlm
paths, text = sys.argv[1:-1], sys.argv[-1]
sents = [line.split(None, 1)[1].strip() if len(line.split()) > 1 else "" for line in open(text)]
for p in paths:
    c = kenlm.Config(); c.show_progress = False
    m = kenlm.Model(p, c)
    stream = [lp for s in sents for lp, _, _ in m.full_scores(s)]
print(len(stream))
"""


def main() -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from asrpriv.ngram import train
    from asrpriv.ngram.counting import read_sentences

    sents = list(read_sentences(str(AMI / "train_text"), ids=True))
    lines = [ln for ln in (AMI / "train_text").read_text().splitlines() if len(ln.split()) > 1]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        a, b = tmp / "a.arpa", tmp / "b.arpa"
        train(sents[:25000], 3).write(str(a))
        train(sents[25000:50000], 3).write(str(b))
        held = tmp / "held.txt"
        held.write_text("\n".join(lines[-10000:]) + "\n")
        lms = [str(a), str(b), str(FIRSTPASS)]
        base_times, cli_times = [], []
        out = None
        for _ in range(2):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", BASELINE, *lms, str(held)], check=True,
                           capture_output=True)
            base_times.append(time.perf_counter() - start)
            args = [sys.executable, "-m", "asrpriv", "interpolate", "--ids", "--heldout", str(held)]
            for p in lms:
                args += ["--lm", p]
            start = time.perf_counter()
            proc = subprocess.run(args, check=True, capture_output=True, text=True)
            cli_times.append(time.perf_counter() - start)
            out = json.loads(proc.stdout)
    t_base, t_cli = min(base_times), min(cli_times)
    print(f"held-out: 10000 sentences, {out['tokens']} tokens; weights "
          f"{[round(w, 4) for w in out['weights']]}, perplexity {out['perplexity']:.2f} "
          f"(alone: {[round(p, 1) for p in out['component_perplexities']]}), "
          f"EM {out['iterations']} steps")
    print(f"inside interpolate: streams {out['seconds']['streams']:.2f} s, EM {out['seconds']['em']:.3f} s")
    print(f"baseline kenlm load + streams (process): {base_times}")
    print(f"asrpriv interpolate end to end:          {cli_times}")
    print(f"ratio (best of each): {t_cli / t_base:.2f}x  (target <= 2x)")
    from _record import record

    record("interpolate", t_cli / t_base, "<= 2x", repeats=len(cli_times),
           median=statistics.median(c / b for c, b in zip(cli_times, base_times)),
           best={"interpolate_s": t_cli, "kenlm_streams_s": t_base},
           what="interpolate --heldout (3 LMs) / kenlm loading them and computing the streams")


if __name__ == "__main__":
    main()
