"""The command line: `kernelseek eval|compare|scenarios|run|resume|ask|fork|runs|bank|trace|report|experiment`.

Each command lives in `kernelseek/commands/<name>.py` and registers itself here, so the agent stack is
imported only by the commands that need it (`kernelseek eval` runs with torch alone).
"""

from __future__ import annotations

import gc
import importlib

import typer
from typer.core import TyperOption

# A flag takes no value, so its help line should name none; the typer releases that write `<bool>` beside every
# flag have this hook. Where typer lacks it (other releases, e.g. on the GPU machines), the help stays as typer
# writes it: the command line must never fail to import over a help line.
_value_type = getattr(TyperOption, "display_type_rich", None)


def _no_type_for_flags(option: TyperOption, ctx: typer.Context) -> str | None:
    return None if option.is_flag else _value_type(option, ctx)


if _value_type is not None:
    TyperOption.display_type_rich = _no_type_for_flags  # type: ignore[method-assign]

app = typer.Typer(
    name="kernelseek",
    help="Make an existing CUDA kernel faster with a coding agent that is asked the right questions.\n\n"
    "Start with `kernelseek eval KERNEL --arch sm90` (judge a kernel), `kernelseek run` (optimize one), "
    "`kernelseek bank list` (the questions) and `kernelseek trace show RUN` (what a run did); "
    "`kernelseek init DIR` makes a project folder for your own operators.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
bank_app = typer.Typer(help="The question bank: list, show, and learn from recorded human sessions.",
                       no_args_is_help=True)
trace_app = typer.Typer(help="Read run traces: a timeline of one run, or the analysis of several.",
                        no_args_is_help=True)
app.add_typer(bank_app, name="bank")


def _version(value: bool) -> None:
    if value:
        from kernelseek import __version__

        typer.echo(f"kernelseek {__version__}")
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")) -> None:
    """Make an existing CUDA kernel faster with a coding agent that is asked the right questions."""

app.add_typer(trace_app, name="trace")

COMMAND_MODULES = ("init", "eval", "scenarios", "compare", "demo", "run", "trace", "ask", "fork", "runs", "bank",
                   "analyze", "report", "experiment")

for _name in COMMAND_MODULES:
    try:
        _module = importlib.import_module(f"kernelseek.commands.{_name}")
    except ModuleNotFoundError as _error:
        if _error.name != f"kernelseek.commands.{_name}":
            raise
        continue
    _module.register(app, bank_app=bank_app, trace_app=trace_app)


def main() -> None:
    try:
        app()
    finally:
        # A command that loaded torch, LangGraph and litellm holds some 600,000 objects; the interpreter's own
        # collections at exit would walk them all (7 s of a failed `run` on 2 busy cores). Everything to keep
        # is written by now, so the objects are frozen out of those collections.
        gc.freeze()
