"""The options of an FMP run, shared by ``fmp-rounds`` and ``fl-fmp`` (click side).

:func:`fmp_run_options` adds them to a command and hands the command one argument, ``fmp``:
the library's :class:`asrpriv.federated.fmp.FmpRoundsSettings` made from them (the checks
are the library's).
"""

from __future__ import annotations

import functools
from typing import Callable

import click

from asrpriv.commands.options import FiniteFloat, WholeNumber

#: the click parameter names of the block, in option order
_NAMES = ("nbest", "nnlm", "weights_path", "background", "run_dir", "rounds", "sigma", "alpha",
          "beta", "lam", "epsilon", "max_l1", "noise_seed", "noise_draw", "allow_seeded")


def _options(run_dir_help: str, epsilon_help: str) -> list[Callable]:
    return [
        click.option("--nbest", required=True, metavar="TSV",
                     help="The clients' N-best lists (a 'client' column), in time order per client."),
        click.option("--nnlm", required=True, metavar="MODEL",
                     help="The neural LM (rescore-nbest --nnlm)."),
        click.option("--weights", "weights_path", required=True, metavar="FILE",
                     help="Score weights (rescore-nbest --weights, e.g. from tune-weights)."),
        click.option("--background", required=True, metavar="COUNTS",
                     help="Public background unigram counts u (fma-adapt --background; "
                          "add-noise --vocab)."),
        click.option("--run-dir", required=True, metavar="DIR", help=run_dir_help),
        click.option("--rounds", type=WholeNumber(min=1), required=True,
                     help="T: the lists are split in T+1 parts; T count/aggregate rounds."),
        click.option("--sigma", type=FiniteFloat(min=0.0, min_open=True), default=5.0,
                     show_default=True, help="Rank kernel width (count-unigrams --sigma)."),
        click.option("--alpha", type=FiniteFloat(0.0, 1.0), default=0.5, show_default=True,
                     help="Global weight."),
        click.option("--beta", type=FiniteFloat(0.0, 1.0), default=0.25, show_default=True,
                     help="Personal weight."),
        click.option("--lambda", "lam", type=FiniteFloat(min=0.0), default=1.0, show_default=True,
                     help="Factor exponent."),
        click.option("--epsilon", type=FiniteFloat(min=0.0, min_open=True), default=None,
                     help=epsilon_help),
        click.option("--max-l1", type=FiniteFloat(min=0.0, min_open=True), default=15.0,
                     show_default=True,
                     help="DP: per-utterance L1 bound (count-unigrams --unit utterance --max-l1)."),
        click.option("--noise-seed", type=WholeNumber(), default=None,
                     help="Seed the noise (round t of draw D: NOISE_SEED*100000+D*1000+t; "
                          "asrpriv.federated.seeds). NOT private: tests only."),
        click.option("--noise-draw", type=WholeNumber(min=0, max=99), default=0, metavar="D",
                     show_default=True,
                     help="With --noise-seed: the draw D of repeated seeded runs of one setting "
                          "(0: a single run)."),
        click.option("--allow-seeded-test-noise", "allow_seeded", is_flag=True,
                     help="Accept seeded noise (tests only)."),
    ]


def fmp_run_options(run_dir_help: str, epsilon_help: str) -> Callable:
    """Add the FMP run's options to a command, which then takes ``fmp``
    (:class:`asrpriv.federated.fmp.FmpRoundsSettings`) instead of them."""

    def decorate(func: Callable) -> Callable:
        @functools.wraps(func)
        def command(**kwargs):
            from asrpriv.federated.fmp import FmpRoundsSettings, FmpSettings

            v = {name: kwargs.pop(name) for name in _NAMES}
            fmp = FmpRoundsSettings(
                nbest=v["nbest"], nnlm=v["nnlm"], weights=v["weights_path"],
                background=v["background"], run_dir=v["run_dir"], rounds=v["rounds"],
                round=FmpSettings(sigma=v["sigma"], alpha=v["alpha"], beta=v["beta"],
                                  lam=v["lam"], epsilon=v["epsilon"], max_l1=v["max_l1"],
                                  noise_seed=v["noise_seed"], allow_seeded=v["allow_seeded"],
                                  noise_draw=v["noise_draw"]))
            return func(fmp=fmp, **kwargs)

        for option in reversed(_options(run_dir_help, epsilon_help)):
            command = option(command)
        return command

    return decorate
