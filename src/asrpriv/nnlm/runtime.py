"""Where torch runs: CPU threads, OpenMP's wait behaviour, and the device (one place for all steps).

No torch import at module level (cheap to import from the CLI before torch loads).

**Threads.** :func:`choose_threads` takes ``--threads`` when given, else ``OMP_NUM_THREADS``,
else the CPUs this process may use (``sched_getaffinity``: a batch scheduler's cpuset limits
show there), at most 4 (small LMs gain little beyond). The count does *not* follow the
machine's load: torch's results depend on the thread count (one epoch of a seeded Transformer
or LSTM gives different weights with 1 and 2 threads), so a load-aware count would make a
seeded step's output depend on what else ran at that moment. Cluster users should pass
``--threads`` (or ``OMP_NUM_THREADS``) equal to the cores their job was given.

**Waiting.** torch's CPU build uses GNU OpenMP (libgomp). Between parallel regions an idle
libgomp thread spins for ``GOMP_SPINCOUNT`` iterations (300,000 by default, roughly 0.1-1 ms)
before it sleeps. On a machine of its own that spinning saves wake-ups; beside another CPU-bound
job it takes the core that job (or our own other thread) needs: on 2 shared cores one epoch of
finetune-lm took 118 s instead of 17 s. ``OMP_WAIT_POLICY=PASSIVE`` (never spin) cures that
but costs 1.5-1.8x at idle (every region pays a futex wake-up). :func:`quiet_openmp_wait` sets
a short spin, :data:`SPINCOUNT` iterations (a few microseconds: enough to bridge the short gaps
between the many small regions of an LM step, too short to hold a core that another job wants),
unless the user set ``GOMP_SPINCOUNT`` or ``OMP_WAIT_POLICY`` themselves. Measured on the
shared 2-core development machine (load average 15, 400 AMI sentences, one epoch, 2 threads):
libgomp's default 77-91 s, ``GOMP_SPINCOUNT=50000`` 29-33 s, 10000 16-21 s, PASSIVE 12-21 s,
one thread 11.5-16 s; the issue's idle figures: PASSIVE costs 1.5x (training) and 1.8x
(rescoring) against the default spin. libgomp reads these
variables once, when torch loads it, so the CLI calls :func:`quiet_openmp_wait` before any step
imports torch (``asrpriv.cli.main``), and :func:`use_threads` does it too for library callers
(effective only if torch is not imported yet).

Measured by ``benchmarks/bench_threads.py`` (idle vs beside a competing CPU-bound process).
"""

from __future__ import annotations

import os
import sys

from asrpriv.errors import arg

#: GOMP_SPINCOUNT set when the user set neither it nor OMP_WAIT_POLICY (see the module docstring)
SPINCOUNT = "10000"
#: the most threads a default choice takes
MAX_DEFAULT_THREADS = 4


def quiet_openmp_wait(environ: dict | None = None) -> bool:
    """Set ``GOMP_SPINCOUNT`` to :data:`SPINCOUNT` unless the user chose a wait behaviour.

    Returns True when it set it. Has an effect only before torch (libgomp) is loaded.
    """
    env = os.environ if environ is None else environ
    if "GOMP_SPINCOUNT" in env or "OMP_WAIT_POLICY" in env:
        return False
    env["GOMP_SPINCOUNT"] = SPINCOUNT
    return True


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask; ``os.cpu_count`` off Linux)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def choose_threads(requested: int = 0) -> int:
    """torch CPU threads: ``requested``, else ``OMP_NUM_THREADS``, else the usable CPUs (at most
    :data:`MAX_DEFAULT_THREADS`). Never the machine's current load: see the module docstring."""
    if requested:
        return requested
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, min(usable_cpus(), MAX_DEFAULT_THREADS))


def use_threads(requested: int = 0) -> int:
    """Choose the thread count (:func:`choose_threads`), give it to torch, return it.

    Also sets the short OpenMP spin (:func:`quiet_openmp_wait`) when torch is not loaded yet.
    """
    if "torch" not in sys.modules:
        quiet_openmp_wait()
    import torch

    threads = choose_threads(requested)
    torch.set_num_threads(threads)
    return threads


def check_device(device: str) -> None:
    """Refuse a device other than cpu/cuda[:N], and ``cuda`` where torch sees no CUDA device
    (AsrprivError)."""
    from asrpriv.errors import AsrprivError

    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise AsrprivError(f"{arg('device')} must be cpu or cuda, got {device!r}")
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise AsrprivError(f"{arg('device')} cuda: no CUDA device is available")


def bf16_supported(device: str = "cpu") -> bool:
    """Whether ``device`` runs bfloat16 matrix products natively (CPU: AVX512-BF16 or AMX, as
    oneDNN reports it; CUDA: ``torch.cuda.is_bf16_supported``)."""
    import torch

    if device.startswith("cuda"):
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False
