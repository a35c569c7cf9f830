"""Run the federated rounds on Flower's simulation engine (Ray), one run directory per run.

:func:`simulate` checks the inputs, lays out the run directory, starts
``flwr.simulation.run_simulation`` with one virtual SuperNode per client (the ClientApp of
:mod:`asrpriv_flower.client_app`) and our ServerApp (:class:`asrpriv_flower.strategy.AsrprivStrategy`),
and stops Ray afterwards. Run directory::

    RUN/run.json                  the settings (seeds included)
    RUN/model-0.pt                a copy of --init; RUN/model-t.pt after round t (atomic)
    RUN/state.pt                  the server state (aggregate --state), after each model
    RUN/round-t/clients.txt       the cohort (sample-clients' output for round t)
    RUN/round-t/report.json       contributed / dropped (with reasons) / noise std / seconds
    RUN/round-t/deltas/           with --save-deltas: <client>.delta.pt as finetune-lm writes
    RUN/flwr-home/                FLWR_HOME (Flower writes nothing to ~/.flwr)
    RUN/ray/                      RAY_TMPDIR: Ray's session files and logs

Ray's sockets live under RAY_TMPDIR and an AF_UNIX path may not exceed 107 bytes, which a
run directory's path often does: RAY_TMPDIR is then a short symbolic link
``/tmp/asrpriv-fl-XXXXXX/r`` to ``RUN/ray`` (the files are in RUN; the link is removed at the end).

Resuming: with ``resume=True`` a run directory whose last round T wrote ``model-T.pt`` and the
matching ``state.pt`` goes on with round T+1 (the same settings are required).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from dataclasses import dataclass, field

from asrpriv_flower.settings import FlSettings

#: environment for Flower and Ray inside a run (set before flwr/ray are imported)
QUIET_ENV = {"FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1",
             "RAY_USAGE_STATS_ENABLED": "0", "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0",
             "RAY_DEDUP_LOGS": "0"}
#: longest RAY_TMPDIR used as it is: Ray adds ~78 bytes (ray/session_<date>_<pid>/sockets/plasma_store)
MAX_RAY_TMPDIR = 28


@dataclass
class SimulationResult:
    rounds: list = field(default_factory=list)
    final_model: str = ""
    seconds: float = 0.0
    ray_tmpdir: str = ""

    def summary(self) -> str:
        """The line ``fl-simulate`` says on stderr: rounds, seconds, dropped client updates."""
        dropped = sum(len(r["dropped"]) for r in self.rounds)
        return (f"fl-simulate: {len(self.rounds)} round(s) in {self.seconds:.1f} s"
                + (f", {dropped} client update(s) dropped" if dropped else "")
                + f"; final model {self.final_model}")


def population_of(settings) -> list[str]:
    """The sampling population (:func:`asrpriv.federated.rounds.population_of`)."""
    from asrpriv.federated.rounds import population_of as population

    return population(settings)


def check_settings(settings) -> None:
    """:func:`asrpriv.federated.rounds.check_settings` (fl-rounds' checks)."""
    from asrpriv.federated.rounds import check_settings as check

    check(settings)


def last_round(run_dir: str) -> int:
    """The highest t with RUN/model-t.pt (0 for a fresh run directory)."""
    from asrpriv.federated.rounds import last_round as last

    return last(run_dir)


def prepare_run_dir(settings, resume: bool) -> int:
    """Create RUN (or check it for --resume); return the first round to run
    (:func:`asrpriv.federated.rounds.prepare_run_dir`)."""
    from asrpriv.federated.rounds import prepare_run_dir as prepare

    return prepare(settings, resume)


@contextlib.contextmanager
def run_environment(run_dir: str):
    """FLWR_HOME and RAY_TMPDIR inside RUN, telemetry and update checks off; restored after."""
    keys = ["FLWR_HOME", "RAY_TMPDIR", "PYTHONPATH", *QUIET_ENV]
    saved = {k: os.environ.get(k) for k in keys}
    home = os.path.join(os.path.abspath(run_dir), "flwr-home")
    ray_dir = os.path.join(os.path.abspath(run_dir), "ray")
    os.makedirs(home, exist_ok=True)
    os.makedirs(ray_dir, exist_ok=True)
    link_dir = None
    ray_tmp = ray_dir
    if len(ray_dir) > MAX_RAY_TMPDIR:
        link_dir = tempfile.mkdtemp(prefix="asrpriv-fl-", dir="/tmp" if os.path.isdir("/tmp") else None)
        ray_tmp = os.path.join(link_dir, "r")
        os.symlink(ray_dir, ray_tmp)
    os.environ.update(QUIET_ENV)
    os.environ["FLWR_HOME"] = home
    os.environ["RAY_TMPDIR"] = ray_tmp
    try:
        yield ray_tmp
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if link_dir is not None:
            with contextlib.suppress(OSError):
                os.unlink(ray_tmp)
                os.rmdir(link_dir)


def run_apps(server_app, client_app, supernodes: int, *, workers: int = 1,
             cpus_per_client: float = 1.0, gpus_per_client: float = 0.0,
             verbose: bool = False) -> None:
    """``flwr.simulation.run_simulation`` of the two apps (inside :func:`run_environment`):
    Ray with ``workers`` CPUs, Flower's ``client_resources``, Flower's logging quiet unless
    ``verbose``; Ray is shut down afterwards even if the run failed."""
    import logging

    import flwr  # noqa: F401  (after the environment is set)
    from flwr.simulation import run_simulation

    flwr_logger = logging.getLogger("flwr")
    level = flwr_logger.level
    flwr_logger.setLevel(logging.INFO if verbose else logging.CRITICAL)
    backend = {"init_args": {"num_cpus": max(1, int(workers)),
                             "logging_level": "INFO" if verbose else "ERROR",
                             "log_to_driver": bool(verbose)},
               "client_resources": {"num_cpus": float(cpus_per_client),
                                    "num_gpus": float(gpus_per_client)}}
    try:
        run_simulation(server_app, client_app, num_supernodes=supernodes,
                       backend_config=backend, verbose_logging=verbose)
    finally:
        flwr_logger.setLevel(level)
        import ray

        if ray.is_initialized():
            ray.shutdown()


def simulate(settings: FlSettings, *, workers: int = 1, cpus_per_client: float = 1.0,
             gpus_per_client: float = 0.0, resume: bool = False, talk=lambda s: None,
             verbose: bool = False) -> SimulationResult:
    """``fl-simulate``: run ``settings.rounds`` rounds on Flower's simulation engine; see the
    module doc. Every check first (flwr installed, :func:`check_settings`, the resources).

    Args:
        workers: CPUs Ray may use (``ray.init(num_cpus=...)``); clients run
            ``workers / cpus_per_client`` at a time.
        cpus_per_client, gpus_per_client: Flower's ``client_resources``
            (:func:`asrpriv_flower.settings.client_resources`: the clients' threads and device).
    """
    from asrpriv_flower import check_resources, require_flower

    require_flower("fl-simulate")
    check_resources(workers, cpus_per_client, gpus_per_client)
    check_settings(settings)
    population = population_of(settings)
    first = prepare_run_dir(settings, resume)
    started = time.monotonic()
    result = SimulationResult()
    with run_environment(settings.run_dir) as ray_tmp:
        from asrpriv_flower.client_app import make_client_app
        from asrpriv_flower.server_app import make_server_app

        result.ray_tmpdir = ray_tmp
        holder: dict = {}
        run_apps(make_server_app(settings, population, first, talk, holder), make_client_app(),
                 len(population), workers=workers, cpus_per_client=cpus_per_client,
                 gpus_per_client=gpus_per_client, verbose=verbose)
    strategy = holder.get("strategy")
    result.rounds = strategy.reports if strategy else []
    from asrpriv.federated.rounds import model_path

    result.final_model = model_path(settings.run_dir, last_round(settings.run_dir))
    result.seconds = time.monotonic() - started
    return result
