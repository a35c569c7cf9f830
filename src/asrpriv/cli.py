"""The ``asrpriv`` command group.

Steps load lazily: ``asrpriv --help`` imports no step module, and no step imports torch,
numpy or scipy at module level unless it needs them to run.
"""

from __future__ import annotations

import importlib
import signal
import sys

import click

from asrpriv import __version__
from asrpriv.errors import AsrprivError, InternalError, cli_flag, spelled

#: step name -> "module:attribute" of its click command, and its one-line summary
#: (kept here so that ``asrpriv --help`` lists steps without importing them).
COMMANDS: dict[str, tuple[str, str]] = {
    "count-unigrams": ("asrpriv.commands.count_unigrams:count_unigrams",
                       "Kernel-weighted unigram pseudo-counts from N-best lists or text."),
    "aggregate": ("asrpriv.commands.aggregate:aggregate",
                  "Sum counts files, or one FedAvg/FedAdam server round on model deltas (with DP)."),
    "add-noise": ("asrpriv.commands.add_noise:add_noise",
                  "Laplace mechanism on counts, or Gaussian mechanism on one model delta."),
    "fma-adapt": ("asrpriv.commands.fma_adapt:fma_adapt",
                  "Marginal adaptation factors from unigram counts."),
    "score-wer": ("asrpriv.commands.score_wer:score_wer",
                  "WER, per-speaker tables and MAPSSWE significance (sclite-compatible)."),
    "finetune-lm": ("asrpriv.commands.finetune_lm:finetune_lm",
                    "Train or fine-tune a word-level neural LM; write model and delta."),
    "perplexity": ("asrpriv.commands.perplexity:perplexity",
                   "Perplexity of a neural or n-gram LM on text."),
    "rescore-nbest": ("asrpriv.commands.rescore_nbest:rescore_nbest",
                      "Second-pass N-best rescoring with neural/n-gram LMs and FMP factors."),
    "tune-weights": ("asrpriv.commands.tune_weights:tune_weights",
                     "Grid-search rescoring weights (LM weight, NNLM share, word penalty) on a dev set."),
    "split-nbest": ("asrpriv.commands.split_nbest:split_nbest",
                    "Split N-best lists by client into time-ordered parts (FL rounds)."),
    "select-nbest": ("asrpriv.commands.select_nbest:select_nbest",
                     "Rows of some clients, 1-best text, references or clients of an N-best TSV."),
    "select-text": ("asrpriv.commands.select_text:select_text",
                    "Lines (by id, every k-th, ~N words), word count or vocabulary of Kaldi text."),
    "pick-best": ("asrpriv.commands.pick_best:pick_best",
                  "The setting with the lowest WER/perplexity among JSON reports; warns at a grid edge."),
    "audit-items": ("asrpriv.commands.audit_items:audit_items",
                    "Cut speakers' utterances into the items of a leakage audit (paper 004)."),
    "privacy-report": ("asrpriv.commands.privacy_report:privacy_report",
                       "Epsilon at delta (RDP and PLD) of a file's privacy history or of (z, q, T)."),
    "sample-clients": ("asrpriv.commands.sample_clients:sample_clients",
                       "Poisson-sample one round's clients (rate q), as the accountant assumes."),
    "train-ngram": ("asrpriv.commands.train_ngram:train_ngram",
                    "Train a back-off n-gram LM (modified Kneser-Ney) and write ARPA."),
    "confidence": ("asrpriv.commands.confidence:confidence",
                   "Word confidences from N-best posteriors; calibration; NCE/ECE/AUC."),
    "interpolate": ("asrpriv.commands.interpolate:interpolate",
                    "Interpolation weights of LMs by EM on held-out text; static ARPA mixtures."),
    "import-nbest": ("asrpriv.commands.import_nbest:import_nbest",
                     "Convert Kaldi/ESPnet/NeMo/SRILM/icefall/TSV N-best lists to our N-best TSV."),
    "cluster-weights": ("asrpriv.commands.cluster_weights:cluster_weights",
                        "Leakage audit: cluster shared weights/counts by who made them (paper 004)."),
    "sanitize": ("asrpriv.commands.sanitize:sanitize",
                 "Replace named entities by random entities of their class (paper 003)."),
    "approx-ngram": ("asrpriv.commands.approx_ngram:approx_ngram",
                     "ARPA n-gram approximation of a neural LM (paper 003 §2.4)."),
    "fmp-rounds": ("asrpriv.commands.fmp_rounds:fmp_rounds",
                   "FMP's rounds (paper 000) for every client in one process (bin/fmp-experiment)."),
    "fl-rounds": ("asrpriv.commands.fl_rounds:fl_rounds",
                  "Federated rounds (paper 001) in one process: sampling, clients, server round."),
    "fl-fmp": ("asrpriv.commands.fl_fmp:fl_fmp",
               "FMP's rounds (paper 000) on Flower's simulation engine (needs asrpriv[flower])."),
    "fl-simulate": ("asrpriv.commands.fl_simulate:fl_simulate",
                    "Federated rounds on Flower's simulation engine (needs asrpriv[flower])."),
}


class LazyGroup(click.Group):
    """A click group that imports a step's module only when that step runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module_name, attr = COMMANDS[cmd_name][0].split(":")
        return getattr(importlib.import_module(module_name), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Steps"):
            formatter.write_dl(rows)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as err:  # the group's own options (asrpriv --bogus)
            raise _usage_error(err, ctx) from None
        except AsrprivError as err:
            raise StepFailed(err) from None

    def invoke(self, ctx: click.Context):
        try:
            with spelled(_flag_of):
                return super().invoke(ctx)
        except AsrprivError as err:
            err.prog = f"asrpriv {ctx.invoked_subcommand or ''}".strip()
            if ctx.meta.get("asrpriv.verbose"):
                import traceback

                traceback.print_exc()
            raise StepFailed(err) from None
        except click.UsageError as err:  # click's own: one line, as every asrpriv error
            raise _usage_error(err, ctx) from None
        except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:
            _quiet_broken_pipe()
        except OSError as err:  # missing file, permission, disk full: the user's to fix
            if ctx.meta.get("asrpriv.verbose"):
                raise
            name = f"{err.filename}: " if err.filename else ""
            wrapped = AsrprivError(f"{name}{err.strerror or err}")
            wrapped.prog = f"asrpriv {ctx.invoked_subcommand or ''}".strip()
            raise StepFailed(wrapped) from None
        except Exception as err:  # noqa: BLE001 - the last line of defence
            if _STOPPED_BY is not None:  # a signal, wrapped by a library: exit as the signal says
                raise Terminated(_STOPPED_BY) from None
            if ctx.meta.get("asrpriv.verbose"):
                raise
            wrapped = InternalError(f"internal error: {type(err).__name__}: {err} "
                                    "(run with --verbose for a traceback)")
            wrapped.prog = f"asrpriv {ctx.invoked_subcommand or ''}".strip()
            raise StepFailed(wrapped) from None


def _flag_of(argument: str) -> str:
    """How the running step's messages name a library argument (:func:`asrpriv.errors.arg`):
    by the step's flag where one of its options carries the argument's name (``--from`` for
    ``source``), else ``--name-with-dashes``. The one place where arguments become flags."""
    ctx = click.get_current_context(silent=True)
    for param in getattr(getattr(ctx, "command", None), "params", ()):
        if isinstance(param, click.Option) and param.name == argument:
            longs = [o for o in param.opts if o.startswith("--")]
            if longs:
                return longs[0]
    return cli_flag(argument)


class StepFailed(click.ClickException):
    """An :class:`AsrprivError` as click's exception: click prints it (one line) and exits
    with its code (2: bad input or usage, 1: internal)."""

    def __init__(self, error: AsrprivError) -> None:
        super().__init__(error.format_message())
        self.error = error
        self.exit_code = error.exit_code

    def show(self, file=None) -> None:  # noqa: D102 - click API
        click.echo(self.error.as_line(), err=True)


def _usage_error(err: click.UsageError, group_ctx: click.Context) -> click.ClickException:
    """Click's usage error as one line ``asrpriv STEP: what (see 'asrpriv STEP --help')``,
    exit 2, with the closest step name suggested for an unknown step (click itself suggests
    the closest options)."""
    import difflib
    import re

    path = err.ctx.command_path if err.ctx is not None else "asrpriv"
    message = err.format_message()
    unknown = re.match(r"No such command '(.*)'\.?$", message)
    if unknown:
        name = unknown.group(1)
        close = difflib.get_close_matches(name, list(COMMANDS), n=1, cutoff=0.5)
        message = f"no such step {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
        path = "asrpriv"
    if isinstance(err, getattr(click.exceptions, "NoArgsIsHelpError", ())):
        return err  # a bare 'asrpriv' (or a step with no_args_is_help) shows its help
    wrapped = AsrprivError(f"{message} (see '{path} --help')")
    wrapped.prog = path
    return StepFailed(wrapped)


def _quiet_broken_pipe() -> None:
    """Downstream closed the pipe (``| head``): exit quietly like a Unix tool."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    sys.exit(141)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="asrpriv")
@click.option("-v", "--verbose", is_flag=True, help="Show tracebacks and debug output on stderr.")
@click.pass_context
def cli(ctx: click.Context, verbose: bool) -> None:
    """Composable steps for privacy-preserving LM personalization in speech recognition.

    Every step reads files or standard input and writes standard output (or -o FILE,
    atomically). Scores are natural-log unless a format says otherwise (ARPA: log10).
    """
    ctx.meta["asrpriv.verbose"] = verbose


def run_step(step: str, args: list[str]) -> None:
    """Run ``asrpriv STEP ARGS`` in-process without exiting: a user error raises
    :class:`AsrprivError`. For callers that still hold argv (new code calls the step's library
    entry, see docs/API.md)."""
    command = cli.get_command(click.Context(cli), step)
    try:
        with spelled(_flag_of):  # errors name the flags, as on the command line
            command.main(args=args, prog_name=f"asrpriv {step}", standalone_mode=False)
    except click.UsageError as err:
        raise AsrprivError(f"{step}: {err.format_message()}") from None


#: exit status of a step stopped by Ctrl-C (SIGINT): 128 + 2, as a shell reports it
EXIT_INTERRUPTED = 130


class Terminated(BaseException):
    """SIGINT/SIGTERM/SIGHUP arrived: unwinds the step (so atomic outputs remove their temp
    files and leave the target as it was)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


#: the signal that stopped the step, once one arrived (None before): a library that turns the
#: raised Terminated into an error of its own (torch's writers wrap what a callback raises in
#: RuntimeError) must not make a stopped step look like a crash
_STOPPED_BY: int | None = None


def _raise_terminated(signum: int, _frame) -> None:
    global _STOPPED_BY
    _STOPPED_BY = signum
    raise Terminated(signum)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point.

    SIGTERM and SIGHUP raise :class:`Terminated` (a BaseException, so no handler mistakes it
    for an error of the step); once the step has unwound and cleaned up, the process ends
    by the same signal, as a Unix tool killed by it would. SIGINT (Ctrl-C) unwinds the same
    way and exits with status 130 (not click's "Aborted!" and 1): ``-o FILE`` is left as it was
    and no temporary file survives. Where SIGINT was ignored when the process started (a
    background job of a non-interactive shell), it stays ignored.
    """
    import os

    from asrpriv.nnlm.runtime import quiet_openmp_wait

    quiet_openmp_wait()  # before any step loads torch (libgomp reads it once)
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _raise_terminated)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _raise_terminated)
    try:
        cli.main(args=argv, prog_name="asrpriv")
    except Terminated as stop:
        if stop.signum == signal.SIGINT:
            sys.exit(EXIT_INTERRUPTED)
        signal.signal(stop.signum, signal.SIG_DFL)
        os.kill(os.getpid(), stop.signum)
        sys.exit(128 + stop.signum)
