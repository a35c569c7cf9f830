"""Options shared by every step, so that all steps take the same common flags (click side).

The stderr talk (``info``, ``warn``, ...) lives in :mod:`asrpriv.talk` and is re-exported here."""

from __future__ import annotations

from typing import Callable

import click

from asrpriv import talk
from asrpriv.talk import info, is_quiet, is_verbose, seeded_warning, warn  # noqa: F401 - re-exported

def _option_name(param: click.Parameter | None) -> str:
    """The option's longest spelling (``--epsilon``), as messages name it."""
    return max(param.opts, key=len) if param is not None and param.opts else "value"


def _refuse_digit_groups(value, param: click.Parameter | None, expected: str) -> None:
    """Python reads ``1_0`` as 10 (``int``, ``float``); nobody means that: one line, exit 2."""
    from asrpriv.errors import AsrprivError

    if isinstance(value, str) and "_" in value:
        raise AsrprivError(f"{_option_name(param)}: expected {expected}, got {value!r}")


class _RangeHelp:
    """click's help text for a range option: nothing when it has no bounds."""

    def _describe_range(self) -> str:
        if self.min is None and self.max is None:
            return ""
        return super()._describe_range()


class FiniteFloat(_RangeHelp, click.FloatRange):
    """A float option that refuses NaN and infinities (click's FloatRange lets NaN through).

    Non-finite values end the step with one line (exit 2); range bounds work as in FloatRange.
    """

    name = "float"

    def convert(self, value, param, ctx):
        import math

        from asrpriv.errors import AsrprivError

        _refuse_digit_groups(value, param, "a number")
        rv = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(rv):
            raise AsrprivError(f"{_option_name(param)}: expected a finite number, got {value!r}")
        return super().convert(rv, param, ctx)


class WholeNumber(_RangeHelp, click.IntRange):
    """An integer option that refuses Python's digit groups (``int('1_0')`` is 10: nobody
    means that) with one line (exit 2); range bounds work as in click's IntRange."""

    name = "integer"

    def convert(self, value, param, ctx):
        _refuse_digit_groups(value, param, "a whole number")
        return super().convert(value, param, ctx)


def _set_meta(key: str):
    def callback(ctx: click.Context, _param: click.Parameter, value):
        if value:
            ctx.meta[key] = value
        return value

    return callback


def common_options(func: Callable) -> Callable:
    """Add ``-q/--quiet`` and ``-v/--verbose`` (stored in ``ctx.meta``) to a step."""
    func = click.option("-v", "--verbose", is_flag=True, expose_value=False,
                        callback=_set_meta("asrpriv.verbose"),
                        help="Show tracebacks and debug output on stderr.")(func)
    func = click.option("-q", "--quiet", is_flag=True, expose_value=False,
                        callback=_set_meta("asrpriv.quiet"),
                        help="Print nothing on stderr but errors (no progress bar).")(func)
    return func


def check_output_path(_ctx: click.Context, param: click.Parameter, value):
    """Click callback: an output path that cannot be written fails before any work starts."""
    from asrpriv.io.output import check_writable

    if value is not None:
        check_writable(value, "/".join(param.opts[-1:]) or "-o")
    return value


def output_option(func: Callable) -> Callable:
    """``-o/--output FILE``: standard output by default; a file is written atomically."""
    return click.option("-o", "--output", "output", default="-", show_default=True,
                        metavar="FILE", callback=check_output_path,
                        help="Output file ('-' = stdout); written atomically (a symlink is "
                             "written through, a FIFO or device directly).")(func)


def seed_option(help_text: str = "Seed for the random generator (repeatable runs).") -> Callable:
    return click.option("-s", "--seed", type=WholeNumber(), default=None, help=help_text)


def _ctx_quiet() -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx and ctx.meta.get("asrpriv.quiet"))


def _ctx_verbose() -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx and ctx.meta.get("asrpriv.verbose"))


def _ctx_prog() -> str:
    ctx = click.get_current_context(silent=True)
    return f"asrpriv {ctx.info_name}" if ctx and ctx.parent else "asrpriv"


def _echo_err(line: str) -> None:
    click.echo(line, err=True)


# library talk (asrpriv.talk) reads -q/-v and the step name from the running click command
talk.install(_ctx_quiet, _ctx_verbose, _ctx_prog, _echo_err)
