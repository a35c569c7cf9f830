"""Step 2 of a server round: from the sum S to the released aggregate Delta_t.

**Without DP** (paper 001 Eq. 5): ``Delta_t = sum_i w_i Delta_i / sum_i w_i``, w_i = the
client's number of training words (the delta's ``weight``).

**With client-level DP** (McMahan, Ramage, Talwar & Zhang 2018, "Learning differentially
private recurrent language models", the fixed-denominator estimator f_f):

    w_i  = min(n_i / w_hat, 1)                (capped weights; all 1 without --weight-cap)
    D_i' = D_i * min(1, C / ||D_i||_2)        (clip each client's whole delta to L2 norm C)
    S    = sum_i w_i D_i'                     (add/remove one client moves S by <= w_i C <= C)
    Delta_t = (S + N(0, (z C)^2 I)) / D       (D = q W, fixed: --expected-weight, or
                                               --expected-clients with unit weights)

The L2 sensitivity of S is C whatever the data, so the noise std on Delta_t is z C / D per
coordinate. The noise goes on the aggregate *before* the server optimizer; FedAvg/FedAdam
then only post-process a DP release. ``--noise-multiplier 0`` runs the same path with no
draw (so exactly the noise-free estimator), and records no release (no privacy).

Bias of the fixed denominator: under Poisson sampling with rate q, E[S] = q sum_k w_k D_k'
over the population, so E[Delta_t] = sum_k w_k D_k' / W exactly (unbiased for the capped,
clipped population average), but in one round Delta_t = (sum_{i in round} w_i / D) times the
ratio estimator sum w_i D_i' / sum w_i: a round that drew fewer (lighter) clients than expected
takes a proportionally shorter step, a heavier one a longer step. The data-dependent ratio
estimator (Eq. 5) has lower variance but a sensitivity that depends on the private
denominator, so Gaussian noise calibrated to C / D would not bound it; it is used only
without DP.

Clipping here: the server clips every delta to C, whether or not its client did (a delta
that records ``clip_l2 <= C`` is left as it is up to float rounding). This enforces the
sensitivity of the central mechanism; it is *not* local DP -- a delta that the client did not
clip was seen unclipped by the server (such deltas are counted, :class:`Bounds`, and
reported).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from asrpriv.errors import AsrprivError, arg
from asrpriv.federated import gaussian
from asrpriv.privacy.history import Release, new_release_id
from asrpriv.federated.clip import check_clip

#: how much a client-clipped delta's norm may exceed C (float32 rounding) and still count as clipped
CLIP_TOLERANCE = 1e-5


@dataclass
class DpSettings:
    """Client-level DP of the round (all None = plain Eq. 5 weighted average)."""

    noise_multiplier: float | None = None
    clip: float | None = None
    expected_clients: float | None = None
    expected_weight: float | None = None
    weight_cap: float | None = None
    sample_rate: float | None = None

    @property
    def active(self) -> bool:
        """The DP estimator (clip, capped weights, fixed denominator) is used."""
        return any(x is not None for x in (self.clip, self.expected_clients, self.expected_weight,
                                           self.weight_cap)) or bool(self.noise_multiplier)

    def check(self) -> None:
        """Refuse incomplete or contradictory settings (AsrprivError)."""
        z = self.noise_multiplier
        if self.clip is not None:
            check_clip(self.clip)
        for name, value in ((arg("noise_multiplier"), z),
                            (arg("expected_clients"), self.expected_clients),
                            (arg("expected_weight"), self.expected_weight),
                            (arg("weight_cap"), self.weight_cap), (arg("sample_rate"), self.sample_rate)):
            if value is not None and not math.isfinite(value):
                raise AsrprivError(f"{name} must be finite")
        if z is not None and z < 0:
            raise AsrprivError(f"{arg('noise_multiplier')} must be >= 0")
        if not self.active:
            return
        if self.clip is None:
            raise AsrprivError(f"client-level DP needs {arg('clip')} C > 0 (the L2 bound of each delta)")
        if (self.expected_clients is None) == (self.expected_weight is None):
            raise AsrprivError(f"client-level DP needs exactly one of {arg('expected_clients')} N or "
                               f"{arg('expected_weight')} W (the fixed denominator q*W)")
        if self.expected_clients is not None and self.weight_cap is not None:
            raise AsrprivError(f"{arg('expected_clients')} assumes unit client weights; with {arg('weight_cap')} "
                               f"give {arg('expected_weight')} (the expected sum of capped weights)")
        if self.denominator <= 0:
            raise AsrprivError("the expected number of clients / weight must be > 0")
        if self.weight_cap is not None and self.weight_cap <= 0:
            raise AsrprivError(f"{arg('weight_cap')} must be > 0 (words)")
        if z:
            if self.sample_rate is None:
                raise AsrprivError(f"{arg('noise_multiplier')} needs {arg('sample_rate')} Q (the Poisson rate "
                                   "with which this round's clients were sampled; the accountant "
                                   "needs it)")
            from asrpriv.privacy.accounting import check_sample_rate

            check_sample_rate(self.sample_rate)

    @property
    def denominator(self) -> float:
        return float(self.expected_clients if self.expected_clients is not None
                     else self.expected_weight)

    def client_weight(self, words: float) -> float:
        """McMahan et al.'s capped weight min(n / w_hat, 1) (1 without a cap)."""
        return 1.0 if self.weight_cap is None else min(words / self.weight_cap, 1.0)


class Bounds:
    """Each delta's factor in the sum under client-level DP, and the clipping bookkeeping."""

    def __init__(self, dp: DpSettings) -> None:
        self.dp = dp
        #: deltas whose norm exceeded C (clipped here)
        self.clipped_here = 0
        #: deltas whose client recorded no bound <= C (seen unclipped by the server)
        self.unclipped_by_client = 0

    def scale(self, weight: float, norm: float, client_clip: float | None) -> float:
        """``min(n / w_hat, 1) * min(1, C / norm)`` for a delta of ``weight`` words and L2
        norm ``norm`` whose client clipped it to ``client_clip`` (None: not recorded)."""
        clip = self.dp.clip
        if client_clip is None or client_clip > clip * (1 + CLIP_TOLERANCE):
            self.unclipped_by_client += 1
        if norm > clip * (1 + CLIP_TOLERANCE):
            self.clipped_here += 1
        return self.dp.client_weight(weight) * gaussian.clip_factor(norm, clip)


@dataclass
class Privatized:
    """Delta_t and its privacy: what the server optimizer post-processes."""

    #: parameter name -> Delta_t in the parameter's dtype (floating parameters only)
    delta: dict
    #: its :class:`asrpriv.privacy.state.PrivacyState`
    privacy: object
    denominator: float
    noise_std: float = 0.0
    release: Release | None = None


def privatize(acc: dict, dtypes: dict, dp: DpSettings, privacy, total_weight: float,
              seed: int | None = None, keep: frozenset = frozenset(),
              seeded_sampling: bool = False) -> Privatized:
    """Delta_t from the sum S (``acc``, float64, consumed): noise and release, then divide.

    Args:
        acc: parameter name -> S (float64; replaced by Delta_t in ``dtypes[name]``, so the
            float64 sum is freed a tensor at a time).
        dp: the round's DP settings (inactive: ``S / total_weight``, Eq. 5).
        privacy: the combined privacy state of the model and the deltas.
        total_weight: the summed weights (words) of the deltas (the Eq. 5 denominator).
        seed: seeds the noise (NOT private: tests only); None = os.urandom.
        keep: raw parts the noise does not cover (what the start model brought in).
        seeded_sampling: the round's cohort came from a public seed: the release is marked
            seeded (no epsilon holds), as with seeded noise.

    With DP and z > 0, N(0, (z C)^2) is added to S and a Gaussian release (unit client,
    sensitivity C, the round's sample rate, 1 round) is appended to the history, which stays
    one flat sequence over rounds; it covers the clients' clipped updates, not ``keep``.
    """
    from asrpriv.privacy.state import after_release

    if dp.active:
        z = dp.noise_multiplier or 0.0
        out = Privatized(acc, privacy, dp.denominator, z * dp.clip / dp.denominator)
        gaussian.add_gaussian_noise(acc, z * dp.clip, gaussian.NoiseSource(seed))  # std z*C on S
        if z > 0:
            params = {"noise_multiplier": float(z), "sensitivity_l2": float(dp.clip),
                      "sample_rate": float(dp.sample_rate), "rounds": 1}
            out.release = Release(release_id(seed, params, privacy), "gaussian", "client",
                                  params, seeded=seed is not None or seeded_sampling)
            out.privacy = after_release(privacy, out.release, covers=("client update",),
                                        keep=keep, flat=True)
    else:
        out = Privatized(acc, privacy, total_weight)
    for name in list(acc):  # Delta_t in the parameters' dtype (frees the float64 sum)
        acc[name] = acc[name].div_(out.denominator).to(dtypes[name])
    return out


def release_id(seed: int | None, params: dict, privacy) -> str:
    """The release's id: random (:func:`asrpriv.privacy.history.new_release_id`), or with
    seeded (test) noise derived from the seed, the parameters and the ids already in the
    history, so that a seeded run gives the same files every time (the shell recipe's and
    ``fl-rounds``' byte for byte) while two seeded rounds of one history still differ."""
    if seed is None:
        return new_release_id()
    import hashlib
    import json

    before = sorted(privacy.history.release_ids()) if privacy is not None else []
    text = json.dumps(["asrpriv-seeded-release/1", str(int(seed)), params, before],
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]
