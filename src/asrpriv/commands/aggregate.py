"""``asrpriv aggregate``: sum counts files (paper 000, Eq. 6), or one server round on model
deltas (paper 001, Eq. 5-8) with optional client-level DP."""

from __future__ import annotations

import click

from asrpriv.commands.options import (FiniteFloat, common_options, info, output_option, seed_option,
                                    seeded_warning, warn)

EPILOG = """\b
Model deltas (paper 001): --server fedavg|fedadam --model MODEL --state STATE -o NEW DELTA...
  Delta_t = sum_i w_i Delta_i / sum_i w_i, w_i = the client's words (Eq. 5); a delta is
  init - new, so the server subtracts it. FedAvg: theta - lr * Delta_t (lr 1.0).
  FedAdam (Eq. 6-8): m = b1 m + (1-b1) D; v = b2 v + (1-b2) D^2; m_hat = m/(1-b1^t),
  v_hat = v/(1-b2^t) from t = 1; theta - lr * m_hat / sqrt(v_hat + eps), eps INSIDE the
  root (lr 0.001, b1 0.9, b2 0.999, eps 1e-8).
  Flower's FedAdam puts tau outside the root (sqrt(v) + tau) and folds the bias correction
  into the step, eta*sqrt(1-b2^t)/(1-b1^t) with t = round+1; Reddi et al.'s reference has no
  bias correction and tau outside the root. Same hyper-parameters, different updates.
  Every delta must record the fingerprint of MODEL (init_fingerprint); STATE holds m, v, t
  and the new model's fingerprint, is created when absent and replaced atomically.
\b
Client-level DP (McMahan et al. 2018): --noise-multiplier Z --clip C --sample-rate Q
  (--expected-clients N | --expected-weight W [--weight-cap WORDS]). Each delta is clipped
  to L2 norm C (here if its client did not: central DP only), weighted min(words/cap, 1),
  summed (sensitivity C), N(0, (Z C)^2) added to the sum, divided by the FIXED N or W:
  noise std Z*C/N on Delta_t, before the server optimizer. --noise-multiplier 0 = the same
  path without noise. The new model's privacy_history gains this round's Gaussian release.
  See docs/FEDERATED.md."""


@click.command("aggregate", epilog=EPILOG)
@click.argument("inputs", nargs=-1, metavar="[COUNTS... | DELTA...]")
@click.option("--disjoint", is_flag=True,
              help="Counts: the inputs come from disjoint data (e.g. different rounds' new "
                   "utterances), so their privacy histories compose in parallel (epsilon = the "
                   "maximum). Refused unless the files prove it: each records a partition "
                   "(count-unigrams --partition), no two overlap, no release occurs twice; the "
                   "contribution bounds must agree and stay. Default: sequential composition "
                   "(epsilons add up) and the sum's max_l1 is the SUM of the inputs' bounds (one "
                   "unit may be in every input). The same file or a copy twice is refused.")
@click.option("--allow-empty", is_flag=True, help="Counts: accept files without any count row.")
@click.option("--server", type=click.Choice(["fedavg", "fedadam"]), default=None,
              help="Deltas: the server optimizer (paper 001 Eq. 5-8).")
@click.option("--model", "model_path", metavar="MODEL", default=None,
              help="Deltas: the current global model, from which this round's clients started.")
@click.option("--state", "state_path", metavar="STATE", default=None,
              help="Deltas: the server state file (m, v, t); created when absent, replaced "
                   "atomically. Required for fedadam.")
@click.option("--server-lr", type=FiniteFloat(), default=None,
              help="Server learning rate [fedavg 1.0, fedadam 0.001].")
@click.option("--beta1", type=FiniteFloat(), default=None, help="FedAdam b1 [0.9].")
@click.option("--beta2", type=FiniteFloat(), default=None, help="FedAdam b2 [0.999].")
@click.option("--eps", type=FiniteFloat(), default=None,
              help="FedAdam eps, inside the square root [1e-8].")
@click.option("--noise-multiplier", type=FiniteFloat(), default=None,
              help="Client-level DP: Gaussian noise std / L2 sensitivity (z).")
@click.option("--clip", type=FiniteFloat(), default=None,
              help="Client-level DP: L2 bound C of each client's whole delta.")
@click.option("--expected-clients", type=FiniteFloat(), default=None,
              help="Client-level DP: the fixed denominator q*N (expected clients per round; "
                   "unit weights).")
@click.option("--expected-weight", type=FiniteFloat(), default=None,
              help="Client-level DP: the fixed denominator q*W (expected sum of capped weights).")
@click.option("--weight-cap", type=FiniteFloat(), default=None, metavar="WORDS",
              help="Client-level DP: weight min(words / WORDS, 1) (default: every client 1).")
@click.option("--sample-rate", type=FiniteFloat(), default=None,
              help="Client-level DP: the Poisson rate q with which the round's clients were "
                   "sampled (sample-clients --rate); recorded for the accountant.")
@click.option("--cohort", metavar="FILE", default=None,
              help="Deltas: the client ids sampled for this round (sample-clients' output): every "
                   "delta must record one of them as its client label, none twice.")
@click.option("--aggregate-out", metavar="FILE", default=None,
              help="Deltas: also write Delta_t (after noise, before the server optimizer) as a "
                   "delta file.")
@seed_option("Seed the DP noise (tests only: NOT private; the output is marked seeded). "
             "Default: os.urandom.")
@click.option("--allow-seeded-test-noise", "allow_seeded", is_flag=True,
              help="Tests only: accept inputs that carry seeded (not private) noise.")
@click.option("--debug-private-stats", "debug_private", is_flag=True,
              help="Also print un-noised statistics of the clients' data: how many deltas "
                   "exceeded --clip, the total of their word counts. Not private: debugging only.")
@output_option
@common_options
def aggregate(inputs, disjoint, allow_empty, server, model_path, state_path, server_lr, beta1,
              beta2, eps, noise_multiplier, clip, expected_clients, expected_weight, weight_cap,
              sample_rate, cohort, aggregate_out, seed, allow_seeded, debug_private, output):
    """Sum counts files ('-' or none = stdin), or apply one server round to model deltas.

    Counts: the FedAvg of unigram distributions weighted by their pseudo-count totals
    (000 Eq. 6) is exactly the sum of the counts. Summing is associative and commutative, so
    batch jobs can reduce in a tree. Files with different units, bounds or noise state are
    refused.

    Deltas (torch files, @LISTFILE or directories of *.delta.pt; read one at a time): see below.
    """
    from asrpriv.federated.aggregate_step import AggregateSettings, aggregate as run
    from asrpriv.progress import Progress

    result = run(AggregateSettings(
        inputs=inputs, output=output, disjoint=disjoint, allow_empty=allow_empty, server=server,
        model=model_path, state=state_path, server_lr=server_lr, beta1=beta1, beta2=beta2,
        eps=eps, noise_multiplier=noise_multiplier, clip=clip, expected_clients=expected_clients,
        expected_weight=expected_weight, weight_cap=weight_cap, sample_rate=sample_rate, cohort=cohort,
        aggregate_out=aggregate_out, seed=seed, allow_seeded=allow_seeded,
        debug_private=debug_private),
        progress=lambda total: Progress("deltas", total=total), seeded_warning=seeded_warning)
    for line in result.warnings:
        warn(line)
    for line in result.notes:
        info(line)
