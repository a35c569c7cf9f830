"""``asrpriv fl-simulate``: the federated fine-tuning rounds on Flower's simulation engine."""

from __future__ import annotations

import click

from asrpriv.options import FiniteFloat, common_options, info


@click.command("fl-simulate")
@click.option("--init", "init_path", required=True, metavar="MODEL",
              help="The initial global model (finetune-lm).")
@click.option("--train", "train_path", required=True, metavar="ADAPT.tsv",
              help="Adaptation data with a 'client' column (N-best TSV or text TSV).")
@click.option("--rounds", type=click.IntRange(min=1), required=True)
@click.option("--sample-rate", type=FiniteFloat(), required=True,
              help="Poisson rate q: each client joins a round with probability q "
                   "(as 'asrpriv sample-clients --round T', rounds counted from 0).")
@click.option("--server", type=click.Choice(["fedadam", "fedavg"]), default="fedadam",
              show_default=True)
@click.option("--server-lr", type=FiniteFloat(), default=None)
@click.option("--clip", type=FiniteFloat(), default=None, help="Client L2 clip C (and DP's bound).")
@click.option("--noise-multiplier", type=FiniteFloat(), default=None,
              help="Gaussian mechanism z on the clipped aggregate (needs --clip and "
                   "--expected-clients).")
@click.option("--expected-clients", type=FiniteFloat(), default=None,
              help="DP's fixed denominator q N.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Client sampling and client training seed (as the shell recipe's).")
@click.option("--noise-seed", type=int, default=None,
              help="Seed the DP noise (tests only: NOT private).")
@click.option("--num-supernodes", type=click.IntRange(min=1), default=4, show_default=True,
              help="Virtual Flower nodes (workers) that run the client updates.")
@click.option("--out", "out_dir", required=True, metavar="DIR",
              help="Run directory: round_T/ (deltas, model.pt, clients.txt, failed.txt), state.pt.")
@click.option("--client-timeout", type=FiniteFloat(), default=None, metavar="SECONDS",
              help="Drop (and list in failed.txt) the clients that have not answered a round "
                   "after this long. Default: wait for all.")
@click.option("--fail-client", "fail_clients", multiple=True, hidden=True)
@common_options
def fl_simulate(init_path, train_path, rounds, sample_rate, server, server_lr, clip,
                noise_multiplier, expected_clients, seed, noise_seed, num_supernodes, out_dir,
                client_timeout, fail_clients):
    """Run federated rounds on Flower's simulation engine (Ray) with asrpriv's own client and
    server code: the same numbers as 'sample-clients | finetune-lm --by-client | aggregate'.

    Needs the optional extra: pip install 'asrpriv[flower]'. Flower's files go to DIR/.flwr,
    Ray's to a private temporary directory removed at the end; telemetry and update checks
    are off.
    """
    import os

    from asrpriv.errors import AsrprivError

    try:
        import flwr  # noqa: F401
    except ImportError:
        raise AsrprivError("Flower is not installed: pip install 'asrpriv[flower]'") from None
    os.makedirs(out_dir, exist_ok=True)
    out_dir = os.path.abspath(out_dir)
    import shutil
    import tempfile

    # Ray's session directory holds AF_UNIX sockets (paths <= 107 bytes), so it goes to a short
    # private temporary directory, removed at the end, rather than inside a possibly long DIR
    ray_tmp = tempfile.mkdtemp(prefix="ray-", dir="/tmp" if os.path.isdir("/tmp") else None)
    os.environ.update({"FLWR_HOME": os.path.join(out_dir, ".flwr"), "RAY_TMPDIR": ray_tmp,
                       "FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1"})
    from asrpriv_flower.app import RunSettings, client_app, server_app
    from flwr.simulation import run_simulation

    hparams = {"lr": server_lr} if server_lr is not None else {}
    settings = RunSettings(os.path.abspath(init_path), os.path.abspath(train_path), out_dir,
                           rounds, sample_rate, server, hparams, seed, clip, noise_multiplier,
                           expected_clients, noise_seed, client_timeout, list(fail_clients))
    settings_path = os.path.join(out_dir, "settings.json")
    settings.save(settings_path)
    os.environ["ASRPRIV_FL_SETTINGS"] = settings_path
    info(f"fl-simulate: {rounds} round(s), q {sample_rate:g}, {num_supernodes} virtual nodes")
    try:
        run_simulation(server_app=server_app, client_app=client_app,
                       num_supernodes=num_supernodes,
                       backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                                       "init_args": {"num_cpus": min(2, os.cpu_count() or 1),
                                                     "include_dashboard": False}})
    finally:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        shutil.rmtree(ray_tmp, ignore_errors=True)
    final = os.path.join(out_dir, f"round_{rounds}", "model.pt")
    if not os.path.exists(final):
        raise AsrprivError(f"no model after round {rounds} (see {out_dir}/round_*/failed.txt)")
    info(f"fl-simulate: {final}")
