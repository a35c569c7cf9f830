"""The Gaussian mechanism on model deltas, and where its noise comes from.

**The mechanism.** A vector x whose L2 sensitivity (add/remove one unit) is S is released as
x + N(0, (z * S)^2 I) with z the noise multiplier (paper 001 Sec. 2.4; Abadi et al. 2016).
One client's delta clipped to L2 norm C (over *all* parameters together) has sensitivity C
(local DP of that client's update: :func:`noisy_delta`); the server's capped-weighted sum of
clipped deltas has sensitivity C too, and its noise is added there
(:mod:`asrpriv.federated.aggregate`). Accounting: :mod:`asrpriv.privacy.accounting`.

**The noise source.** Without a seed, every uniform variate comes from ``os.urandom`` (the
kernel's CSPRNG; 53 random bits per variate), turned into standard normals by the Box-Muller
transform in float64 (numpy). This is a cryptographically secure *stream*, which a PRNG such
as torch's Mersenne Twister or numpy's PCG64 is not (their state can be recovered from enough
outputs, and with it every noise draw of the round). With ``seed``, the same transform reads
numpy's PCG64 seeded by :func:`asrpriv.privacy.randomness.seeded_state`: repeatable and
**not private** (tests only; the output's history is marked seeded).

**What is not solved (honestly).** The noise is floating-point: the Box-Muller output takes
only finitely many values (its tails stop at sqrt(-2 ln 2^-53) ~ 8.57 sigma), and adding a
float64 sample to a float value then rounding to float32 makes the set of reachable outputs
depend on the input -- the family of attacks of Mironov (CCS 2012, on the Laplace mechanism)
and Jin et al. (IEEE S&P 2022, "Are we there yet? Timing and floating-point attacks on
differential privacy systems", which includes Gaussian samplers). No known attack of that kind
has been shown on a multi-million-coordinate model average, but the guarantee proven by the
accountant is the one of the ideal real-valued mechanism, not of this implementation. An exact
discrete Gaussian (Canonne, Kamath & Steinke 2020) would fix that, at Python speed (tens of
microseconds a coordinate: minutes per round for the paper's model), so it was not chosen.
The counts' Laplace mechanism (:mod:`asrpriv.privacy.laplace`) is exact; this one is not.
"""

from __future__ import annotations

import math
import os

from asrpriv.federated.clip import clip_factor, clip_l2, l2_norm  # noqa: F401  (re-exported)
from asrpriv.federated.clip import check_clip

#: uniforms drawn per chunk (bounds the transient memory of a draw: 16 bytes per variate)
CHUNK = 1 << 18


class NoiseSource:
    """Standard normal variates: from ``os.urandom`` (secure), or from a seeded PCG64 (tests)."""

    def __init__(self, seed: int | None = None) -> None:
        self.seeded = seed is not None
        self._gen = None
        if seed is not None:
            import numpy as np

            from asrpriv.privacy.randomness import seeded_state

            self._gen = np.random.Generator(np.random.PCG64(seeded_state(seed)))

    def _uniform_open0(self, n: int):
        """n float64 uniforms on (0, 1]: (k + 1) / 2^53 with k uniform on [0, 2^53)."""
        import numpy as np

        if self._gen is None:
            raw = np.frombuffer(os.urandom(8 * n), dtype=np.uint64)
        else:
            raw = self._gen.bit_generator.random_raw(n)
        return ((raw >> np.uint64(11)).astype(np.float64) + 1.0) * (2.0 ** -53)

    def normals(self, n: int):
        """n independent N(0, 1) draws as a float64 numpy array (Box-Muller, both outputs)."""
        import numpy as np

        out = np.empty(n, dtype=np.float64)
        done = 0
        while done < n:
            pairs = min(CHUNK, (n - done + 1) // 2)
            u = self._uniform_open0(2 * pairs)
            radius = np.sqrt(-2.0 * np.log(u[:pairs]))
            angle = (2.0 * math.pi) * u[pairs:]
            take = min(2 * pairs, n - done)
            both = np.concatenate([radius * np.cos(angle), radius * np.sin(angle)])
            out[done:done + take] = both[:take]
            done += take
        return out


def add_gaussian_noise(state: dict, std: float, source: NoiseSource) -> dict:
    """Add independent N(0, std^2) noise to every coordinate of every floating tensor, in place.

    The noise is drawn in float64, in chunks of :data:`CHUNK` coordinates (bounded transient
    memory), tensors in name order (a seeded run is repeatable), and added in the tensor's dtype
    (a float64 accumulator keeps all of it). ``std == 0`` draws nothing and changes nothing, so
    a noise multiplier of 0 gives exactly the noise-free result through the same code path.
    """
    import torch

    if not (std >= 0 and math.isfinite(std)):
        raise ValueError(f"noise standard deviation must be finite and >= 0, got {std!r}")
    if std == 0:
        return state
    for name in sorted(state):
        tensor = state[name]
        if not tensor.is_floating_point():
            continue
        flat = tensor.view(-1)
        for start in range(0, flat.numel(), CHUNK):
            part = flat[start:start + CHUNK]
            noise = torch.from_numpy(source.normals(part.numel()))
            part.add_(noise.mul_(std).to(tensor.dtype))
    return state


def noisy_delta(state: dict, noise_multiplier: float, clip: float,
                source: NoiseSource) -> tuple[dict, float, float]:
    """Local DP of one client's update: clip to L2 norm ``clip``, add N(0, (z C)^2) per coordinate.

    Args:
        state: the delta (``init - new``), modified in place.
        noise_multiplier: z >= 0 (std / sensitivity).
        clip: C > 0, the L2 bound (= the sensitivity of one client's clipped delta).
        source: the noise source.

    Returns:
        ``(state, norm before clipping, clip factor applied)``.
    """
    check_clip(clip)
    if not noise_multiplier >= 0 or not math.isfinite(noise_multiplier):
        raise ValueError(f"noise multiplier must be finite and >= 0, got {noise_multiplier!r}")
    norm, factor = clip_l2(state, clip)
    add_gaussian_noise(state, noise_multiplier * clip, source)
    return state, norm, factor
