"""`kernelseek ask RUN "message"`: speak to a run's worker at any time, not only at decision points."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

console = Console()


def _running(run_dir: Path) -> bool:
    """Whether a process holds the run (`Run.lock`): try the same lock without waiting, and let it go."""
    path = run_dir / "lock"
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops a lock we took
    return False


def ask_command(
    run: str = typer.Argument(..., help="The run's id (under the runs folder) or its folder."),
    message: str = typer.Argument(..., help="What the worker should hear (at most 500 characters)."),
    runs_dir: Annotated[Path | None, typer.Option(help="Where runs live (as for `kernelseek run`).")] = None,
) -> None:
    """Queue a message for a run's worker; it receives it at its next step, recorded as a human message.

    Works while the run is running (in any mode) and while it is stopped or waiting at a question in
    human mode: the message is then delivered when `kernelseek resume RUN` continues it. Example:

        kernelseek ask 20261202-141500-ab12 "Is the launch configuration what limits you?"
    """
    from kernelseek.agent import inbox
    from kernelseek.agent.run_store import Run
    from kernelseek.settings import ConfigError
    from kernelseek.trace import MAX_MESSAGE_CHARS, TraceError, read_trace

    try:
        opened = Run.open(run, runs_dir)
    except ConfigError as error:
        console.print(f"[red]error:[/] {escape(str(error))}")
        raise typer.Exit(2) from None
    try:
        ended = any(e["type"] == "run_end" for e in read_trace(opened.dir / "trace.jsonl"))
    except TraceError:
        ended = False  # no trace yet: the run has not started its first step
    if ended:
        console.print(f"[red]error:[/] run {escape(opened.id)} has ended, so no worker will read the message; "
                      "start a new run.")
        raise typer.Exit(2)
    if len(message.strip()) > MAX_MESSAGE_CHARS:
        console.print(f"[yellow]warning:[/] the message has {len(message.strip())} characters; only the first "
                      f"{MAX_MESSAGE_CHARS} are sent.")
    try:
        inbox.post(opened.dir, message)
    except ValueError as error:
        console.print(f"[red]error:[/] {escape(str(error))}")
        raise typer.Exit(2) from None
    except OSError as error:
        console.print(f"[red]error:[/] {escape(str(opened.dir))}: the message cannot be queued ({escape(str(error))}).")
        raise typer.Exit(1) from None
    if _running(opened.dir):
        console.print(f"queued for run {escape(opened.id)}: its worker receives it at its next step.")
    else:
        console.print(f"queued for run {escape(opened.id)}, which is not running: its worker receives it when "
                      f"`kernelseek resume {escape(opened.id)}` continues the run.")


def register(app: typer.Typer, **_: typer.Typer) -> None:
    app.command("ask")(ask_command)
