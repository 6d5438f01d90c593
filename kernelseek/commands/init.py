"""`kernelseek init DIR`: lay out a project folder for your own operators."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

console = Console(highlight=False)
errors = Console(stderr=True, highlight=False)


def init_command(
    folder: Annotated[Path, typer.Argument(help="The project folder to make (created if absent; nothing in it "
                                           "is overwritten).")],
) -> None:
    """Make a project: the question bank, an example task and its seed kernel, laid out as the package's.

    Commands run in the project (or below it) find tasks, seed kernels, the bank and graphs there first,
    then in the installed package; a task of the project hides the package's task of the same name.
    Copy the example task folder to add your own operator. Example:

        kernelseek init myproject && cd myproject && kernelseek scenarios rmsnorm_cpu
    """
    from kernelseek.project import ProjectError
    from kernelseek.scaffold import init_project

    try:
        written = init_project(folder)
    except (ProjectError, OSError) as error:
        errors.print(f"[red]error:[/] {escape(str(error))}")
        raise typer.Exit(2) from None
    for path in written:
        console.print(escape(str(path)))
    console.print(f"project ready in {escape(str(folder))}: run kernelseek commands inside it.")


def register(app: typer.Typer, **_: typer.Typer) -> None:
    app.command("init")(init_command)
