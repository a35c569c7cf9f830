"""``asrpriv fl-simulate``: paper 001's federated rounds on Flower's simulation engine (Ray).

The client and server logic are the library functions of ``finetune-lm --by-client``,
``sample-clients`` and ``aggregate --server`` (package ``asrpriv_flower``, installed with
``pip install 'asrpriv[flower]'``); flwr is imported inside the command only.
"""

from __future__ import annotations

import click

from asrpriv.commands.options import FiniteFloat, WholeNumber, common_options
from asrpriv.commands.round_options import round_options


@click.command("fl-simulate")
@round_options(
    run_dir_help="Run directory: model-t.pt and state.pt per round, round-t/ (cohort, report), "
                 "Flower's and Ray's files. Must be new or empty (or --resume).",
    sample_seed_help="sample-clients --seed (round t draws with --round t); keep it secret. "
                     "Default: os.urandom.",
    noise_seed_help="Seed the noise (round t: NOISE_SEED*100000+t). NOT private: tests only.",
    allow_seeded_help="Accept seeded noise (tests only).")
@click.option("--workers", type=WholeNumber(min=1), default=1, show_default=True,
              help="CPUs given to Ray (ray.init num_cpus).")
@click.option("--cpus-per-client", type=FiniteFloat(min=0.0, min_open=True), default=1.0,
              show_default=True, help="Flower client_resources num_cpus (and torch threads).")
@click.option("--gpus-per-client", type=FiniteFloat(min=0.0), default=0.0, show_default=True,
              help="Flower client_resources num_gpus (> 0 trains on cuda).")
@click.option("--round-timeout", type=FiniteFloat(min=0.0, min_open=True), default=None,
              metavar="SECONDS", help="Drop (and record) clients that have not replied by then.")
@click.option("--save-deltas", is_flag=True, help="Keep RUN/round-t/deltas/<client>.delta.pt.")
@common_options
def fl_simulate(init_path, train_path, ids, utt2client, clients_path, run_dir, resume, rounds,
                sample_rate, sample_seed, seed, server, server_lr, beta1, beta2, eps, clip,
                noise_multiplier, expected_clients, expected_weight, weight_cap, noise_seed,
                allow_seeded, confidence, lr, epochs, batch_size, train_only, max_words, workers,
                cpus_per_client, gpus_per_client, round_timeout, save_deltas):
    """Run federated fine-tuning rounds (paper 001) on Flower's local simulation engine.

    One virtual client per client of --train; per round: Poisson sampling (sample-clients),
    each sampled client fine-tunes the global model on its data (finetune-lm --by-client,
    recipe client-001) and sends its delta as Flower arrays; the server aggregates exactly as
    aggregate --server does (FedAvg, FedAdam Eq. 5-8, Gaussian mechanism before the
    optimizer, privacy history) and writes RUN/model-t.pt and RUN/state.pt. A client that
    fails or times out is dropped and listed in RUN/round-t/report.json. Prints the final
    model's path on stdout.

    \b
    Example:
      asrpriv fl-simulate --init base.pt --train adapt.tsv --run-dir runs/fl1 --rounds 10 \\
          --sample-rate 0.1 --clip 0.5 --noise-multiplier 1.0 --expected-clients 11.4 \\
          --workers 8
    """
    from asrpriv.commands.flower_common import stderr_talk
    from asrpriv.commands.options import is_verbose
    from asrpriv_flower.settings import FlSettings, client_resources
    from asrpriv_flower.simulate import simulate

    talk = stderr_talk()
    threads, device = client_resources(cpus_per_client, gpus_per_client)
    training = {k: v for k, v in (("lr", lr), ("epochs", epochs), ("batch_size", batch_size))
                if v is not None}
    settings = FlSettings(
        init=init_path, train=train_path, run_dir=run_dir, rounds=rounds, sample_rate=sample_rate,
        ids=ids, utt2client=utt2client, clients=clients_path, max_words=max_words,
        sample_seed=sample_seed, seed=seed, server=server,
        hparams={"lr": server_lr, "beta1": beta1, "beta2": beta2, "eps": eps}, clip=clip,
        noise_multiplier=noise_multiplier, expected_clients=expected_clients,
        expected_weight=expected_weight, weight_cap=weight_cap, noise_seed=noise_seed,
        allow_seeded=allow_seeded, training=training, confidence=confidence,
        train_only=train_only, threads=threads, device=device, round_timeout=round_timeout,
        save_deltas=save_deltas)
    result = simulate(settings, workers=workers, cpus_per_client=cpus_per_client,
                      gpus_per_client=gpus_per_client, resume=resume, talk=talk,
                      verbose=is_verbose())
    talk(result.summary())
    click.echo(result.final_model)
