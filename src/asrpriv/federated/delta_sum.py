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


def weighted_sum(ref, sources, inputs, bounds=None, progress=None) -> DeltaSum:
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

    Deltas fine-tuned from another model (init_fingerprint) are all named in one error at
    the end; any other defect stops at the first.
    """
    import torch

    total = DeltaSum({name: torch.zeros(spec.shape, dtype=torch.float64)
                      for name, spec in ref.specs.items() if spec.floating})
    mismatched: list[str] = []
    meter = progress(len(sources)) if progress else None
    for label, open_delta in sources:
        with open_delta() as delta:
            payload = delta.obj
            weight = ref.check_delta(label, payload)
            if init_fingerprint(payload, label) != ref.fingerprint:
                mismatched.append(label)
                continue
            inputs.add_payload(label, payload)
            tensors = payload["state_dict"]
            if bounds is None:
                _add(total.acc, delta, tensors, weight, label)
            else:
                norm = _norm(delta, tensors, label)
                _add(total.acc, delta, tensors, bounds.scale(weight, norm, recorded_clip(payload)))
        total.total_weight += weight
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


def _add(acc: dict, delta, tensors: dict, scale: float, check: str | None = None) -> None:
    """``acc += scale * delta`` slice by slice (float64); ``check``: refuse NaN/inf, naming
    that file (not needed after a finite :func:`_norm`)."""
    for name, buf in acc.items():
        flat_buf, start = buf.view(-1), 0
        for part in delta.slices(tensors[name], SLICE):
            if check is not None and not all_finite(part):
                raise InputError(check, None, f"parameter {name} holds NaN or inf")
            flat_buf[start:start + part.numel()].add_(part, alpha=scale)
            start += part.numel()


def _norm(delta, tensors: dict, label: str) -> float:
    """The delta's L2 norm over all floating parameters (:func:`asrpriv.federated.clip.l2_norm`,
    streamed); refuses NaN/inf."""
    norm = norm_of_slices(part for tensor in tensors.values() if tensor.is_floating_point()
                          for part in delta.slices(tensor, NORM_CHUNK))
    if not math.isfinite(norm):
        for name, tensor in tensors.items():
            check_finite(label, name, delta, tensor)
    return norm
