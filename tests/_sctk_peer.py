"""Running the real SCTK tools (Debian's sctk: ``sclite``, ``sc_stats``) on trn files, for
differential tests of ``score-wer`` (tests/test_score_wer_differential.py and others).

Everything here parses the peer tools' own outputs (``.raw`` Sum row, ``.sgml`` PATH lines,
sc_stats' ``MTCH_PR_RESULTS`` line); nothing is computed by asrpriv.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest


def sctk_bin(tool: str) -> str | None:
    for cand in (f"/usr/lib/sctk/bin/{tool}", shutil.which(tool)):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


needs_sctk = pytest.mark.skipif(sctk_bin("sclite") is None or sctk_bin("sc_stats") is None,
                                reason="sctk (sclite, sc_stats) not installed; "
                                       "bin/install-system-deps installs it")

SUM = re.compile(r"\| Sum\S* +\|\s*(\d+)\s+(\d+)\s*\|\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)")
SPK = re.compile(r"^\s*\|\s*(\S+)\s+\|\s*(\d+)\s+(\d+)\s*\|\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\|",
                 re.M)
KEYS = ("sentences", "ref_words", "correct", "substitutions", "deletions", "insertions",
        "errors", "sentence_errors")


def write_trn(path: Path, table: dict[str, list[str] | str]) -> str:
    """``{utt_id: words or a text}`` as a trn file (UTF-8)."""
    with open(path, "w", encoding="utf-8") as f:
        for utt, words in table.items():
            text = words if isinstance(words, str) else " ".join(words)
            f.write(f"{text} ({utt})\n")
    return str(path)


def sclite(workdir: Path, ref_trn: str, hyp_trns: list[str], *, encoding: str = "utf-8",
           extra: tuple[str, ...] = (), id_style: str = "spu_id") -> dict[str, dict]:
    """Run sclite on trn files; per hypothesis file name: ``{"sum": {KEYS}, "speakers": {spk: {KEYS}},
    "paths": {utt: "CSDI..."}}`` (the eval letters of its sgml PATH, in order)."""
    args = [sctk_bin("sclite"), "-r", ref_trn, "trn"]
    for h in hyp_trns:
        args += ["-h", h, "trn"]
    args += ["-i", id_style, "-e", encoding, *extra, "-o", "rsum", "sgml", "-O", str(workdir), "-f", "0"]
    proc = subprocess.run(args, capture_output=True)
    if proc.returncode != 0:
        raise RuntimeError(f"sclite failed ({proc.returncode}): {proc.stderr.decode(errors='replace')}")
    result = {}
    for h in hyp_trns:
        name = os.path.basename(h)
        sys_txt = (workdir / f"{name}.raw").read_text(encoding="utf-8", errors="replace")
        m = SUM.search(sys_txt)
        total = dict(zip(KEYS, map(int, m.groups()))) if m else None
        speakers = {}
        for sm in SPK.finditer(sys_txt):
            if sm.group(1) in ("SPKR",) or sm.group(1).startswith("Sum"):
                continue
            speakers[sm.group(1)] = dict(zip(KEYS, map(int, sm.groups()[1:])))
        paths, cur = {}, None
        for line in open(workdir / f"{name}.sgml", encoding="utf-8", errors="replace"):
            pm = re.match(r'<PATH id="\((.*?)\)"', line)
            if pm:
                cur = pm.group(1)
                paths[cur] = ""
            elif cur is not None:
                if not line.startswith("</PATH"):
                    paths[cur] = "".join(tok[0] for tok in line.strip().split(":") if tok)
                cur = None
        result[name] = {"sum": total, "speakers": speakers, "paths": paths}
    return result


def sc_stats(workdir: Path, a_trn: str, b_trn: str) -> dict:
    """sc_stats -t mapsswe on the two systems' sgml files (from :func:`sclite`):
    ``{"segments", "pct_a", "pct_b", "mean", "sd", "z"}`` as the strings it prints."""
    sgml = b"".join((workdir / f"{os.path.basename(p)}.sgml").read_bytes() for p in (a_trn, b_trn))
    proc = subprocess.run([sctk_bin("sc_stats"), "-p", "-t", "mapsswe", "-v", "-n", "-"],
                          input=sgml, capture_output=True, cwd=workdir)
    out = proc.stdout.decode(errors="replace")
    m = re.search(r"\(# segs: (\d+)\).*\(% Error:\s*(\S+)\s+(\S+)\) \(mean: (\S+)\) "
                  r"\(std dev: (\S+)\) \(Z Stat: (\S+)\)", out)
    if m is None:
        raise RuntimeError(f"sc_stats gave no result ({proc.returncode}): {out[-500:]}"
                           f"{proc.stderr.decode(errors='replace')[-500:]}")
    return {"segments": int(m.group(1)), "pct_a": m.group(2), "pct_b": m.group(3),
            "mean": m.group(4), "sd": m.group(5), "z": m.group(6)}
