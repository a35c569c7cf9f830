"""Step 1 of a server round: the (clipped) weighted sum S = sum_i s_i D_i of the deltas, streamed.

``s_i`` is the delta's factor in the sum: its weight (words) for the plain average, or
``w_i min(1, C / ||D_i||)`` with client-level DP (:class:`asrpriv.federated.privatize.Bounds`,
which needs the delta's L2 norm first: a DP round reads each file twice, once for the norm
and once to add it).

Memory: the float64 sum (two models' worth of float32 parameters) and one slice of one delta
(:data:`asrpriv.federated.round_inputs.SLICE` values): a delta file is read a slice at a time
into one buffer (:mod:`asrpriv.io.torchfile`), never whole. The order of every float64
operation is that of a whole-tensor loop (deltas in the given order, parameters in the
model's order, consecutive slices), so the sum is the same bit for bit however it is read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from asrpriv.allocator import release_freed_memory
from asrpriv.errors import InputError
from asrpriv.federated.clip import NORM_CHUNK, norm_of_slices
from asrpriv.federated.round_inputs import (SLICE, all_finite, check_finite, init_fingerprint,
                                            recorded_clip)


@dataclass
class DeltaSum:
    """S and what went into it."""

    #: parameter name -> float64 sum (floating parameters only, in the model's order)
    acc: dict
    deltas: int = 0
    total_weight: float = 0.0
    #: the distinct weights of the deltas (a DP release is weighted uniformly)
    weights: set = None


def client_label(payload: dict, path: str) -> str | None:
    """The ``client`` label a delta records (the holder's assertion of whose update it is,
    like a partition label), or None. A label that is not a short printable string is an
    InputError."""
    label = payload.get("client")
    if label is None:
        return None
    if not isinstance(label, str) or not 1 <= len(label) <= 200 or not label.isprintable():
        raise InputError(path, None, f"bad client label {str(label)[:60]!r}")
    return label


def read_cohort(path: str) -> frozenset[str]:
    """A round's cohort: one client id a line (``sample-clients``' output); a repeated id,
    or an empty file, is an InputError."""
    from asrpriv.io.lines import iter_lines

    seen: dict[str, int] = {}
    for lineno, line in iter_lines(path):
        name = line.strip()
        if not name:
            continue
        if len(name.split()) != 1:
            raise InputError(path, lineno, "expected one client id per line")
        if name in seen:
            raise InputError(path, lineno, f"client {name!r} repeats line {seen[name]}")
        seen[name] = lineno
    if not seen:
        raise InputError(path, None, "empty cohort: expected client ids, one a line")
    return frozenset(seen)


def weighted_sum(ref, sources, inputs, bounds=None, progress=None,
                 cohort: frozenset | None = None, cohort_path: str | None = None,
                 made_here: bool = False) -> DeltaSum:
    """Sum the deltas of ``sources`` into float64, each times its factor.

    Args:
        ref: the round's :class:`asrpriv.federated.round_inputs.ModelRef` (every delta is
            checked against it).
        sources: ``(label, open)`` pairs; ``open()`` returns the delta's
            :class:`asrpriv.io.torchfile.TorchFile` (closed here after use).
        inputs: the step's :class:`asrpriv.provenance.Inputs`; each summed delta's privacy
            state is added (a seeded one is refused there).
        bounds: a :class:`asrpriv.federated.privatize.Bounds` (client-level DP: clip and cap),
            or None (factor = the delta's weight, paper 001 Eq. 5).
        progress: optional ``progress(total) -> meter`` with ``update(n)`` and ``close()``.
        cohort: the client ids sampled for this round (``cohort_path`` names their file):
            every delta must carry one of them as its ``client`` label.
        made_here: the caller computed every delta itself, one per client of a cohort without
            repeats (``fl-rounds``): no delta can be a copy of another, so their contents are
            not hashed to find copies (two clients whose updates happen to be equal are two
            clients; the client-label checks below still run).

    Every delta counts once: two deltas with the same content (a copy under another name)
    are refused in every round; in a DP round (``bounds``) or with a cohort, two deltas that
    record the same ``client`` label (e.g. one client trained twice with other seeds) are
    refused too, since the guarantee is per client. Deltas fine-tuned from another model
    (init_fingerprint) are all named in one error at the end; any other defect stops at the
    first.
    """
    import hashlib

    import torch

    total = DeltaSum({name: torch.zeros(spec.shape, dtype=torch.float64)
                      for name, spec in ref.specs.items() if spec.floating}, weights=set())
    mismatched: list[str] = []
    clients: dict[str, int] = {}
    digests: dict[str, int] = {}
    meter = progress(len(sources)) if progress else None
    for number, (label, open_delta) in enumerate(sources, 1):
        with open_delta() as delta:
            payload = delta.obj
            weight = ref.check_delta(label, payload)
            if init_fingerprint(payload, label) != ref.fingerprint:
                mismatched.append(label)
                continue
            client = client_label(payload, label)
            if bounds is not None or cohort is not None:
                if client is not None and client in clients:
                    raise InputError(label, None, f"a second delta of client {client!r} (the first "
                                                  f"is delta {clients[client]}): a DP round takes "
                                                  "one update per client")
                if cohort is not None and client not in cohort:
                    raise InputError(label, None, "records no client label" if client is None else
                                     f"client {client!r} is not in the round's cohort "
                                     f"{cohort_path or ''}".rstrip())
                if client is not None:
                    clients[client] = number
            inputs.add_payload(label, payload)
            tensors = payload["state_dict"]
            digest = None if made_here else hashlib.sha256()
            if bounds is None:
                _add(total.acc, delta, tensors, weight, label, digest)
            else:
                norm = _norm(delta, tensors, label)
                _add(total.acc, delta, tensors, bounds.scale(weight, norm, recorded_clip(payload)),
                     None, digest)
            if digest is not None:
                key = digest.hexdigest()
                if key in digests:
                    raise InputError(label, None, f"the same update as delta {digests[key]} (a "
                                                  "copy under another name?): every update "
                                                  "counts once")
                digests[key] = number
        total.total_weight += weight
        total.weights.add(weight)
        total.deltas += 1
        release_freed_memory()  # this delta's buffers: no heap holes kept resident
        if meter:
            meter.update(1)
    if meter:
        meter.close()
    if mismatched:
        shown = ", ".join(mismatched[:5]) + (f" and {len(mismatched) - 5} more"
                                             if len(mismatched) > 5 else "")
        raise InputError(ref.path, None, f"{len(mismatched)} delta(s) were not fine-tuned from "
                                         f"this model (init_fingerprint differs): {shown}")
    return total


def _add(acc: dict, delta, tensors: dict, scale: float, check: str | None = None,
         digest=None) -> None:
    """``acc += scale * delta`` slice by slice (float64); ``check``: refuse NaN/inf, naming
    that file (not needed after a finite :func:`_norm`); ``digest``: a hashlib object that
    every slice's bytes update (the delta's content, to find copies)."""
    for name, buf in acc.items():
        flat_buf, start = buf.view(-1), 0
        if digest is not None:
            digest.update(name.encode() + b"\0")
        for part in delta.slices(tensors[name], SLICE):
            if check is not None and not all_finite(part):
                raise InputError(check, None, f"parameter {name} holds NaN or inf")
            if digest is not None:
                digest.update(_bytes(part))
            flat_buf[start:start + part.numel()].add_(part, alpha=scale)
            start += part.numel()


def _bytes(part) -> bytes:
    """The raw bytes of a tensor slice (any dtype, bfloat16 too)."""
    import torch

    return part.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes()


def _norm(delta, tensors: dict, label: str) -> float:
    """The delta's L2 norm over all floating parameters (:func:`asrpriv.federated.clip.l2_norm`,
    streamed); refuses NaN/inf."""
    norm = norm_of_slices(part for tensor in tensors.values() if tensor.is_floating_point()
                          for part in delta.slices(tensor, NORM_CHUNK))
    if not math.isfinite(norm):
        for name, tensor in tensors.items():
            check_finite(label, name, delta, tensor)
    return norm
