"""One server round of paper 001 on delta files, in four steps:

1. **sum** (:mod:`asrpriv.federated.delta_sum`): S = sum_i s_i D_i, each delta streamed, checked
   against the model (:mod:`asrpriv.federated.round_inputs`);
2. **privatize** (:mod:`asrpriv.federated.privatize`): client-level DP (clip factors, Gaussian
   noise on S, the history's release) and the division: the released aggregate Delta_t;
3. **server optimizer** (:class:`asrpriv.federated.server.ModelStep`): FedAvg or FedAdam
   (paper 001 Eq. 5-8; the update itself is :func:`asrpriv.federated.server.fedadam_step`),
   a slice at a time;
4. **write**: the new model, then the server state (:func:`write_round`).

Memory (float32 parameters): the float64 sum S, two models' worth, and one slice of one
delta while summing; then Delta_t (FedAvg: and theta), or for FedAdam, with Delta_t in a
temporary file, m and v, then theta: never more than two models' worth.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from asrpriv.allocator import release_freed_memory
from asrpriv.errors import AsrprivError, InputError, arg
from asrpriv.federated.delta_sum import weighted_sum
from asrpriv.federated.privatize import Bounds, DpSettings, Privatized, privatize
from asrpriv.federated.round_inputs import ModelRef, expand_deltas
from asrpriv.federated.server import (ModelStep, ServerState, check_hparams, open_state,
                                      state_payload, write_state)
from asrpriv.privacy.history import History, Release
from asrpriv.provenance import Inputs

__all__ = ["DpSettings", "RoundReport", "expand_deltas", "run_round", "flat_add", "write_round"]


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


def flat_add(history: History, release: Release) -> History:
    """``history`` then ``release``, a chain of rounds kept one flat ``seq`` node
    (:meth:`History.add_flat`)."""
    return history.add_flat(release)


def run_round(model_path: str, delta_args: list[str], output: str, server: str,
              hparams: dict, state_path: str | None, dp: DpSettings | None = None,
              seed: int | None = None, allow_seeded: bool = False,
              aggregate_out: str | None = None, progress=None,
              deltas: list[tuple[str, dict]] | None = None,
              cohort: str | None = None, seeded_sampling: bool = False,
              made_here: bool = False) -> RoundReport:
    """Read the model and the deltas, compute Delta_t, apply the server optimizer, write.

    Args:
        model_path: the current global model (the one every delta's client started from).
        delta_args: delta files, ``@LISTFILE`` or directories (:func:`expand_deltas`); with
            noise a directory may be empty (an empty cohort: the noise alone is released).
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
        cohort: the file of the client ids sampled for this round (``sample-clients``): every
            delta must record one of them as its ``client`` label, none twice.
        seeded_sampling: the cohort was drawn with a public seed (tests): the release is
            marked seeded, as seeded noise is (the epsilon assumes secret sampling).
        made_here: ``deltas`` were all computed by the caller, one per distinct client
            (``fl-rounds``): the copy check's hashing is skipped
            (:func:`asrpriv.federated.delta_sum.weighted_sum`).

    Every update counts once (:func:`asrpriv.federated.delta_sum.weighted_sum`: copies and,
    under DP, two deltas of one client are refused). A plain (Eq. 5) average of deltas that
    are DP releases weights them by their recorded weights, so it is refused unless those
    are all equal (noised deltas record weight 1): exact word counts are never a release's
    weights.

    Nothing is written unless every input is valid; the model is written before the state, so
    an interrupted run leaves the old state (which still matches --model, and can be rerun).
    """
    dp = dp or DpSettings()
    hp = _check_settings(server, hparams, state_path, dp)
    sources = _sources(delta_args, deltas, dp)
    cohort_ids = None
    if cohort is not None:
        from asrpriv.federated.delta_sum import read_cohort

        cohort_ids = read_cohort(cohort)
    ref = ModelRef(model_path)
    moments = delta = None
    try:
        state, moments = _previous_state(state_path, server, hp, ref, model_path)
        inputs = Inputs(allow_seeded)
        inputs.add(model_path, ref.privacy)
        bounds = Bounds(dp) if dp.active else None
        total = weighted_sum(ref, sources, inputs, bounds, progress, cohort_ids, cohort,  # 1. sum
                             made_here=made_here and deltas is not None)
        _check_release_weights(dp, inputs.state(), total)
        dtypes = {name: spec.dtype for name, spec in ref.specs.items()}
        step = privatize(total.acc, dtypes, dp, inputs.state(), total.total_weight, seed,
                         keep=ref.privacy.raw, seeded_sampling=seeded_sampling)  # 2. privatize
        report = RoundReport(total.deltas, total.total_weight, step.denominator, step.noise_std,
                             bounds.clipped_here if bounds else 0,
                             bounds.unclipped_by_client if bounds else 0, t=state.t + 1,
                             release=step.release, seeded=step.privacy.seeded,
                             files=[label for label, _ in sources])
        del total
        if aggregate_out:
            _write_aggregate(aggregate_out, ref, step)
        delta = _delta_t(step, server, output)
        optimizer = ModelStep(ref, delta, server, hp, state, moments)             # 3.
        report.fingerprint = write_round(output, state_path, optimizer, dp,      # 4. write
                                         step.privacy)
    finally:
        for file in (ref, moments, delta):
            if file is not None:
                file.close()
        if delta is not None and server == "fedadam":
            os.unlink(delta.path)  # the temporary file of Delta_t
    return report


#: a FedAdam model up to this many bytes of parameters is stepped in one pass, theta and both
#: moments in memory together (three times this at most); a larger one in two passes
ONE_PASS_BYTES = 256 << 20


def _parameter_bytes(ref) -> int:
    import math

    return sum(math.prod(spec.shape) * spec.dtype.itemsize for spec in ref.specs.values())


def write_round(output: str, state_path: str | None, optimizer: ModelStep, dp: DpSettings,
                privacy) -> str:
    """Run the server optimizer and write the new model (round metadata, privacy state),
    then the server state; returns the new model's fingerprint (recorded in the state: the
    next round's --model).

    FedAdam in two passes, so that theta, m and v are never in memory together: the moments
    first, into the state's temporary file (renamed only after the model is written), then
    theta, into the model file. A model of at most :data:`ONE_PASS_BYTES` is stepped once,
    keeping all three (the same values: the second pass recomputed them), and written in the
    same order.
    """
    from asrpriv.io.output import atomic_path
    from asrpriv.nnlm.modelfile import dump_payload, save_model

    ref, server, hp, t = optimizer.ref, optimizer.server, optimizer.hparams, optimizer.t
    round_meta = {"server": server, "round": t, **{k: float(x) for k, x in hp.items()}}
    if dp.active:
        round_meta.update({"noise_multiplier": float(dp.noise_multiplier or 0.0),
                           "clip_l2": float(dp.clip), "denominator": float(dp.denominator),
                           "weight_cap": dp.weight_cap, "sample_rate": dp.sample_rate})
        if dp.noise_multiplier:  # restates the ledger's Gaussian rounds (checked on read)
            round_meta["dp_rounds"] = sum(int(r.params["rounds"]) for r in privacy.history.releases
                                          if r.mechanism == "gaussian")

    def save(theta) -> None:
        save_model(output, theta, ref.vocab, ref.config, federated_round=round_meta,
                   privacy=privacy)

    def write_model() -> str:
        theta, _, _, fingerprint = optimizer.run(keep_theta=True, keep_moments=False)
        save(theta)
        return fingerprint

    if server != "fedadam":
        fingerprint = write_model()
        if state_path:
            write_state(state_path, ServerState(server, t, fingerprint, hp))
        return fingerprint
    one_pass = _parameter_bytes(ref) <= ONE_PASS_BYTES  # theta, m and v fit together
    theta, m, v, fingerprint = optimizer.run(keep_theta=one_pass, keep_moments=True)
    with atomic_path(state_path) as tmp:
        dump_payload(tmp, state_payload(ServerState(server, t, fingerprint, hp, m, v)))
        del m, v
        if one_pass:
            save(theta)
        else:
            release_freed_memory()
            if write_model() != fingerprint:
                raise AsrprivError("the server step gave two different models (internal error)")
    return fingerprint


def _check_release_weights(dp: DpSettings, state, total) -> None:
    """Refuse a plain weighted average of DP deltas with unequal weights (their weights would
    be exact statistics of the private data, published through the model)."""
    if dp.active or not state.history.releases or len(total.weights or ()) <= 1:
        return
    if any(p.what == "client update" for p in state.raw):
        return  # un-noised updates: the model is NOT private anyway, and says so
    raise AsrprivError("the deltas are DP releases but record different weights: a plain FedAvg "
                       "would weight them by exact word counts, which no release may hold; "
                       "noise them with this version (weight 1) or aggregate with client-level "
                       "DP (--clip, --expected-clients)")


def _check_settings(server: str, hparams: dict, state_path: str | None, dp: DpSettings) -> dict:
    dp.check()
    try:
        hp = check_hparams(server, hparams)
    except ValueError as err:
        raise AsrprivError(str(err)) from None
    if server == "fedadam" and not state_path:
        raise AsrprivError(f"{arg('server')} fedadam needs {arg('state')} FILE (created when absent)")
    return hp


def _sources(delta_args: list[str], deltas: list[tuple[str, dict]] | None, dp: DpSettings):
    """``(label, open)`` of every delta: files (streamed), or payloads already in memory."""
    from asrpriv.io.torchfile import TorchFile
    from asrpriv.nnlm.modelfile import open_model_file

    if deltas is None:  # under DP an empty cohort's directory releases the noise alone
        noise = bool(dp.active and dp.noise_multiplier)
        return [(path, lambda path=path: open_model_file(path))
                for path in expand_deltas(delta_args, allow_empty=noise)]
    if len({label for label, _ in deltas}) != len(deltas):
        raise AsrprivError("a client's delta is given twice")
    if not deltas and not (dp.active and dp.noise_multiplier):
        raise AsrprivError("no delta given")
    return [(label, lambda label=label, payload=payload: TorchFile.in_memory(label, payload))
            for label, payload in deltas]


def _previous_state(state_path: str | None, server: str, hp: dict, ref: ModelRef,
                    model_path: str):
    """The previous round's state (its moments on demand) and its open file, or a new state."""
    if not (state_path and os.path.exists(state_path)):
        return ServerState(server, 0, "", hp), None
    state, file = open_state(state_path, server)
    try:
        if state.model_fingerprint != ref.fingerprint:
            raise InputError(state_path, None, f"belongs to another model than {model_path} (it "
                                               "was written with the model of its last round; "
                                               f"give that model as {arg('model')})")
        if server == "fedadam" and state.t > 0:
            for key, moments in (("m", state.m), ("v", state.v)):
                if moments.keys() != ref.specs.keys() or any(
                        moments[n].shape != ref.specs[n].shape for n in moments):
                    raise InputError(state_path, None, f"moment {key} does not match the model's "
                                                       "parameters")
    except BaseException:
        file.close()
        raise
    return state, file


def _delta_t(step: Privatized, server: str, output: str):
    """Delta_t as the optimizer reads it: in memory for FedAvg; for FedAdam written to a
    temporary file beside ``output`` (removed by the caller) and freed, so that the two
    passes of :func:`write_round` hold the moments or theta, not Delta_t as well."""
    import tempfile

    from asrpriv.io.torchfile import TorchFile
    from asrpriv.nnlm.modelfile import dump_payload

    if server != "fedadam":
        return TorchFile.in_memory("Delta_t", step.delta)
    fd, path = tempfile.mkstemp(prefix=f".{os.path.basename(output)}.", suffix=".delta.tmp",
                                dir=os.path.dirname(os.path.abspath(output)))
    os.close(fd)
    try:
        dump_payload(path, step.delta)
        step.delta.clear()
        release_freed_memory()
        return TorchFile.open(path, lambda where: _load_plain(path, where))
    except BaseException:
        os.unlink(path)
        raise


def _load_plain(path: str, map_location: str) -> dict:
    import torch

    return torch.load(path, map_location=map_location, weights_only=True)


def _write_aggregate(path: str, ref: ModelRef, step: Privatized) -> None:
    """Delta_t (after noise, before the optimizer) as a delta file (--aggregate-out)."""
    import torch

    from asrpriv.nnlm.modelfile import save_model

    agg = {name: (step.delta[name] if name in step.delta
                  else torch.zeros(spec.shape, dtype=spec.dtype))
           for name, spec in ref.specs.items()}
    save_model(path, agg, ref.vocab, ref.config, kind="delta", weight=step.denominator,
               init_fingerprint=ref.fingerprint, privacy=step.privacy)
