"""Benchmark: score-wer against sclite, jiwer and a plain RapidFuzz opcodes loop, in one run.

Data: 100,000 reference/hypothesis pairs (~1.9M reference words) made from the bundled
LibriSpeech references (test-clean + test-other, repeated), each hypothesis perturbed with a
seeded RNG (about 8% word errors: substitutions by a random vocabulary word, deletions,
insertions). Same pairs for every tool.

Timed:
* ``score-wer (library)``: :func:`asrpriv.wer.report.score` on transcripts already in memory;
* ``score-wer (library, with reading)``: reading both files + scoring;
* ``score-wer (CLI)``: ``python -m asrpriv score-wer --format json`` as a process;
* ``sclite``: ``sclite -r ref.trn trn -h hyp.trn trn -i rm -o rsum`` (when sctk is installed);
* ``jiwer.process_words`` on the sentence lists;
* ``RapidFuzz loop``: the baseline, ``Levenshtein.opcodes`` on word lists, counting S/D/I.

Prints seconds and ratios. Targets: score-wer faster than sclite, and the library no slower
than 1.2x the plain RapidFuzz loop. Usage: ``python benchmarks/bench_score_wer.py [N]``.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBRI = ROOT / "examples" / "data" / "librispeech-hyporadise"


def make_pairs(n: int, seed: int = 0) -> tuple[list[tuple[str, list[str]]], list[list[str]]]:
    refs = []
    for name in ("test-clean.ref.txt", "test-other.ref.txt"):
        for line in open(LIBRI / name, encoding="utf-8"):
            parts = line.split()
            if parts:
                refs.append(parts[1:])
    vocab = sorted({w for r in refs for w in r})
    rng = random.Random(seed)
    pairs, hyps = [], []
    for k in range(n):
        words = refs[k % len(refs)]
        spk = f"s{k % 500:03d}"
        hyp = []
        for w in words:
            u = rng.random()
            if u < 0.05:
                hyp.append(rng.choice(vocab))
            elif u < 0.07:
                continue
            else:
                hyp.append(w)
            if rng.random() < 0.01:
                hyp.append(rng.choice(vocab))
        pairs.append((f"{spk}-{k:06d}", words))
        hyps.append(hyp)
    return pairs, hyps


def timed(fn, repeat: int = 1):
    best = float("inf")
    value = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return best, value


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    pairs, hyps = make_pairs(n)
    n_words = sum(len(w) for _, w in pairs)
    print(f"{n} utterance pairs, {n_words} reference words", flush=True)

    from rapidfuzz.distance import Levenshtein

    from asrpriv.wer.report import score
    from asrpriv.wer.transcripts import Normalizer, Transcript, read_transcript

    tmp = Path(tempfile.mkdtemp(prefix="bench_score_wer."))
    try:
        ref_txt, hyp_txt = tmp / "ref.txt", tmp / "hyp.txt"
        ref_trn, hyp_trn = tmp / "ref.trn", tmp / "hyp.trn"
        with open(ref_txt, "w") as rt, open(hyp_txt, "w") as ht, \
                open(ref_trn, "w") as rn, open(hyp_trn, "w") as hn:
            for (utt, words), hyp in zip(pairs, hyps):
                rt.write(f"{utt} {' '.join(words)}\n")
                ht.write(f"{utt} {' '.join(hyp)}\n")
                rn.write(f"{' '.join(words)} ({utt})\n")
                hn.write(f"{' '.join(hyp)} ({utt})\n")

        norm = Normalizer()
        ref_t = Transcript(None, "kaldi", {u: w for u, w in pairs}, {})
        hyp_t = Transcript(None, "kaldi", {u: h for (u, _), h in zip(pairs, hyps)}, {})
        ref_lists = [w for _, w in pairs]

        def rapidfuzz_loop():
            s = d = i = 0
            for r, h in zip(ref_lists, hyps):
                for tag, i1, i2, j1, j2 in Levenshtein.opcodes(r, h):
                    if tag == "replace":
                        s += i2 - i1
                    elif tag == "delete":
                        d += i2 - i1
                    elif tag == "insert":
                        i += j2 - j1
            return s + d + i

        results = {}
        # interleaved, best of 5: the two are compared on a possibly busy machine
        rf_best = lib_best = float("inf")
        for _ in range(5):
            sec, rf_err = timed(rapidfuzz_loop)
            rf_best = min(rf_best, sec)
            sec, rep = timed(lambda: score(ref_t, hyp_t, norm))
            lib_best = min(lib_best, sec)
        results["RapidFuzz opcodes loop"] = rf_best
        results["score-wer (library)"] = lib_best

        def read_and_score():
            return score(read_transcript(str(ref_txt), "auto", norm),
                         read_transcript(str(hyp_txt), "auto", norm), norm)

        results["score-wer (library, with reading)"], _ = timed(read_and_score, 3)
        cmd = [sys.executable, "-m", "asrpriv", "score-wer", "--ref", str(ref_txt), "--hyp",
               str(hyp_txt), "--format", "json", "-o", str(tmp / "out.json")]
        results["score-wer (CLI)"], _ = timed(lambda: subprocess.run(cmd, check=True), 1)

        sclite = shutil.which("sclite") or "/usr/lib/sctk/bin/sclite"
        if os.access(sclite, os.X_OK):
            sc_cmd = [sclite, "-r", str(ref_trn), "trn", "-h", str(hyp_trn), "trn", "-i", "rm",
                      "-o", "rsum", "-O", str(tmp), "-f", "0"]
            results["sclite"], _ = timed(
                lambda: subprocess.run(sc_cmd, check=True, capture_output=True), 1)
            raw = (tmp / "hyp.trn.raw").read_text()
            sum_line = next(line for line in raw.splitlines() if "| Sum" in line)
            print(f"sclite: {' '.join(sum_line.split())}")
        else:
            print("sclite: not installed, skipped")

        import jiwer

        ref_s = [" ".join(w) for w in ref_lists]
        hyp_s = [" ".join(h) for h in hyps]
        results["jiwer.process_words"], jw = timed(lambda: jiwer.process_words(ref_s, hyp_s), 1)

        t = rep.totals
        print(f"score-wer: N={t.ref_words} S={t.substitutions} D={t.deletions} "
              f"I={t.insertions} E={t.errors} WER={t.wer:.3f}%")
        print(f"jiwer: E={jw.substitutions + jw.deletions + jw.insertions}; "
              f"RapidFuzz loop: E={rf_err}")
        base = results["RapidFuzz opcodes loop"]
        print(f"\n{'':38s} {'seconds':>8s} {'x RF loop':>10s}")
        for name, sec in results.items():
            print(f"{name:38s} {sec:8.2f} {sec / base:10.2f}")
        lib = results["score-wer (library)"]
        print(f"\nscore-wer library / RapidFuzz loop: {lib / base:.2f} (target <= 1.2)")
        from _record import record

        record("score_wer", lib / base, "<= 1.2x", best={"library_s": lib, "rapidfuzz_s": base},
               what="score-wer library / a plain RapidFuzz opcodes loop")
        if "sclite" in results:
            print(f"sclite / score-wer CLI: {results['sclite'] / results['score-wer (CLI)']:.2f}"
                  " (target > 1)")
        print(f"jiwer / score-wer library: {results['jiwer.process_words'] / lib:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
