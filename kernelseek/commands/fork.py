"""`kernelseek fork RUN --at STEP ...` (what if another question had been asked there?) and
`kernelseek runs` (the runs, with their family trees of forks)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from kernelseek.commands.run import RunsDir, console, fail


def register(app: typer.Typer, **_: typer.Typer) -> None:
    @app.command("fork")
    def fork_command(
        run_id: str = typer.Argument(..., help="The run to fork: its id (folder name under the runs folder) or folder."),
        at: int = typer.Option(None, "--at", help="The step of the decision point to fork at (see --list)."),
        question: str = typer.Option(None, help="Ask this question there instead (<= 500 characters)."),
        bank_id: str = typer.Option(None, help="Ask this bank question there instead (`kernelseek bank list`)."),
        kind: str = typer.Option(None, help="Ask a bank question of this kind there instead, drawn with --seed: "
                                 "layer_shift, reject_limit, inform, other, or none (ask nothing, say continue)."),
        list_points: bool = typer.Option(False, "--list", help="List the run's decision points and what was asked."),
        mode: str = typer.Option(None, help="Who asks at the fork's later decision points (default: the parent's "
                                 "mode): human, auto or none."),
        seed: int = typer.Option(None, help="Seed for --kind's draw and the fork's bank policy (default: the parent's)."),
        steps: int = typer.Option(None, help="Budget after the fork point: worker turns (default: the parent's "
                                  "budget, counted from its start)."),
        evals: int = typer.Option(None, help="Budget after the fork point: evaluations."),
        dollars: float = typer.Option(None, help="Budget after the fork point: model dollars."),
        new_id: Annotated[str | None, typer.Option("--run-id", help="Name the fork (default: RUN-atSTEP-HHMMSS).")] = None,
        runs_dir: RunsDir = None,
        no_run: bool = typer.Option(False, "--no-run", help="Make the fork and stop; `kernelseek resume ID` drives it."),
    ) -> None:
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
        from kernelseek.agent.configuration import ConfigError
        from kernelseek.agent.run_store import Run
        from kernelseek.commands.run import _check_sandbox, _execute
        from kernelseek.forks import ForkError, create_fork, decision_points
        from kernelseek.forks import question as pick
        from kernelseek.forks.points import find_point
        from kernelseek.trace import TraceError

        try:
            parent = Run.open(run_id, runs_dir)
            points = decision_points(parent.trace.path)
        except (ConfigError, TraceError) as error:
            fail(str(error))
        if list_points:
            _list(parent, points)
            return
        if at is None:
            fail("give --at STEP, the decision point to fork at (`kernelseek fork RUN --list` shows them).")
        if sum(x is not None for x in (question, bank_id, kind)) > 1:
            fail("give at most one of --question, --bank-id and --kind (none: type the question at the prompt).")
        try:
            point = find_point(points, at, parent.id)
            if question is not None:
                asked = pick.typed(question)
            elif bank_id is not None:
                asked = pick.from_bank(bank_id)
            elif kind is not None:
                asked = pick.of_kind(kind, point, seed=seed if seed is not None else parent.config.seed)
            else:
                asked = _typed_at_prompt(parent, point)
            run = create_fork(parent, point, asked, runs_dir=runs_dir or parent.dir.parent, run_id=new_id,
                              mode=mode, seed=seed, steps=steps, evals=evals, dollars=dollars)
        except (ForkError, ConfigError) as error:
            fail(str(error))
        console.print(f"fork [bold]{run.id}[/] of run {parent.id} at step {at} ({point.kind}) in {run.dir}")
        console.print(f"  asked there: {escape(point.describe_asked())}")
        console.print("  asked now:   " + (escape(f"“{asked['text']}”") if asked["text"] else
                                          "no question (the worker is told to continue)"))
        if no_run:
            console.print(f"drive it with: kernelseek resume {run.id}")
            return
        try:
            _check_sandbox(run.config)
        except ConfigError as error:
            fail(f"{error} (the fork {run.id} is made; `kernelseek resume {run.id}` drives it)")
        _execute(run, None)

    @app.command("runs")
    def runs_command(
        run_id: str = typer.Argument(None, help="Show only this run's family (its root and every fork below it)."),
        runs_dir: RunsDir = None,
        as_json: bool = typer.Option(False, "--json", help="Print the family trees as JSON."),
    ) -> None:
        """The runs, as family trees: each fork under the run it was forked from, with its step and question.

        Example: kernelseek runs · kernelseek runs 20261202-141500-ab12
        """
        from kernelseek.agent.configuration import ConfigError
        from kernelseek.agent.run_store import Run, default_runs_dir
        from kernelseek.forks import family

        folder = Path(runs_dir or default_runs_dir())
        listed = sorted(p for p in folder.iterdir() if (p / "config.json").is_file()) if folder.is_dir() else []
        if run_id:
            try:
                roots = [family.root_of(Run.open(run_id, runs_dir).dir)]
            except ConfigError as error:
                fail(str(error))
        else:
            roots = []
            for path in listed:
                root = family.root_of(path)
                if root not in roots:
                    roots.append(root)
        trees = [family.tree(root, listed) for root in roots]
        if as_json:
            for node in trees:
                print(json.dumps(_as_dict(node)))
            return
        if not trees:
            console.print(f"no runs in {folder}")
            return
        for node in trees:
            console.print(_render(node, Tree(_label(node))))


def _list(parent: Any, points: list[Any]) -> None:
    table = Table(title=f"decision points of run {parent.id}")
    for column in ("step", "decision point", "detail", "asked"):
        table.add_column(column, overflow="fold")
    for point in points:
        table.add_row(str(point.step), point.kind, escape(point.detail[:120]), escape(point.describe_asked()))
    console.print(table)
    if not points:
        console.print("(no decision point yet: nothing to fork at)")


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


def _label(node: Any) -> str:
    from kernelseek.trace import TraceError, read_trace

    try:
        events = read_trace(node.dir / "trace.jsonl")
    except TraceError:
        events = []
    end = next((e for e in events if e["type"] == "run_end"), None)
    best = end["best_speedup"] if end else None
    state = f"ended: {end['reason']}, best {best:.3f}x" if end and best else \
        (f"ended: {end['reason']}" if end else "not ended")
    label = f"[bold]{escape(node.dir.name)}[/] ({escape(state)})"
    if node.fork:
        asked = (node.fork.get("question") or {}).get("text")
        replaced = (node.fork.get("replaced") or {}).get("text")
        label += f" · at step {node.fork.get('step')}: " + (escape(f"“{asked}”") if asked else "no question") + \
            (f" [dim](instead of “{escape(replaced)}”)[/]" if replaced else " [dim](instead of no question)[/]")
    return label


def _render(node: Any, branch: Tree) -> Tree:
    for child in node.children:
        _render(child, branch.add(_label(child)))
    return branch


def _as_dict(node: Any) -> dict[str, Any]:
    return {"run": node.dir.name, "dir": str(node.dir), "fork": node.fork,
            "children": [_as_dict(c) for c in node.children]}
