"""One server round of paper 001 on delta files: stream, (clip, cap, noise), server optimizer.

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
clip was seen unclipped by the server (deltas without a client-side bound are counted and
reported).

Memory: the model, one float64 accumulator (two models' worth) and one delta at a time.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from asrpriv.errors import AsrprivError, InputError
from asrpriv.federated import gaussian
from asrpriv.federated.fingerprint import model_fingerprint
from asrpriv.federated.server import (ServerState, check_hparams, moments_update_, read_state,
                                      theta_update_, write_state)
from asrpriv.privacy.history import History, Release, new_release_id
from asrpriv.privacy.state import after_release
from asrpriv.provenance import Inputs

#: coordinates per slice when adding a float32 delta into the float64 sum
ADD_CHUNK = 1 << 18
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
        for name, value in (("--noise-multiplier", z), ("--clip", self.clip),
                            ("--expected-clients", self.expected_clients),
                            ("--expected-weight", self.expected_weight),
                            ("--weight-cap", self.weight_cap), ("--sample-rate", self.sample_rate)):
            if value is not None and not math.isfinite(value):
                raise AsrprivError(f"{name} must be finite")
        if z is not None and z < 0:
            raise AsrprivError("--noise-multiplier must be >= 0")
        if not self.active:
            return
        if self.clip is None or self.clip <= 0:
            raise AsrprivError("client-level DP needs --clip C > 0 (the L2 bound of each delta)")
        if (self.expected_clients is None) == (self.expected_weight is None):
            raise AsrprivError("client-level DP needs exactly one of --expected-clients N or "
                               "--expected-weight W (the fixed denominator q*W)")
        if self.expected_clients is not None and self.weight_cap is not None:
            raise AsrprivError("--expected-clients assumes unit client weights; with --weight-cap "
                               "give --expected-weight (the expected sum of capped weights)")
        if self.denominator <= 0:
            raise AsrprivError("the expected number of clients / weight must be > 0")
        if self.weight_cap is not None and self.weight_cap <= 0:
            raise AsrprivError("--weight-cap must be > 0 (words)")
        if z:
            if self.sample_rate is None:
                raise AsrprivError("--noise-multiplier needs --sample-rate Q (the Poisson rate "
                                   "with which this round's clients were sampled; the accountant "
                                   "needs it)")
            if not 0 < self.sample_rate <= 1:
                raise AsrprivError("--sample-rate must be in (0, 1]")

    @property
    def denominator(self) -> float:
        return float(self.expected_clients if self.expected_clients is not None
                     else self.expected_weight)

    def client_weight(self, words: float) -> float:
        """McMahan et al.'s capped weight min(n / w_hat, 1) (1 without a cap)."""
        return 1.0 if self.weight_cap is None else min(words / self.weight_cap, 1.0)


@dataclass
class RoundReport:
    """What the round did (for stderr talk; data-dependent fields are not written to files)."""

    deltas: int = 0
    total_weight: float = 0.0
    denominator: float = 0.0
    noise_std: float = 0.0
    clipped_here: int = 0
    unclipped_by_client: int = 0
    t: int = 0
    fingerprint: str = ""
    release: Release | None = None
    seeded: bool = False
    files: list = field(default_factory=list)


def expand_deltas(args: list[str]) -> list[str]:
    """Delta paths from arguments: files, ``@LISTFILE`` (one path a line, ``#`` comments) and
    directories (their ``*.delta.pt``, sorted by name)."""
    from asrpriv.io.lines import iter_lines

    paths: list[str] = []
    for arg in args:
        if arg.startswith("@"):
            listed = [line.strip() for _, line in iter_lines(arg[1:])]
            paths.extend(p for p in listed if p and not p.startswith("#"))
        elif os.path.isdir(arg):
            found = sorted(name for name in os.listdir(arg) if name.endswith(".delta.pt"))
            if not found:
                raise InputError(arg, None, "directory holds no *.delta.pt file")
            paths.extend(os.path.join(arg, name) for name in found)
        else:
            paths.append(arg)
    if not paths:
        raise AsrprivError("no delta given")
    seen: set[str] = set()
    for path in paths:
        key = os.path.realpath(path)
        if key in seen:
            raise InputError(path, None, "given twice (a client would count twice)")
        seen.add(key)
    return paths


def _history(payload: dict, path: str) -> History:
    text = payload.get("privacy_history")
    if text is None:
        return History()
    if not isinstance(text, str):
        raise InputError(path, None, "privacy_history must be a JSON string")
    try:
        return History.from_json(text)
    except ValueError as err:
        raise InputError(path, None, f"bad privacy_history: {err}") from None


def flat_add(history: History, release: Release) -> History:
    """``history`` then ``release``, a chain of rounds kept one flat ``seq`` (History.add_flat)."""
    return history.add_flat(release)


@dataclass
class _Spec:
    shape: tuple
    dtype: object
    floating: bool


class _Reference:
    """The model the round starts from: what every delta must match."""

    def __init__(self, path: str, payload: dict) -> None:
        from asrpriv.nnlm.modelfile import vocab_and_config

        if payload["kind"] != "model":
            raise InputError(path, None, f"is a {payload['kind']} file, expected the current "
                                         "global model (--model)")
        self.path = path
        self.vocab, self.config = vocab_and_config(payload, path)
        state = payload["state_dict"]
        for name, tensor in state.items():
            if tensor.is_floating_point() and not all_finite(tensor):
                raise InputError(path, None, f"parameter {name} holds NaN or inf")
        self.fingerprint = model_fingerprint(self.config, self.vocab.words, state)
        self.history = _history(payload, path)
        from asrpriv.provenance import payload_state

        self.privacy = payload_state(payload, path)
        #: name -> (shape, dtype); the weights themselves are reloaded for the update
        self.state = {name: _Spec(t.shape, t.dtype, t.is_floating_point())
                      for name, t in state.items()}

    def reload(self) -> dict:
        """The model's weights, read again and checked to be the ones fingerprinted."""
        from asrpriv.nnlm.modelfile import read_model_file

        state = read_model_file(self.path)["state_dict"]
        if model_fingerprint(self.config, self.vocab.words, state) != self.fingerprint:
            raise AsrprivError(f"{self.path} changed while the round ran")
        return state

    def check_delta(self, path: str, payload: dict) -> float:
        """Validate one delta against the model; returns its weight (words)."""
        from asrpriv.nnlm.modelfile import vocab_and_config

        if payload["kind"] != "delta":
            raise InputError(path, None, f"is a {payload['kind']} file, expected a delta "
                                         "(finetune-lm --delta-out / --by-client)")
        vocab, config = vocab_and_config(payload, path)
        if vocab.words != self.vocab.words:
            raise InputError(path, None, f"vocabulary differs from the model's ({self.path}): "
                                         f"{len(vocab)} vs {len(self.vocab)} words")
        if config != self.config:
            diff = sorted(k for k in set(config) | set(self.config)
                          if config.get(k) != self.config.get(k))
            raise InputError(path, None, f"model config differs from {self.path} in {', '.join(diff)}")
        state = payload["state_dict"]
        if state.keys() != self.state.keys():
            missing = sorted(set(self.state) ^ set(state))
            raise InputError(path, None, f"parameters differ from the model's (e.g. {missing[0]})")
        for name, tensor in state.items():
            ref = self.state[name]
            if tensor.shape != ref.shape or tensor.dtype != ref.dtype:
                raise InputError(path, None, f"parameter {name}: shape/dtype {tuple(tensor.shape)} "
                                             f"{tensor.dtype}, the model has {tuple(ref.shape)} "
                                             f"{ref.dtype}")
            if tensor.is_floating_point() and not all_finite(tensor):
                raise InputError(path, None, f"parameter {name} holds NaN or inf")
        weight = payload.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) \
                or not math.isfinite(weight) or weight <= 0:
            raise InputError(path, None, f"bad client weight {weight!r} (expected the client's "
                                         "number of training words, > 0)")
        return float(weight)


def all_finite(tensor) -> bool:
    """No NaN or inf in ``tensor``. A plain sum propagates both (about 40x cheaper than
    ``isfinite().all()``); only a non-finite sum, which finite values can also reach by
    overflow, is checked element by element."""
    if math.isfinite(float(tensor.sum())):
        return True
    return bool(tensor.isfinite().all())


def _init_fingerprint(payload: dict, path: str) -> str:
    fp = payload.get("init_fingerprint")
    if not isinstance(fp, str) or len(fp) != 64:
        raise InputError(path, None, "records no init_fingerprint (the fingerprint of the model "
                                     "it was fine-tuned from); make it with this version's "
                                     "finetune-lm")
    return fp


def _recorded_clip(payload: dict) -> float | None:
    value = payload.get("clip_l2")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def run_round(model_path: str, delta_args: list[str], output: str, server: str,
              hparams: dict, state_path: str | None, dp: DpSettings | None = None,
              seed: int | None = None, allow_seeded: bool = False,
              aggregate_out: str | None = None, progress=None,
              deltas: list[tuple[str, dict]] | None = None) -> RoundReport:
    """Read the model and the deltas, compute Delta_t, apply the server optimizer, write.

    Args:
        model_path: the current global model (the one every delta's client started from).
        delta_args: delta files, ``@LISTFILE`` or directories (:func:`expand_deltas`).
        deltas: instead of ``delta_args``, deltas already in memory: ``(label, payload)`` pairs,
            each payload as :func:`asrpriv.nnlm.modelfile.read_model_file` returns it (the
            Flower app's path; checked exactly like files, summed in the given order). May be
            empty only with noise (``dp.noise_multiplier > 0``): the round then releases the
            noise alone, S = 0 (an empty cohort is a possible outcome of Poisson sampling).
        output: the new model file (atomic).
        server: "fedavg" or "fedadam"; hparams: lr, beta1, beta2, eps (None = default).
        state_path: the server state file (required for FedAdam; created when absent).
        dp: client-level DP settings (None or inactive = plain Eq. 5).
        seed: seeds the noise (NOT private: tests only); None = os.urandom.
        allow_seeded: accept inputs whose histories carry seeded noise.
        aggregate_out: also write Delta_t (after noise, before the optimizer) as a delta file.
        progress: optional ``progress(total) -> meter`` with ``update(n)`` and ``close()``.

    Nothing is written unless every input is valid; the model is written before the state, so
    an interrupted run leaves the old state (which still matches --model, and can be rerun).
    """
    import torch

    from asrpriv.nnlm.modelfile import read_model_file, save_model

    dp = dp or DpSettings()
    dp.check()
    try:
        hp = check_hparams(server, hparams)
    except ValueError as err:
        raise AsrprivError(str(err)) from None
    if server == "fedadam" and not state_path:
        raise AsrprivError("--server fedadam needs --state FILE (created when absent)")
    if deltas is None:
        paths = expand_deltas(delta_args)
        given: dict[str, dict] = {}
    else:
        paths = [label for label, _ in deltas]
        given = dict(deltas)
        if len(given) != len(paths):
            raise AsrprivError("a client's delta is given twice")
        if not paths and not (dp.active and dp.noise_multiplier):
            raise AsrprivError("no delta given")

    ref = _Reference(model_path, read_model_file(model_path))
    state = ServerState(server, 0, "", hp)
    if state_path and os.path.exists(state_path):
        state = read_state(state_path, server)
        if state.model_fingerprint != ref.fingerprint:
            raise InputError(state_path, None, f"belongs to another model than {model_path} (it "
                                               "was written with the model of its last round; "
                                               "give that model as --model)")
        if server == "fedadam" and state.t > 0:
            for key, moments in (("m", state.m), ("v", state.v)):
                if moments.keys() != ref.state.keys() or any(
                        moments[n].shape != ref.state[n].shape for n in moments):
                    raise InputError(state_path, None, f"moment {key} does not match the model's "
                                                       "parameters")
        state.m, state.v = {}, {}  # read again after the deltas: at most 4 models in memory
    inputs = Inputs(allow_seeded)
    inputs.add(model_path, ref.privacy)

    report = RoundReport(files=paths)
    dp_on = dp.active
    acc = {name: torch.zeros(spec.shape, dtype=torch.float64) for name, spec in ref.state.items()
           if spec.floating}
    mismatched: list[str] = []
    meter = progress(len(paths)) if progress else None
    for path in paths:
        payload = given.pop(path) if path in given else read_model_file(path)
        weight = ref.check_delta(path, payload)
        if _init_fingerprint(payload, path) != ref.fingerprint:
            mismatched.append(path)
            continue
        inputs.add_payload(path, payload)
        delta = payload["state_dict"]
        if dp_on:
            norm = gaussian.l2_norm(delta)
            scale = dp.client_weight(weight) * gaussian.clip_factor(norm, dp.clip)
            recorded = _recorded_clip(payload)
            if recorded is None or recorded > dp.clip * (1 + CLIP_TOLERANCE):
                report.unclipped_by_client += 1
            if norm > dp.clip * (1 + CLIP_TOLERANCE):
                report.clipped_here += 1
        else:
            scale = weight
        for name, buf in acc.items():  # by slices: no float64 copy of a whole tensor
            flat_buf, flat_delta = buf.view(-1), delta[name].reshape(-1)
            for start in range(0, flat_buf.numel(), ADD_CHUNK):
                flat_buf[start:start + ADD_CHUNK].add_(flat_delta[start:start + ADD_CHUNK],
                                                       alpha=scale)
        report.total_weight += weight
        report.deltas += 1
        del payload, delta
        if meter:
            meter.update(1)
    if meter:
        meter.close()
    if mismatched:
        shown = ", ".join(mismatched[:5]) + (f" and {len(mismatched) - 5} more"
                                             if len(mismatched) > 5 else "")
        raise InputError(model_path, None, f"{len(mismatched)} delta(s) were not fine-tuned from "
                                           f"this model (init_fingerprint differs): {shown}")

    privacy = inputs.state()

    # ---- Delta_t: (noisy) weighted sum / denominator
    z = dp.noise_multiplier or 0.0
    if dp_on:
        report.denominator = dp.denominator
        report.noise_std = z * dp.clip / dp.denominator
        source = gaussian.NoiseSource(seed)
        gaussian.add_gaussian_noise(acc, z * dp.clip, source)  # on the sum S: std z*C
        if z > 0:
            release = Release(new_release_id(), "gaussian", "client",
                              {"noise_multiplier": float(z), "sensitivity_l2": float(dp.clip),
                               "sample_rate": float(dp.sample_rate), "rounds": 1},
                              seeded=seed is not None)
            # the noise covers the clients' clipped updates, not what the model brought in
            privacy = after_release(privacy, release, covers=("client update",),
                                    keep=ref.privacy.raw, flat=True)
            report.release = release
    else:
        report.denominator = report.total_weight
    for name in list(acc):  # Delta_t in the parameters' dtype (frees the float64 sum)
        acc[name] = acc[name].div_(report.denominator).to(ref.state[name].dtype)
    report.seeded = privacy.seeded
    extra: dict = {}

    if aggregate_out:
        agg = {name: (acc[name] if name in acc else torch.zeros(spec.shape, dtype=spec.dtype))
               for name, spec in ref.state.items()}
        save_model(aggregate_out, agg, ref.vocab, ref.config, kind="delta",
                   weight=report.denominator, init_fingerprint=ref.fingerprint, privacy=privacy)

    # ---- the server optimizer (post-processing of Delta_t), in place. FedAdam's step reads
    # only the new moments, so Delta_t is folded into m, v before the model is loaded again:
    # at most three models' worth of tensors are alive (Delta_t, m, v; then theta, m, v).
    t = state.t + 1
    m_new, v_new = {}, {}
    if server == "fedadam":
        if state.t:
            again = read_state(state_path, server)
            if (again.t, again.model_fingerprint) != (state.t, state.model_fingerprint):
                raise AsrprivError(f"{state_path} changed while the round ran")
            m_new, v_new = again.m, again.v
        for name in list(acc):
            delta_t = acc.pop(name)
            m_new.setdefault(name, torch.zeros_like(delta_t))
            v_new.setdefault(name, torch.zeros_like(delta_t))
            moments_update_(delta_t, m_new[name], v_new[name], hp["beta1"], hp["beta2"])
            del delta_t
    new_state = ref.reload()
    for name in list(new_state):
        theta = new_state[name] = new_state[name].contiguous()  # updated in place
        if ref.state[name].floating:
            theta_update_(server, theta, t, hp, acc.pop(name, None), m_new.get(name),
                          v_new.get(name))
    for name, tensor in new_state.items():
        if tensor.is_floating_point() and not all_finite(tensor):
            raise AsrprivError(f"the update made parameter {name} non-finite (lr too large?)")
    report.t = t
    report.fingerprint = model_fingerprint(ref.config, ref.vocab.words, new_state)
    round_meta = {"server": server, "round": t, **{k: float(v) for k, v in hp.items()}}
    if dp_on:
        round_meta.update({"noise_multiplier": float(z), "clip_l2": float(dp.clip),
                           "denominator": float(dp.denominator),
                           "weight_cap": dp.weight_cap, "sample_rate": dp.sample_rate})
    save_model(output, new_state, ref.vocab, ref.config, federated_round=round_meta, privacy=privacy)
    if state_path:
        write_state(state_path, ServerState(server, t, report.fingerprint, hp, m_new, v_new))
    return report
