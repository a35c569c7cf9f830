"""The server optimizers of paper 001 (Eq. 6-8) and their state file.

Both take the round's aggregate Delta_t (Eq. 5; a delta is ``init - new``, so the update
*subtracts* it) and update the model tensor by tensor, in float64, writing back in the
parameters' dtype:

- **FedAvg**: ``theta <- theta - lr * Delta_t`` (lr = 1 moves the model to the weighted average
  of the clients' models).
- **FedAdam** exactly as paper 001 Eq. 6-8::

      m_t = b1 m_{t-1} + (1 - b1) Delta_t          m_hat = m_t / (1 - b1^t)
      v_t = b2 v_{t-1} + (1 - b2) Delta_t^2        v_hat = v_t / (1 - b2^t)
      theta_{t+1} = theta_t - lr * m_hat / sqrt(v_hat + eps)

  with t = 1 in the first round, m_0 = v_0 = 0, and ``eps`` *inside* the square root.
  Defaults: lr 0.001, b1 0.9, b2 0.999 (paper 001 Sec. 3); the paper does not give eps_g,
  1e-8 here (Kingma & Ba's default), i.e. sqrt(eps) = 1e-4 in the denominator.

How others differ (same symbols; users will compare):

- **Flower** ``FedAdam`` (flwr.server.strategy.FedAdam): ``tau`` *outside* the root,
  ``theta + eta * m_hat / (sqrt(v_hat) + tau)`` with defaults tau 1e-9, eta 0.1, b2 0.99; its
  bias correction is folded into the step size, ``eta * sqrt(1 - b2^t) / (1 - b1^t)`` with
  ``t = server_round + 1``, applied to the uncorrected m / (sqrt(v) + tau); and its pseudo-gradient
  is ``new - old`` (added, where ours is ``init - new``, subtracted).
- **Reddi et al. 2021** ("Adaptive federated optimization", Alg. 2, FedAdam): no bias
  correction at all, ``theta + eta * m / (sqrt(v) + tau)``, tau outside the root (their grid
  tau in 1e-7..1), v_{-1} >= tau^2.

With eps inside the root, sqrt(v_hat + eps) >= sqrt(eps): a coordinate whose aggregate is
tiny moves by at most lr * |m_hat| / sqrt(eps), where tau outside the root caps it at
lr * |m_hat| / tau; for the same number the two differ most where v_hat ~ eps.

**State file** (torch, loads with ``weights_only=True``)::

    {"format": "asrpriv-server-state", "format_version": 1, "server": "fedadam"|"fedavg",
     "t": rounds applied, "model_fingerprint": fingerprint of the model this state goes with
     (the last model written), "hparams": {lr, beta1, beta2, eps}, "m": {name: tensor},
     "v": {name: tensor}}       # m, v in the parameters' dtype; empty dicts for fedavg
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from asrpriv.errors import InputError, arg

STATE_FORMAT = "asrpriv-server-state"
STATE_VERSION = 1
SERVERS = ("fedavg", "fedadam")

#: defaults per server: paper 001 Sec. 3 for FedAdam (eps not given there: 1e-8)
DEFAULTS = {"fedavg": {"lr": 1.0}, "fedadam": {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999,
                                              "eps": 1e-8}}


@dataclass
class ServerState:
    """The server optimizer's state between rounds (see the module docstring)."""

    server: str
    t: int = 0
    model_fingerprint: str = ""
    hparams: dict = field(default_factory=dict)
    m: dict = field(default_factory=dict)
    v: dict = field(default_factory=dict)


def fedavg_step(theta, delta, lr: float):
    """One FedAvg server step on one tensor: ``theta - lr * delta`` (float64 math)."""
    import torch

    return (theta.to(torch.float64) - lr * delta.to(torch.float64)).to(theta.dtype)


def fedadam_step(theta, delta, m, v, t: int, lr: float, beta1: float, beta2: float,
                 eps: float):
    """One FedAdam step (paper 001 Eq. 6-8) on one tensor; returns ``(theta, m, v)``.

    This is the only place where the FedAdam update is computed (the server step runs it on
    slices of every parameter, :func:`server_update_`)::

        m_t = b1 m + (1 - b1) D,  v_t = b2 v + (1 - b2) D^2     (stored in m's, v's dtype)
        theta - lr * m_hat / sqrt(v_hat + eps),  m_hat = m_t / (1 - b1^t),  v_hat = v_t / (1 - b2^t)

    Args:
        theta: the parameter; delta: its aggregate Delta_t; m, v: the moments after round
            t - 1 (zeros at t = 1); t: this round's number (1 in the first round).

    Float64 math; the new moments are stored in their dtype, and the step reads them as
    stored (so a state file read back gives the same next step).
    """
    import torch

    if t < 1:
        raise ValueError("t starts at 1")
    d = delta.to(torch.float64)
    m_new = (beta1 * m.to(torch.float64) + (1.0 - beta1) * d).to(m.dtype)
    v_new = (beta2 * v.to(torch.float64) + (1.0 - beta2) * d * d).to(v.dtype)
    m_hat = m_new.to(torch.float64) / (1.0 - beta1 ** t)
    v_hat = v_new.to(torch.float64) / (1.0 - beta2 ** t)
    return ((theta.to(torch.float64) - lr * m_hat / torch.sqrt(v_hat + eps)).to(theta.dtype),
            m_new, v_new)


def check_hparams(server: str, hparams: dict) -> dict:
    """Fill defaults and validate: lr > 0, 0 <= beta < 1, eps > 0 (ValueError otherwise)."""
    if server not in SERVERS:
        raise ValueError(f"unknown server optimizer {server!r}")
    out = dict(DEFAULTS[server])
    out.update({k: float(v) for k, v in hparams.items() if v is not None and k in out})
    extra = [k for k, v in hparams.items() if v is not None and k not in out]
    if extra:
        raise ValueError(f"{arg(extra[0])} does not apply to "
                         f"{arg('server')} {server}")
    for key, value in out.items():
        if not math.isfinite(value):
            raise ValueError(f"{key} must be finite")
    if out["lr"] <= 0:
        raise ValueError(f"{arg('server_lr')} must be > 0")
    for key in ("beta1", "beta2"):
        if key in out and not 0 <= out[key] < 1:
            raise ValueError(f"{arg(key)} must be in [0, 1)")
    if "eps" in out and out["eps"] <= 0:
        raise ValueError(f"{arg('eps')} must be > 0")
    return out


def read_state(path: str, server: str) -> ServerState:
    """Read and validate a state file; any defect is an :class:`InputError` (exit 2)."""
    state = _load_state(path, server, "cpu")
    for key, moments in (("m", state.m), ("v", state.v)):
        for name, tensor in moments.items():
            check_moment(path, key, name, tensor)
    state.m = {name: tensor.contiguous() for name, tensor in state.m.items()}
    state.v = {name: tensor.contiguous() for name, tensor in state.v.items()}
    return state


def open_state(path: str, server: str):
    """:func:`read_state` with the moments read on demand: ``(state, file)``, ``state.m`` and
    ``state.v`` holding the tensors of ``file`` (an :class:`asrpriv.io.torchfile.TorchFile`);
    read them with ``file.slices`` and :func:`check_moment`. Close the file."""
    from asrpriv.io.torchfile import TorchFile

    holder = {}

    def load(where: str):
        holder["state"] = _load_state(path, server, where)
        return holder["state"]

    file = TorchFile.open(path, load)
    return holder["state"], file


def check_moment(path: str, key: str, name: str, tensor):
    """Refuse a moment that holds NaN or inf, or a negative second moment; returns it."""
    import torch

    if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
        raise InputError(path, None, f"moment {key}[{name}] holds NaN or inf")
    if key == "v" and tensor.is_floating_point() and bool((tensor < 0).any()):
        raise InputError(path, None, f"second moment v[{name}] is negative")
    return tensor


def _load_state(path: str, server: str, map_location: str) -> ServerState:
    """The state file's layout checked (not its values: :func:`check_moment`)."""
    import warnings

    import torch

    from asrpriv.io.lines import require_regular_file

    require_regular_file(path, "a server state file")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obj = torch.load(path, map_location=map_location, weights_only=True)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except Exception as err:  # noqa: BLE001 - any failure on untrusted bytes (text: KeyError)
        if isinstance(err, MemoryError):
            raise
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise InputError(path, None, f"not a readable server state file ({first[:120]})") from None
    if not isinstance(obj, dict) or obj.get("format") != STATE_FORMAT:
        raise InputError(path, None, f"not an {STATE_FORMAT} file (no format marker)")
    if obj.get("format_version") != STATE_VERSION:
        raise InputError(path, None, f"unsupported server state version {obj.get('format_version')!r}")
    if obj.get("server") != server:
        raise InputError(path, None, f"is the state of {arg('server')} {obj.get('server')}, not {server}")
    t = obj.get("t")
    if isinstance(t, bool) or not isinstance(t, int) or t < 0:
        raise InputError(path, None, f"bad round counter t={t!r}")
    fp = obj.get("model_fingerprint")
    if not isinstance(fp, str) or len(fp) != 64:
        raise InputError(path, None, "bad or missing model_fingerprint")
    hparams = obj.get("hparams")
    if not isinstance(hparams, dict):
        raise InputError(path, None, "missing hparams")
    for key in ("m", "v"):
        value = obj.get(key)
        if not isinstance(value, dict) or not all(isinstance(x, torch.Tensor) for x in value.values()):
            raise InputError(path, None, f"bad moment {key!r} (expected a dict of tensors)")
    if server == "fedadam" and t > 0 and obj["m"].keys() != obj["v"].keys():
        raise InputError(path, None, "moments m and v name different parameters")
    return ServerState(server, t, fp, dict(hparams), dict(obj["m"]), dict(obj["v"]))


def write_state(path: str, state: ServerState) -> None:
    """Write a state file atomically (temp file beside it, then rename)."""
    from asrpriv.nnlm.modelfile import write_payload

    write_payload(path, state_payload(state))  # byte-reproducible (no temporary name inside)


def state_payload(state: ServerState) -> dict:
    """What a state file holds (see the module docstring)."""
    return {"format": STATE_FORMAT, "format_version": STATE_VERSION, "server": state.server,
            "t": int(state.t), "model_fingerprint": state.model_fingerprint,
            "hparams": dict(state.hparams),
            "m": {k: v.detach().cpu().contiguous() for k, v in state.m.items()},
            "v": {k: v.detach().cpu().contiguous() for k, v in state.v.items()}}


#: coordinates per slice of the in-place update: the float64 temporaries (512 KB each) stay
#: in cache; 1 << 14 spent 20% more on Python per slice, 1 << 18 ran out of cache (FedAdam
#: over 8M parameters, one thread: 0.072 / 0.059 / 0.084 s). The update is elementwise, so
#: the slice size never changes a bit.
STEP_CHUNK = 1 << 16


def server_update_(server: str, theta, delta, m, v, t: int, hparams: dict) -> None:
    """One server step in place on one tensor (and its moments): exactly :func:`fedavg_step`
    or :func:`fedadam_step`, by flat slices of :data:`STEP_CHUNK` (small float64 temporaries).
    ``m``, ``v`` are None for FedAvg."""
    flat_t, flat_d = theta.view(-1), delta.view(-1)
    if server == "fedavg":
        for part in _slices(flat_t.numel()):
            flat_t[part] = fedavg_step(flat_t[part], flat_d[part], hparams["lr"])
        return
    flat_m, flat_v = m.view(-1), v.view(-1)
    for part in _slices(flat_t.numel()):
        flat_t[part], flat_m[part], flat_v[part] = fedadam_step(
            flat_t[part], flat_d[part], flat_m[part], flat_v[part], t, hparams["lr"],
            hparams["beta1"], hparams["beta2"], hparams["eps"])


def _slices(n: int):
    for start in range(0, n, STEP_CHUNK):
        yield slice(start, start + STEP_CHUNK)


class ModelStep:
    """The server optimizer on a whole model, a slice of :data:`STEP_CHUNK` values at a time.

    Every input is streamed: theta from the round's model file (``ref``, an
    :class:`asrpriv.federated.round_inputs.ModelRef`, whose fingerprint is checked again on
    the way), Delta_t from ``delta`` (an :class:`asrpriv.io.torchfile.TorchFile` whose ``obj``
    maps names to tensors), FedAdam's previous moments from ``moments`` (the state's file,
    :func:`open_state`; zeros in round 1); each slice goes through :func:`server_update_`.
    :meth:`run` keeps what the caller asks for, so that the new theta and the new moments
    need not be in memory together (three models' worth): FedAdam's moments go to the state
    file in a first pass, theta to the model file in a second.
    """

    def __init__(self, ref, delta, server: str, hparams: dict, state: ServerState,
                 moments=None) -> None:
        self.ref, self.delta, self.server, self.hparams = ref, delta, server, hparams
        self.state, self.moments = state, moments
        self.t = state.t + 1

    def run(self, keep_theta: bool, keep_moments: bool):
        """One pass: ``(theta, m, v, fingerprint)``, the new parameters (model order) and
        moments (the state file's order) if kept, else None; the new model's fingerprint."""
        import torch

        from asrpriv.allocator import release_freed_memory
        from asrpriv.errors import AsrprivError
        from asrpriv.federated.fingerprint import Fingerprint
        from asrpriv.federated.round_inputs import all_finite

        ref, adam, state = self.ref, self.server == "fedadam", self.state
        floating = [name for name, spec in ref.specs.items() if spec.floating]
        theta = dict.fromkeys(ref.specs) if keep_theta else None
        m_new = v_new = None
        if keep_moments:
            m_new = dict.fromkeys(state.m if state.t else floating) if adam else {}
            v_new = dict.fromkeys(state.v if state.t else floating) if adam else {}
        old = Fingerprint(ref.config, ref.vocab.words)
        new = Fingerprint(ref.config, ref.vocab.words)
        for name in sorted(ref.specs):
            meta = ref.file.obj["state_dict"][name]
            old.tensor(name, meta)
            new.tensor(name, meta)
            step = ref.specs[name].floating
            ins = [ref.file.slices(meta, STEP_CHUNK)]
            outs = [torch.empty(meta.shape, dtype=meta.dtype) if keep_theta else None]
            if step:
                ins.append(self.delta.slices(self.delta.obj[name], STEP_CHUNK))
            if step and adam:
                ins += [self._moment(key, name, meta) for key in "mv"]
                dtypes = ((state.m[name].dtype, state.v[name].dtype) if state.t
                          else (meta.dtype, meta.dtype))
                outs += [torch.empty(meta.shape, dtype=d) if keep_moments else None
                         for d in dtypes]
            start = 0
            for parts in zip(*ins):
                old.update(parts[0])
                now = [_into(full, start, part)
                       for full, part in zip(outs, parts[:1] + parts[2:])]
                if step:
                    server_update_(self.server, now[0], parts[1], *(now[1:] or (None, None)),
                                   self.t, self.hparams)
                    if not all_finite(now[0]):
                        raise AsrprivError(f"the update made parameter {name} non-finite "
                                           "(lr too large?)")
                new.update(now[0])
                start += parts[0].numel()
            if keep_theta:
                theta[name] = outs[0]
            if keep_moments and step and adam:
                m_new[name], v_new[name] = outs[1], outs[2]
            release_freed_memory()  # the slices' float64 temporaries: no holes kept resident
        if old.hexdigest() != ref.fingerprint:
            raise AsrprivError(f"{ref.path} changed while the round ran")
        return theta, m_new, v_new, new.hexdigest()

    def _moment(self, key: str, name: str, meta):
        """Slices of the previous moment ``key`` of parameter ``name``, checked; zeros at t = 1."""
        import torch

        if not self.state.t:
            for start in range(0, meta.numel(), STEP_CHUNK):
                yield torch.zeros(min(STEP_CHUNK, meta.numel() - start), dtype=meta.dtype)
            return
        tensor = (self.state.m if key == "m" else self.state.v)[name]
        for part in self.moments.slices(tensor, STEP_CHUNK):
            yield check_moment(self.moments.path, key, name, part)


def _into(full, start: int, part):
    """``part`` copied into the flat slice of ``full`` at ``start`` (kept), or into a new
    tensor (``full`` None); returns where it went."""
    if full is None:
        return part.clone()
    view = full.view(-1)[start:start + part.numel()]
    view.copy_(part)
    return view
