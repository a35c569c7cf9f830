"""An isotonic calibration map of word confidences, stored as its breakpoints.

Fitting (needs scikit-learn): ``IsotonicRegression(increasing=True, y_min=0, y_max=1,
out_of_bounds="clip")`` of the word correctness labels (1 correct, 0 incorrect) on the raw
confidences — the monotone map that minimizes squared error (pool-adjacent-violators), as paper
001 calibrates its confidence classifier. The fitted model is a piecewise-linear function
through the points ``(x_k, y_k)`` (scikit-learn's ``X_thresholds_``/``y_thresholds_``), constant
outside them; that is all the file keeps.

Applying needs only numpy: ``np.interp(c, x, y)`` (linear between breakpoints, clipped to
``y_0``/``y_last`` outside, which is ``out_of_bounds="clip"``), so no pickle and no
scikit-learn at apply time.

File (JSON, one object)::

    {"format": "asrpriv-calibration/1", "method": "isotonic", "x": [...], "y": [...],
     "words": N, "correct": n, ...settings of the raw confidences (scale, total, ...)}
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import IO

import numpy as np

from asrpriv.errors import InputError
from asrpriv.io.jsontext import parse_json
from asrpriv.io.lines import iter_lines

FORMAT = "asrpriv-calibration/1"


@dataclass
class Calibration:
    """Breakpoints of a monotone map [0, 1] -> [0, 1] and the settings it was fitted with."""

    x: list[float]
    y: list[float]
    meta: dict = field(default_factory=dict)

    def apply(self, conf: np.ndarray) -> np.ndarray:
        """Calibrated confidences: linear interpolation between breakpoints, clipped outside."""
        return np.interp(np.asarray(conf, dtype=np.float64), self.x, self.y)


def fit_isotonic(conf: np.ndarray, correct: np.ndarray, meta: dict | None = None) -> Calibration:
    """Fit the isotonic map of ``correct`` (bool) on ``conf`` (raw confidences in [0, 1])."""
    from sklearn.isotonic import IsotonicRegression

    conf = np.asarray(conf, dtype=np.float64)
    labels = np.asarray(correct, dtype=np.float64)
    if conf.size == 0:
        raise ValueError("no words to fit a calibration on")
    model = IsotonicRegression(increasing=True, y_min=0.0, y_max=1.0, out_of_bounds="clip")
    model.fit(conf, labels)
    info = {"words": int(conf.size), "correct": int(labels.sum())}
    info.update(meta or {})
    return Calibration([float(v) for v in model.X_thresholds_],
                       [float(v) for v in model.y_thresholds_], info)


def write_calibration(stream: IO[str], cal: Calibration) -> None:
    payload = {"format": FORMAT, "method": "isotonic", "x": cal.x, "y": cal.y}
    payload.update({k: v for k, v in cal.meta.items() if k not in payload})
    json.dump(payload, stream, indent=1)
    stream.write("\n")


def read_calibration(path: str) -> Calibration:
    """Read and check a calibration file (x strictly increasing, y non-decreasing in [0, 1])."""
    text = "\n".join(line for _n, line in iter_lines(path))
    payload = parse_json(text, path, None, "a JSON calibration file")
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise InputError(path, None, f"not a calibration file (expected \"format\": \"{FORMAT}\")")
    x, y = payload.get("x"), payload.get("y")
    if (not isinstance(x, list) or not isinstance(y, list) or not x or len(x) != len(y)
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in x + y)):
        raise InputError(path, None, "x and y must be non-empty lists of numbers of the same length")
    if not all(math.isfinite(v) for v in x + y):
        raise InputError(path, None, "x and y must be finite")
    if any(b <= a for a, b in zip(x, x[1:])):
        raise InputError(path, None, "x must be strictly increasing")
    if any(b < a for a, b in zip(y, y[1:])) or y[0] < 0.0 or y[-1] > 1.0:
        raise InputError(path, None, "y must be non-decreasing within [0, 1] (a monotone map)")
    meta = {k: v for k, v in payload.items() if k not in ("format", "method", "x", "y")}
    return Calibration([float(v) for v in x], [float(v) for v in y], meta)
