"""How many CPU threads torch uses in the NNLM steps (finetune-lm, perplexity, interpolate,
approx-ngram).

The ``finetune-lm`` step itself is :mod:`asrpriv.federated.finetune`.
"""

from __future__ import annotations

import os


def choose_threads(requested: int) -> int:
    """torch CPU threads: ``requested``, else OMP_NUM_THREADS, else min(available CPUs, 4).

    Small LMs gain little beyond a few threads, and more threads than free cores make every
    step slower (spin-waiting), so the default stays modest.
    """
    if requested:
        return requested
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 4))
