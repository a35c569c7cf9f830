"""The options of paper 001's federated rounds, shared by ``fl-rounds`` and ``fl-simulate``
(click side): the data, the run directory, sampling, the server optimizer, client-level DP and
the clients' training. Both commands build the library's
:class:`asrpriv.federated.rounds.RoundSettings` from them; the help texts that differ between
the two (the run directory, seeded sampling and noise) are arguments.
"""

from __future__ import annotations

from typing import Callable, Sequence

import click

from asrpriv.commands.options import FiniteFloat, WholeNumber


def round_options(run_dir_help: str, sample_seed_help: str, noise_seed_help: str,
                  allow_seeded_help: str, after_noise_seed: Sequence[Callable] = ()) -> Callable:
    """Add the federated round's options to a command, in this order; ``after_noise_seed``:
    options of one command that belong beside ``--noise-seed`` (fl-rounds' ``--noise-draw``)."""
    options = [
        click.option("--init", "init_path", required=True, metavar="MODEL",
                     help="The initial global model (copied to RUN/model-0.pt)."),
        click.option("--train", "train_path", required=True, metavar="FILE",
                     help="The clients' adaptation data: N-best TSV with a 'client' column "
                          "(rank-1 rows; 'confidence' for the confidence losses) or text with "
                          "--utt2client."),
        click.option("--ids", is_flag=True,
                     help="Plain-text --train is Kaldi text (first field = utterance id)."),
        click.option("--utt2client", default=None, metavar="FILE", help="Kaldi utt_id -> client map."),
        click.option("--clients", "clients_path", default=None, metavar="LIST",
                     help="The population (one id a line); default: every client of --train."),
        click.option("--run-dir", required=True, metavar="DIR", help=run_dir_help),
        click.option("--resume", is_flag=True, help="Go on from the last round written in --run-dir."),
        click.option("--rounds", type=WholeNumber(min=1), required=True, help="Rounds T."),
        click.option("--sample-rate", type=FiniteFloat(0.0, 1.0, min_open=True), required=True,
                     help="Poisson rate q (sample-clients --rate; aggregate --sample-rate)."),
        click.option("--sample-seed", type=WholeNumber(), default=None, help=sample_seed_help),
        click.option("-s", "--seed", type=WholeNumber(), default=None,
                     help="Client training seed: round t trains with finetune-lm --seed SEED*100000+t."),
        click.option("--server", type=click.Choice(["fedavg", "fedadam"]), default="fedadam",
                     show_default=True),
        click.option("--server-lr", type=FiniteFloat(), default=None,
                     help="Server lr [fedavg 1.0, fedadam 0.001]."),
        click.option("--beta1", type=FiniteFloat(), default=None, help="FedAdam b1 [0.9]."),
        click.option("--beta2", type=FiniteFloat(), default=None, help="FedAdam b2 [0.999]."),
        click.option("--eps", type=FiniteFloat(), default=None, help="FedAdam eps inside the root [1e-8]."),
        click.option("--clip", type=FiniteFloat(min=0.0, min_open=True), default=None, metavar="C",
                     help="Clients clip their delta to L2 norm C (finetune-lm --clip); with DP the "
                          "server clips to C too (aggregate --clip)."),
        click.option("--noise-multiplier", type=FiniteFloat(min=0.0), default=None, metavar="Z",
                     help="Gaussian mechanism: noise std Z*C on the clipped sum (aggregate)."),
        click.option("--expected-clients", type=FiniteFloat(min=0.0, min_open=True), default=None,
                     help="DP: the fixed denominator q*N (aggregate --expected-clients)."),
        click.option("--expected-weight", type=FiniteFloat(min=0.0, min_open=True), default=None,
                     help="DP: fixed denominator q*W with --weight-cap."),
        click.option("--weight-cap", type=FiniteFloat(min=0.0, min_open=True), default=None,
                     metavar="WORDS", help="DP: capped client weights min(words/WORDS, 1)."),
        click.option("--noise-seed", type=WholeNumber(), default=None, help=noise_seed_help),
        *after_noise_seed,
        click.option("--allow-seeded-test-noise", "allow_seeded", is_flag=True,
                     help=allow_seeded_help),
        click.option("--confidence", default="none", show_default=True,
                     metavar="none|hard:C|utterance|token",
                     help="Client confidence loss (finetune-lm --confidence)."),
        click.option("--lr", type=FiniteFloat(min=0.0, min_open=True), default=None,
                     help="Client lr [client-001: 1.0]."),
        click.option("--epochs", type=WholeNumber(min=1), default=None, help="Client epochs [1]."),
        click.option("--batch-size", type=WholeNumber(min=1), default=None, help="Client batch [8]."),
        click.option("--train-only", type=click.Choice(["all", "output"]), default="all",
                     show_default=True),
        click.option("--max-words", type=WholeNumber(min=1), default=1000, show_default=True,
                     help="Refuse a sentence longer than this."),
    ]

    def decorate(func: Callable) -> Callable:
        for option in reversed(options):
            func = option(func)
        return func

    return decorate
