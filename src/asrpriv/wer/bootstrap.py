"""Bootstrap confidence intervals for WER and for the WER difference of two systems.

Units (utterances, or speakers: all utterances of a speaker together) are resampled with
replacement: resample ``b`` takes the units ``idx[b] = rng.integers(0, U, size=U)`` with
``rng = numpy.random.default_rng(seed)``, drawn for all resamples at once as one
``(B, U)`` array (in blocks of rows, which gives the same stream). Its WER is
``100 * sum(errors[idx]) / sum(ref_words[idx])`` percent; with a second system on the same
units (paired resampling), the difference ``WER_A - WER_B`` uses the same ``idx``. The
interval is the percentile interval: the ``(1 - level) / 2`` and ``(1 + level) / 2``
quantiles of the B values (numpy's default linear interpolation). Efron & Tibshirani
(1993), ch. 13; Bisani & Ney (2004) for ASR.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Sequence

#: (B x U) draws per block, to bound memory
BLOCK = 1 << 22


@dataclass
class BootstrapResult:
    unit: str
    units: int
    resamples: int
    level: float
    seed: int
    wer: float
    wer_low: float
    wer_high: float
    diff: float | None = None
    diff_low: float | None = None
    diff_high: float | None = None

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items()}


def resample_indices(rng, units: int, resamples: int):
    """Yield ``(B_block, U)`` index arrays; concatenated they equal one ``(B, U)`` draw."""
    rows = max(1, BLOCK // max(units, 1))
    done = 0
    while done < resamples:
        k = min(rows, resamples - done)
        yield rng.integers(0, units, size=(k, units))
        done += k


def bootstrap(errors: Sequence[int], ref_words: Sequence[int], resamples: int, level: float = 0.95,
              seed: int | None = None, errors_b: Sequence[int] | None = None,
              unit: str = "utterance") -> BootstrapResult:
    """Percentile intervals of WER (and WER_A - WER_B), in percent, over ``resamples`` draws.

    ``errors[u]``, ``ref_words[u]`` (and ``errors_b[u]``) are the totals of unit ``u``. A
    resample with no reference words counts as WER 0 (it has no errors either when every
    unit with errors has words; otherwise its WER is undefined and it is dropped).
    """
    import numpy as np

    if seed is None:
        seed = secrets.randbits(63)
    rng = np.random.default_rng(seed)
    e = np.asarray(errors, dtype=np.float64)
    w = np.asarray(ref_words, dtype=np.float64)
    eb = None if errors_b is None else np.asarray(errors_b, dtype=np.float64)
    units = len(e)
    wers, diffs = [], []
    for idx in resample_indices(rng, units, resamples):
        se, sw = e[idx].sum(axis=1), w[idx].sum(axis=1)
        ok = (sw > 0) | (se == 0)
        safe = np.where(sw > 0, sw, 1.0)
        wers.append((100.0 * se / safe)[ok])
        if eb is not None:
            diffs.append((100.0 * (se - eb[idx].sum(axis=1)) / safe)[ok])
    wer_all = np.concatenate(wers)
    q = [100.0 * (1.0 - level) / 2.0, 100.0 * (1.0 + level) / 2.0]
    total_w = w.sum()
    point = 100.0 * e.sum() / total_w if total_w else 0.0
    lo, hi = np.percentile(wer_all, q)
    result = BootstrapResult(unit, units, resamples, level, seed, point, float(lo), float(hi))
    if eb is not None:
        d = np.concatenate(diffs)
        dlo, dhi = np.percentile(d, q)
        result.diff = 100.0 * (e.sum() - eb.sum()) / total_w if total_w else 0.0
        result.diff_low, result.diff_high = float(dlo), float(dhi)
    return result


def unit_totals(utt_counts: dict[str, tuple[int, int]], utt2unit: dict[str, str] | None):
    """Group ``{utt: (errors, ref_words)}`` by unit (utterance itself without a map).

    Returns ``(unit names, errors, words)`` in first-seen order.
    """
    names: list[str] = []
    pos: dict[str, int] = {}
    errs: list[int] = []
    words: list[int] = []
    for utt, (err, n) in utt_counts.items():
        unit = utt if utt2unit is None else utt2unit[utt]
        if unit not in pos:
            pos[unit] = len(names)
            names.append(unit)
            errs.append(0)
            words.append(0)
        errs[pos[unit]] += err
        words[pos[unit]] += n
    return names, errs, words
