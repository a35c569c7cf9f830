"""asrpriv's federated rounds (paper 001) as a Flower app: ClientApp, ServerApp and Strategy.

A separate top-level package, installed with ``pip install 'asrpriv[flower]'`` (``flwr`` with
its simulation extra, i.e. Ray). Nothing in :mod:`asrpriv` imports it at module level; the
``asrpriv fl-simulate`` step imports it inside the command.

The client and server logic are asrpriv's own library functions, so every engine gives the
same numbers:

- client (:mod:`asrpriv_flower.client_app`): :func:`asrpriv.federated.client.client_update`
  (``finetune-lm --by-client``'s fine-tuning, confidence losses, clipping);
- server (:mod:`asrpriv_flower.strategy`): Poisson sampling by
  :func:`asrpriv.federated.sampling.poisson_sample` (``sample-clients``), and the round by
  :func:`asrpriv.federated.aggregate.run_round` (``aggregate --server``: weighted FedAvg,
  FedAdam of paper 001 Eq. 5-8, Gaussian mechanism with the fixed denominator before the
  optimizer, the privacy history in each round's model).

Flower's own ``FedAdam`` and DP wrappers are not used: its FedAdam puts tau outside the square
root and folds a bias correction with t = round + 1 into the step; its server-side
fixed-clipping wrapper adds the noise to the wrapped strategy's *output* (after the Adam step).
See docs/FLOWER.md.
"""

from __future__ import annotations


def require_flower(step: str) -> None:
    """Raise a one-line AsrprivError unless flwr and Ray can be imported (the Flower steps'
    entries call it first)."""
    from asrpriv.errors import AsrprivError

    try:
        import flwr  # noqa: F401
        import ray  # noqa: F401
    except ImportError:
        raise AsrprivError(f"{step} needs Flower (flwr with Ray): pip install 'asrpriv[flower]'") from None


def check_resources(workers, cpus_per_client: float = 1.0, gpus_per_client: float = 0.0) -> None:
    """Refuse what Ray cannot be given: ``workers`` (CPUs, a whole number >= 1), a client's CPU
    share (> 0) and GPU share (>= 0), finite."""
    import math

    from asrpriv.errors import AsrprivError

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise AsrprivError(f"--workers must be a whole number >= 1, got {workers!r}")
    for name, value, positive in (("--cpus-per-client", cpus_per_client, True),
                                  ("--gpus-per-client", gpus_per_client, False)):
        if not math.isfinite(float(value)) or value < 0 or (positive and value == 0):
            raise AsrprivError(f"{name} must be a finite number {'> 0' if positive else '>= 0'}, "
                               f"got {value}")
