"""Hypothesis posteriors and word confidences of an N-best list.

For one utterance with hypotheses h = 1..N and first-pass totals T_h (natural log, higher is
better), the hypothesis posteriors are a softmax of the scaled totals::

    P(h) = exp(S T_h) / sum_g exp(S T_g)

(``S`` = ``--scale``, the usual acoustic-scale knob: S < 1 flattens the distribution, which
first-pass scores overconfident by the frame-independence assumption need). The confidence of
word k of hypothesis h is the posterior mass of the hypotheses that contain the same word at
the aligned position::

    c(h, k) = sum_g P(g) [g has h's word k at the position aligned to k]

the word posterior of an N-best "consensus" restricted to one hypothesis (Wessel et al. 2001,
N-best approximation; paper 001 Sec. 3 uses word confidences of the 1-best). h always agrees
with itself, so c(h, k) >= P(h), and c lies in [0, 1]. For the 1-best (rank 1) this is exactly
the definition of the issue; the same definition is applied to every row so that every row of
the output carries a valid ``confidence`` column.

Alignment: each pair of hypotheses is aligned once with the unit-cost Levenshtein alignment of
RapidFuzz (C++; words mapped to characters, so one utterance is one string per hypothesis); a
word of one agrees with a word of the other when the alignment matches them ("equal" opcode).
The pair's alignment is used in both directions (so agreement is symmetric). Among
equal-cost alignments RapidFuzz's back-trace decides, which can move a match by one position
around repeated words; sclite's costs (3/3/4) are not used here because the agreement is about
which words the other hypotheses share, not an error count.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from rapidfuzz.distance import Levenshtein

#: where an utterance's words are mapped into Unicode (CJK block: no surrogates for 20k words)
_CODE_BASE = 0x4E00


def softmax_posteriors(totals: Sequence[float], scale: float) -> np.ndarray:
    """P(h) = softmax(scale * totals), computed stably (max subtracted). float64 [N]."""
    z = np.asarray(totals, dtype=np.float64) * scale
    z -= z.max()
    p = np.exp(z)
    p /= p.sum()
    return p


def agreement_matrices(hyps: Sequence[Sequence[str]]) -> list[np.ndarray]:
    """For each hypothesis h, a bool matrix A_h [len(h), N]: A_h[k, g] = g agrees with word k of h.

    ``A_h[:, h]`` is all True. Agreement comes from one Levenshtein alignment per pair of
    hypotheses (see the module docstring). Identical hypotheses agree everywhere.
    """
    codes: dict[str, str] = {}
    strings = []
    for words in hyps:
        chars = []
        for w in words:
            c = codes.get(w)
            if c is None:
                c = codes[w] = chr(_CODE_BASE + len(codes))
            chars.append(c)
        strings.append("".join(chars))
    n = len(strings)
    mats = [np.zeros((len(s), n), dtype=bool) for s in strings]
    for i in range(n):
        mats[i][:, i] = True
    for i in range(n):
        si, mi = strings[i], mats[i]
        for j in range(i + 1, n):
            sj, mj = strings[j], mats[j]
            if si == sj:
                mi[:, j] = True
                mj[:, i] = True
                continue
            for op in Levenshtein.opcodes(si, sj):
                if op.tag == "equal":
                    mi[op.src_start:op.src_end, j] = True
                    mj[op.dest_start:op.dest_end, i] = True
    return mats


def word_confidences(agreement: Sequence[np.ndarray], posteriors: np.ndarray) -> list[np.ndarray]:
    """c(h, k) = A_h[k] . P for every hypothesis h: one float64 array per hypothesis.

    Clipped to [0, 1] against rounding (a sum of posteriors can exceed 1 by an ulp).
    """
    return [np.clip(a @ posteriors, 0.0, 1.0) for a in agreement]


#: decimals of a written confidence; metrics are computed on the written (rounded) values
DECIMALS = 6


def format_confidences(values: np.ndarray) -> str:
    """The ``confidence`` field: space-separated, ``DECIMALS`` decimals."""
    return " ".join(f"{v:.{DECIMALS}f}" for v in values.tolist())
