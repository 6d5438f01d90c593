"""`kernelseek fork RUN --at STEP ...`: what if another question had been asked there?"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from kernelseek.commands.drive import console, result
from kernelseek.commands.errors import fail
from kernelseek.commands.output import note, print_json, print_rows
from kernelseek.commands.run import RunsDir

RunId = Annotated[str, typer.Argument(help="The run to fork: its id (folder name under the runs folder) or folder.")]
At = Annotated[int | None, typer.Option("--at", help="The step of the decision point to fork at (see --list).")]
Question = Annotated[str | None, typer.Option(help="Ask this question there instead (<= 500 characters).")]
BankId = Annotated[str | None, typer.Option(help="Ask this bank question there instead (`kernelseek bank list`).")]
Kind = Annotated[str | None, typer.Option(help="Ask a bank question of this kind there instead, drawn with --seed: "
                                          "layer_shift, reject_limit, inform, other, or none (ask nothing, say "
                                          "continue).")]
ListPoints = Annotated[bool, typer.Option("--list", help="List the run's decision points and what was asked "
                                          "(with --json: as JSON).")]
Mode = Annotated[str | None, typer.Option(help="Who asks at the fork's later decision points (default: the "
                                          "parent's mode): human, auto or none.")]
Seed = Annotated[int | None, typer.Option(help="Seed for --kind's draw and the fork's bank policy (default: the "
                                          "parent's).")]
Steps = Annotated[int | None, typer.Option(help="Budget after the fork point: worker turns (default: the parent's "
                                           "budget, counted from its start).")]
Evals = Annotated[int | None, typer.Option(help="Budget after the fork point: evaluations.")]
Dollars = Annotated[float | None, typer.Option(help="Budget after the fork point: model dollars.")]
NewId = Annotated[str | None, typer.Option("--run-id", help="Name the fork (default: RUN-atSTEP-HHMMSS).")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON on stdout: with --list the decision points, "
                                      "else the fork's end as `run --json` prints it (with --no-run: its id and "
                                      "folder); the live view and notes go to stderr.")]
NoRun = Annotated[bool, typer.Option("--no-run", help="Make the fork and stop; `kernelseek resume ID` drives it.")]


def fork_command(run_id: RunId, at: At = None, question: Question = None, bank_id: BankId = None, kind: Kind = None,
                 list_points: ListPoints = False, mode: Mode = None, seed: Seed = None, steps: Steps = None,
                 evals: Evals = None, dollars: Dollars = None, new_id: NewId = None, runs_dir: RunsDir = None,
                 no_run: NoRun = False, as_json: AsJson = False) -> None:
    """What if another question had been asked here? A new run from RUN's decision point at STEP.

    The fork starts from the LangGraph checkpoint of that decision point (nothing before it runs again),
    with the question you give in place of the one asked, the parent's workspace as it was then, its
    judged candidates and its best of that moment. It is an ordinary run: `kernelseek resume`, `trace show`
    and `report` work on it, and its trace records the parent, the step and the replaced question. With no
    --question, --bank-id or --kind you type the question at the prompt (human mode). Examples:

        kernelseek fork 20261202-141500-ab12 --list

        kernelseek fork 20261202-141500-ab12 --at 7 --question "What does the launch itself cost?"

        kernelseek fork 20261202-141500-ab12 --at 7 --kind inform --steps 10
    """
    from kernelseek.agent.run_store import Run
    from kernelseek.commands.drive import check_sandbox, execute
    from kernelseek.forks import ForkError, create_fork, decision_points
    from kernelseek.forks.points import find_point
    from kernelseek.settings import ConfigError
    from kernelseek.trace import TraceError

    try:
        parent = Run.open(run_id, runs_dir)
        points = decision_points(parent.trace.path)
    except (ConfigError, TraceError) as error:
        fail(str(error))
    if list_points:
        return _list(parent, points, as_json)
    if at is None:
        fail("give --at STEP, the decision point to fork at (`kernelseek fork RUN --list` shows them).")
    if sum(x is not None for x in (question, bank_id, kind)) > 1:
        fail("give at most one of --question, --bank-id and --kind (none: type the question at the prompt).")
    try:
        point = find_point(points, at, parent.id)
        asked = _asked(parent, point, question, bank_id, kind, seed)
        run = create_fork(parent, point, asked, runs_dir=runs_dir or parent.dir.parent, run_id=new_id,
                          mode=mode, seed=seed, steps=steps, evals=evals, dollars=dollars)
    except (ForkError, ConfigError) as error:
        fail(str(error))
    _made(run, parent, point, asked)
    if no_run:
        console.print(f"drive it with: kernelseek resume {run.id}")
        return print_json({"run_id": run.id, "dir": str(run.dir)}) if as_json else None
    try:
        check_sandbox(run.config)
    except ConfigError as error:
        fail(f"{error} (the fork {run.id} is made; `kernelseek resume {run.id}` drives it)")
    execute(run, None, as_json)


def _asked(parent: Any, point: Any, question: str | None, bank_id: str | None, kind: str | None,
           seed: int | None) -> dict[str, Any]:
    """The question the fork asks in the place of the one asked: typed, a bank entry, one drawn of a kind,
    or typed at the prompt."""
    from kernelseek.forks import question as pick

    if question is not None:
        return pick.typed(question)
    if bank_id is not None:
        return pick.from_bank(bank_id)
    if kind is not None:
        return pick.of_kind(kind, point, seed=seed if seed is not None else parent.config.seed)
    return _typed_at_prompt(parent, point)


def _made(run: Any, parent: Any, point: Any, asked: dict[str, Any]) -> None:
    console.print(f"fork [bold]{run.id}[/] of run {parent.id} at step {point.step} ({point.kind}) in {run.dir}")
    console.print(f"  asked there: {escape(point.describe_asked())}")
    console.print("  asked now:   " + (escape(f"“{asked['text']}”") if asked["text"] else
                                      "no question (the worker is told to continue)"))


def _list(parent: Any, points: list[Any], as_json: bool) -> None:
    """The decision points: a table on a terminal, TSV in a pipe, or JSON."""
    from kernelseek.agent.run_summary import label

    if as_json:
        return print_json([{"step": p.step, "decision_point": p.kind, "detail": p.detail, "asked": p.describe_asked()}
                           for p in points])
    scripted = label(parent.config)
    rows = [(point.step, point.kind, point.detail, point.describe_asked()) for point in points]
    print_rows(result, f"decision points of run {parent.id}" + (f" ({scripted})" if scripted else ""),
               ("step", "decision point", "detail", "asked"), rows, wide=("detail", "asked"), right=("step",))
    if not points:
        note(result, "(no decision point yet: nothing to fork at)")


def _typed_at_prompt(parent: Any, point: Any) -> dict[str, Any]:
    """Human mode: the decision point as the person would have seen it, then their question."""
    from rich.console import Group
    from rich.panel import Panel

    from kernelseek.agent import prompts
    from kernelseek.forks import question as pick
    from kernelseek.forks.create import parent_state

    snapshot = parent_state(parent, point.step)
    values = snapshot.values
    console.print(Panel(Group(
        f"[bold]decision point:[/] {point.kind} — {escape(point.detail)}",
        f"[bold]at step {point.step} the run was asked:[/] {escape(point.describe_asked())}",
        f"[bold]best then:[/] {escape(prompts.describe_best(values.get('best')))}",
        "[bold]last harness report:[/]\n" + escape(values.get("last_report") or "-"),
        "[bold]the worker's last words:[/]\n" + escape((values.get("worker_words") or "-")[-2000:]),
        "[dim]Type the question to ask here instead (Enter: ask nothing, only say continue; /stop: fork nothing).[/]",
    ), title=f"fork run {parent.id} at step {point.step}: your question", expand=False))
    try:
        answer = console.input("[bold]question>[/] ")
    except EOFError:
        fail("no question came on stdin; type one at the prompt, or give --question, --bank-id or --kind.", 3)
    if not console.is_terminal:
        console.print()
    if answer.strip().lower() in ("/stop", "/quit", "/end"):
        fail("nothing forked.", 1)
    return pick.typed(answer)


def register(app: typer.Typer, **_: typer.Typer) -> None:
    app.command("fork")(fork_command)
