"""``asrpriv fl-rounds``: paper 001's federated rounds in one process (no Flower, no Ray).

Each round is ``sample-clients`` + ``finetune-lm --by-client`` + ``aggregate --server`` as
library calls (:func:`asrpriv.federated.rounds.run_rounds`): the same files, byte for byte,
without three process starts per round.
"""

from __future__ import annotations

import click

from asrpriv.commands.options import WholeNumber, common_options
from asrpriv.commands.round_options import round_options


@click.command("fl-rounds")
@round_options(
    run_dir_help="Run directory: model-t.pt and state.pt per round, round-t/ (cohort, report). "
                 "Must be new or empty (or --resume).",
    sample_seed_help="sample-clients --seed (round t draws with --round t). Default: the OS's "
                     "secure source (os.urandom). Tests only: under DP it needs "
                     "--allow-seeded-test-noise, and the model is then marked seeded (no epsilon).",
    noise_seed_help="Seed the noise (round t of draw D: NOISE_SEED*100000+D*1000+t; "
                    "asrpriv.federated.seeds). NOT private: tests only.",
    allow_seeded_help="Accept seeded noise and seeded sampling under DP (tests only).",
    after_noise_seed=[click.option("--noise-draw", type=WholeNumber(min=0, max=99), default=0,
                                   metavar="D", show_default=True,
                                   help="With --noise-seed: the draw D of repeated seeded runs "
                                        "of one setting (0: a single run).")])
@click.option("--threads", type=WholeNumber(min=0), default=0, show_default=True,
              help="CPU threads for torch (0 = OMP_NUM_THREADS if set, else min(CPUs, 4)); "
                   "equal deltas to finetune-lm need its thread count.")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True,
              help="Where the clients train (the server round runs on the CPU).")
@click.option("--batch-clients", type=WholeNumber(min=1), default=1, show_default=True,
              help="Train up to this many clients of a round together (torch.func.vmap over "
                   "stacked copies of the model, padded batches); 1: one at a time, the "
                   "shell steps' bits. Deltas agree within the tolerance of "
                   "asrpriv.federated.batched; clipping stays per client.")
@click.option("--workers", type=WholeNumber(min=1), default=1, show_default=True,
              help="Processes that train a round's clients at once (CPU; forked once, the "
                   "weights in shared memory). --threads is then per worker (0: the default "
                   "count divided among them). The same files as --workers 1 at that thread "
                   "count, bit for bit.")
@click.option("--save-deltas", is_flag=True, help="Keep RUN/round-t/deltas/<client>.delta.pt.")
@common_options
def fl_rounds(init_path, train_path, ids, utt2client, clients_path, run_dir, resume, rounds,
              sample_rate, sample_seed, seed, server, server_lr, beta1, beta2, eps, clip,
              noise_multiplier, expected_clients, expected_weight, weight_cap, noise_seed,
              noise_draw, allow_seeded, confidence, lr, epochs, batch_size, train_only, max_words, threads,
              device, batch_clients, workers, save_deltas):
    """Run federated fine-tuning rounds (paper 001) in this process.

    Per round t: Poisson sampling (sample-clients; the OS's secure source unless
    --sample-seed), each sampled client fine-tunes RUN/model-(t-1).pt on its data
    (finetune-lm --by-client, recipe client-001, seed SEED*100000+t), the server aggregates
    (aggregate --server: FedAvg, FedAdam Eq. 5-8, clipping, the Gaussian mechanism with the
    fixed denominator, the privacy history) and writes RUN/model-t.pt, RUN/state.pt and
    RUN/round-t/ (clients.txt, report.json), as fl-simulate does. Under DP a round with
    nobody sampled releases the noise alone, so privacy-report of RUN/model-T.pt gives the
    epsilon of (Z, Q, T). Prints the final model's path on stdout.

    \b
    Example:
      asrpriv fl-rounds --init base.pt --train adapt.tsv --run-dir runs/fl1 --rounds 100 \\
          --sample-rate 0.1 --clip 0.5 --noise-multiplier 1.0 --expected-clients 11.4
    """
    from asrpriv.commands.options import info, warn
    from asrpriv.federated.rounds import RoundSettings, run_rounds

    training = {k: v for k, v in (("lr", lr), ("epochs", epochs), ("batch_size", batch_size))
                if v is not None}
    settings = RoundSettings(
        init=init_path, train=train_path, run_dir=run_dir, rounds=rounds, sample_rate=sample_rate,
        ids=ids, utt2client=utt2client, clients=clients_path, max_words=max_words,
        sample_seed=sample_seed, seed=seed, server=server,
        hparams={"lr": server_lr, "beta1": beta1, "beta2": beta2, "eps": eps}, clip=clip,
        noise_multiplier=noise_multiplier, expected_clients=expected_clients,
        expected_weight=expected_weight, weight_cap=weight_cap, noise_seed=noise_seed,
        noise_draw=noise_draw, allow_seeded=allow_seeded, training=training, confidence=confidence,
        train_only=train_only, threads=threads, device=device, save_deltas=save_deltas,
        batch_clients=batch_clients, workers=workers)
    result = run_rounds(settings, resume=resume, talk=info, warn=warn)
    info(result.summary())
    click.echo(result.final_model)
