"""`kernelseek run` and `kernelseek resume`: start a run of the question-driven loop, or continue one, and
drive it here (kernelseek/commands/drive.py)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from kernelseek.commands.drive import check_sandbox, console, execute, finish, show_sandbox
from kernelseek.commands.errors import fail
from kernelseek.commands.run_options import request_of, with_run_options
from kernelseek.settings import RunRequest

RunsDir = Annotated[Path | None, typer.Option(help=RunRequest.model_fields["runs_dir"].description)]
CHECKPOINTER = inspect.Parameter(  # where a run's checkpoints live: not a setting, kept beside them in config.json
    "checkpointer", inspect.Parameter.KEYWORD_ONLY, default="sqlite", annotation=Annotated[str, typer.Option(
        help="Where the run's checkpoints live: sqlite (a file in the run folder) or a PostgreSQL URL, e.g. "
             "postgresql://me@db:5432/kernelseek (shared by a team or a cluster; password via $PGPASSWORD or "
             "~/.pgpass).")])
AsJson = Annotated[bool, typer.Option("--json", help="Print the run's end as JSON on stdout (its id, folder, end "
                                      "reason, best, steps, evaluations, dollars); the live view and the questions "
                                      "go to stderr.")]
AS_JSON = inspect.Parameter("as_json", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=AsJson)


def run_command(task: str, settings: dict[str, Any], checkpointer: str = "sqlite", as_json: bool = False) -> None:
    """Make a kernel faster: a worker edits it, the harness judges it, a questioner asks at decision points.

    The worker (a model through litellm with shell/file tools, or an external coding CLI) works in
    runs/<id>/workspace/ on a copy of the kernel. Every `evaluate` is judged by the harness; only a correct
    candidate that beats the best on the full suite becomes the best (runs/<id>/best/). When the worker says
    it is done, claims a limit, stalls (--plateau) or keeps failing (--failing), one question is asked: by you
    at the prompt (--mode human), by the question bank (auto), or by nobody (none). The run ends at the
    target or when a budget is spent. Ctrl-C, a crash or a kill lose nothing completed:
    `kernelseek resume <id>` continues, and `kernelseek trace show <id>` tells what happened. Examples:

        kernelseek run rmsnorm_cpu --model anthropic/claude-sonnet-4-5 --mode human --target-gain 1.3

        kernelseek run flash_attn_fwd --arch sm90 --worker-command 'claude -p {prompt}' --target 1.16

        kernelseek run rmsnorm_cpu --model scripted/evals/examples/first_run.yaml --mode auto --max-steps 4
    """
    from kernelseek.agent.make_run import make_run
    from kernelseek.agent.state import initial_state
    from kernelseek.settings import ConfigError

    warn_of_password(checkpointer)
    try:
        run = make_run(request_of(task, settings), checkpointer=checkpointer)
    except (ConfigError, ValueError) as error:
        fail(str(error))
    show_sandbox(run.config)
    console.print(f"run [bold]{run.id}[/] in {run.dir}")
    execute(run, initial_state(str(run.dir)), as_json)


def resume_command(
    run_id: str = typer.Argument(..., help="The run's id (its folder name under the runs folder) or its folder."),
    runs_dir: RunsDir = None,
    as_json: AsJson = False,
) -> None:
    """Continue a run after Ctrl-C, a crash or a kill, from its last completed step.

    A step that was cut off is run again; its trace events are keyed, so none appears twice. A human-mode
    run waiting at a question asks it again. Example: kernelseek resume 20261202-141500-ab12
    """
    from kernelseek.agent.run_store import Run
    from kernelseek.settings import ConfigError

    try:
        run = Run.open(run_id, runs_dir)
    except ConfigError as error:
        fail(str(error))
    from kernelseek.checkpoints import has_ended, pending_nodes
    from kernelseek.project import load_graph

    warn_of_password(run.checkpoints)
    try:
        check_sandbox(run.config)
        with run.checkpointer() as saver:
            snapshot = load_graph(run.config.graph, checkpointer=saver).get_state(run.thread())
    except ConfigError as error:
        fail(str(error))
    if not snapshot.values:
        fail(f"run {run.id} has no checkpoint yet; start a new run instead.")
    if has_ended(snapshot):
        console.print("(the run had already ended; nothing to resume)")
        finish(run, dict(snapshot.values), as_json)
        return
    console.print(f"resuming run [bold]{run.id}[/] at step {snapshot.values.get('step', 0)} "
                  f"({', '.join(pending_nodes(snapshot))})")
    execute(run, None, as_json)  # a run waiting at a question asks it again


def warn_of_password(checkpoints: str | Path) -> None:
    """A warning (the password left out) when the checkpoint database's URL carries a password."""
    from kernelseek.checkpoints import password_warning

    warning = password_warning(checkpoints)
    if warning:
        console.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True)


def register(app: typer.Typer, **_: typer.Typer) -> None:
    app.command("run")(with_run_options(run_command, CHECKPOINTER, AS_JSON))
    app.command("resume")(resume_command)
