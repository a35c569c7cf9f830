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

from asrpriv.errors import InputError

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


def fedadam_moments(delta, m, v, beta1: float, beta2: float):
    """Paper 001 Eq. 6-7 (moments): ``(b1 m + (1-b1) D, b2 v + (1-b2) D^2)`` in m's dtype."""
    import torch

    d = delta.to(torch.float64)
    m64 = beta1 * m.to(torch.float64) + (1.0 - beta1) * d
    v64 = beta2 * v.to(torch.float64) + (1.0 - beta2) * d * d
    return m64.to(m.dtype), v64.to(v.dtype)


def fedadam_apply(theta, m, v, t: int, lr: float, beta1: float, beta2: float, eps: float):
    """Paper 001 Eq. 6-8 (step): ``theta - lr * m_hat / sqrt(v_hat + eps)``, bias correction
    ``m_hat = m / (1 - b1^t)``, ``v_hat = v / (1 - b2^t)`` with t >= 1; eps inside the root."""
    import torch

    if t < 1:
        raise ValueError("t starts at 1")
    m_hat = m.to(torch.float64) / (1.0 - beta1 ** t)
    v_hat = v.to(torch.float64) / (1.0 - beta2 ** t)
    return (theta.to(torch.float64) - lr * m_hat / torch.sqrt(v_hat + eps)).to(theta.dtype)


def fedadam_step(theta, delta, m, v, t: int, lr: float, beta1: float, beta2: float,
                 eps: float):
    """One FedAdam step on one tensor (paper 001 Eq. 6-8); returns ``(theta, m, v)``.

    Args:
        theta: the parameter; delta: its aggregate Delta_t; m, v: the moments after round
            t - 1 (zeros at t = 1); t: this round's number (1 in the first round).

    The new moments are stored in the parameters' dtype, and the step reads them as stored.
    """
    m_new, v_new = fedadam_moments(delta, m, v, beta1, beta2)
    return fedadam_apply(theta, m_new, v_new, t, lr, beta1, beta2, eps), m_new, v_new


def check_hparams(server: str, hparams: dict) -> dict:
    """Fill defaults and validate: lr > 0, 0 <= beta < 1, eps > 0 (ValueError otherwise)."""
    if server not in SERVERS:
        raise ValueError(f"unknown server optimizer {server!r}")
    out = dict(DEFAULTS[server])
    out.update({k: float(v) for k, v in hparams.items() if v is not None and k in out})
    extra = [k for k, v in hparams.items() if v is not None and k not in out]
    if extra:
        raise ValueError(f"--{extra[0].replace('1', '1').replace('_', '-')} does not apply to "
                         f"--server {server}")
    for key, value in out.items():
        if not math.isfinite(value):
            raise ValueError(f"{key} must be finite")
    if out["lr"] <= 0:
        raise ValueError("--server-lr must be > 0")
    for key in ("beta1", "beta2"):
        if key in out and not 0 <= out[key] < 1:
            raise ValueError(f"--{key} must be in [0, 1)")
    if "eps" in out and out["eps"] <= 0:
        raise ValueError("--eps must be > 0")
    return out


def read_state(path: str, server: str) -> ServerState:
    """Read and validate a state file; any defect is an :class:`InputError` (exit 2)."""
    import warnings

    import torch

    from asrpriv.io.lines import require_regular_file

    require_regular_file(path, "a server state file")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obj = torch.load(path, map_location="cpu", weights_only=True)
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
        raise InputError(path, None, f"is the state of --server {obj.get('server')}, not {server}")
    t = obj.get("t")
    if isinstance(t, bool) or not isinstance(t, int) or t < 0:
        raise InputError(path, None, f"bad round counter t={t!r}")
    fp = obj.get("model_fingerprint")
    if not isinstance(fp, str) or len(fp) != 64:
        raise InputError(path, None, "bad or missing model_fingerprint")
    hparams = obj.get("hparams")
    if not isinstance(hparams, dict):
        raise InputError(path, None, "missing hparams")
    moments = []
    for key in ("m", "v"):
        value = obj.get(key)
        if not isinstance(value, dict) or not all(isinstance(x, torch.Tensor) for x in value.values()):
            raise InputError(path, None, f"bad moment {key!r} (expected a dict of tensors)")
        for name, tensor in value.items():
            if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
                raise InputError(path, None, f"moment {key}[{name}] holds NaN or inf")
        moments.append({name: tensor.contiguous() for name, tensor in value.items()})
    if server == "fedadam" and t > 0 and moments[0].keys() != moments[1].keys():
        raise InputError(path, None, "moments m and v name different parameters")
    if server == "fedadam" and t > 0:
        bad = [n for n, x in moments[1].items() if x.is_floating_point() and bool((x < 0).any())]
        if bad:
            raise InputError(path, None, f"second moment v[{bad[0]}] is negative")
    return ServerState(server, t, fp, dict(hparams), moments[0], moments[1])


def write_state(path: str, state: ServerState) -> None:
    """Write a state file atomically (temp file beside it, then rename)."""
    obj = {"format": STATE_FORMAT, "format_version": STATE_VERSION, "server": state.server,
           "t": int(state.t), "model_fingerprint": state.model_fingerprint,
           "hparams": dict(state.hparams),
           "m": {k: v.detach().cpu().contiguous() for k, v in state.m.items()},
           "v": {k: v.detach().cpu().contiguous() for k, v in state.v.items()}}
    from asrpriv.nnlm.modelfile import write_payload

    write_payload(path, obj)  # byte-reproducible (no temporary file name inside the archive)


#: coordinates per slice of the in-place update (bounds the float64 temporaries)
STEP_CHUNK = 1 << 18


def _slices(n: int):
    for start in range(0, n, STEP_CHUNK):
        yield slice(start, start + STEP_CHUNK)


def moments_update_(delta, m, v, beta1: float, beta2: float) -> None:
    """:func:`fedadam_moments` in place on m and v, by flat slices of :data:`STEP_CHUNK`."""
    flat_d, flat_m, flat_v = delta.view(-1), m.view(-1), v.view(-1)
    for part in _slices(flat_d.numel()):
        flat_m[part], flat_v[part] = fedadam_moments(flat_d[part], flat_m[part], flat_v[part],
                                                     beta1, beta2)


def theta_update_(server: str, theta, t: int, hparams: dict, delta=None, m=None, v=None) -> None:
    """The new parameter in place: FedAvg from ``delta``, FedAdam from the updated ``m``, ``v``
    (:func:`fedadam_apply`), by flat slices of :data:`STEP_CHUNK` (small float64 temporaries)."""
    flat_t = theta.view(-1)
    if server == "fedavg":
        flat_d = delta.view(-1)
        for part in _slices(flat_t.numel()):
            flat_t[part] = fedavg_step(flat_t[part], flat_d[part], hparams["lr"])
        return
    flat_m, flat_v = m.view(-1), v.view(-1)
    for part in _slices(flat_t.numel()):
        flat_t[part] = fedadam_apply(flat_t[part], flat_m[part], flat_v[part], t, hparams["lr"],
                                     hparams["beta1"], hparams["beta2"], hparams["eps"])


def server_update_(server: str, theta, delta, m, v, t: int, hparams: dict) -> None:
    """One server step in place on one tensor (and its moments): exactly :func:`fedavg_step`
    or :func:`fedadam_step`, slice by slice."""
    if server == "fedadam":
        moments_update_(delta, m, v, hparams["beta1"], hparams["beta2"])
    theta_update_(server, theta, t, hparams, delta, m, v)
