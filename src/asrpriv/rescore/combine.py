"""The second-pass total score, and the weights file that carries its weights.

Total score of a hypothesis (natural log, higher is better)::

    total = acoustic + lm_weight * ((1 - w) * lm + w * nnlm) + word_penalty * n_words

- ``acoustic``: the ``am_score`` column; else the first-pass total (``first_pass_score``, which
  ``rescore-nbest`` writes when it replaces a ``score`` column, or ``score`` unless the input is
  already a rescored output, marked by its ``first_pass_rank`` column); else, for lists
  that carry only ranks, the rank prior ``-(first_pass_rank - 1)`` (one nat per rank step; tune
  ``lm_weight`` against it with ``tune-weights``).
- ``lm``: the n-gram score of ``--ngram`` if given, else the first-pass ``lm_score`` column.
- ``nnlm``: the neural-LM score. ``w`` is the NNLM interpolation weight (paper 000 §3: 0.5).
  Without an NNLM score ``w`` is taken as 0; without an n-gram score, as 1.
- ``n_words``: words in the hypothesis (``</s>`` not counted).

Defaults follow the bundled AMI first pass (``am + 6.5 * lm + ln(0.65) * n_words``): lm_weight
6.5, word_penalty -0.431, and w = 0.5 as in the paper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import IO

from asrpriv.errors import InputError
from asrpriv.io.lines import iter_lines

DEFAULT_LM_WEIGHT = 6.5
DEFAULT_NNLM_WEIGHT = 0.5
DEFAULT_WORD_PENALTY = round(math.log(0.65), 3)  # -0.431 nats per word

WEIGHT_KEYS = ("lm_weight", "nnlm_weight", "word_penalty")


@dataclass
class Weights:
    """The three weights of the total score."""

    lm_weight: float = DEFAULT_LM_WEIGHT
    nnlm_weight: float = DEFAULT_NNLM_WEIGHT
    word_penalty: float = DEFAULT_WORD_PENALTY

    def total(self, acoustic: float, lm: float | None, nnlm: float | None, n_words: int) -> float:
        """The combined score; ``lm``/``nnlm`` None when that LM score does not exist."""
        if lm is None and nnlm is None:
            lm_part = 0.0
        elif nnlm is None:
            lm_part = lm
        elif lm is None:
            lm_part = nnlm
        else:
            w = self.nnlm_weight
            lm_part = (1.0 - w) * lm + w * nnlm
        return acoustic + self.lm_weight * lm_part + self.word_penalty * n_words


@dataclass
class WeightsFile:
    """A weights file: the weights and any other ``#key=value`` lines (WER, grid...)."""

    weights: Weights
    meta: dict[str, str] = field(default_factory=dict)


def read_weights(path: str) -> WeightsFile:
    """Read ``#key=value`` lines; ``lm_weight``, ``nnlm_weight``, ``word_penalty`` are required."""
    meta: dict[str, str] = {}
    values: dict[str, float] = {}
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        if not line.startswith("#") or "=" not in line:
            raise InputError(path, lineno, "expected '#key=value' lines (a weights file from tune-weights)")
        key, _, value = line[1:].partition("=")
        key, value = key.strip(), value.strip()
        if key in WEIGHT_KEYS:
            try:
                number = float(value)
            except ValueError:
                raise InputError(path, lineno, f"{key}: expected a number, got {value!r}") from None
            if not math.isfinite(number):
                raise InputError(path, lineno, f"{key}: expected a finite number, got {value!r}")
            values[key] = number
        else:
            meta[key] = value
    missing = [k for k in WEIGHT_KEYS if k not in values]
    if missing:
        raise InputError(path, None, f"weights file lacks {', '.join(missing)}")
    return WeightsFile(Weights(**values), meta)


def write_weights(stream: IO[str], weights: Weights, meta: dict[str, str] | None = None) -> None:
    """Write the weights first, then the other metadata, as ``#key=value`` lines."""
    stream.write(f"#lm_weight={weights.lm_weight:.6g}\n")
    stream.write(f"#nnlm_weight={weights.nnlm_weight:.6g}\n")
    stream.write(f"#word_penalty={weights.word_penalty:.6g}\n")
    for key, value in (meta or {}).items():
        stream.write(f"#{key}={value}\n")
