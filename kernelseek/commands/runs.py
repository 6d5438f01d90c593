"""`kernelseek runs`: the runs, with their family trees of forks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from kernelseek.commands.errors import fail
from kernelseek.commands.run import RunsDir
from kernelseek.provenance import scripted_label

console = Console()  # the listing is the command's output: stdout


def runs_command(
    run_id: str = typer.Argument(None, help="Show only this run's family (its root and every fork below it)."),
    runs_dir: RunsDir = None,
    as_json: bool = typer.Option(False, "--json", help="Print the family trees as JSON."),
) -> None:
    """The runs, as family trees: each fork under the run it was forked from, with its step and question.

    Example: kernelseek runs · kernelseek runs 20261202-141500-ab12
    """
    from kernelseek.agent.run_store import Run, default_runs_dir
    from kernelseek.forks import family
    from kernelseek.settings import ConfigError

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


def _label(node: Any) -> str:
    from kernelseek.trace import TraceError, read_trace

    try:
        events = read_trace(node.dir / "trace.jsonl")
    except TraceError:
        events = []
    start = next((e for e in events if e["type"] == "run_start"), {})
    end = next((e for e in events if e["type"] == "run_end"), None)
    best = end["best_speedup"] if end else None
    state = f"ended: {end['reason']}, best {best:.3f}x" if end and best else \
        (f"ended: {end['reason']}" if end else "not ended")
    scripted = scripted_label(start.get("worker"))
    label = f"[bold]{escape(node.dir.name)}[/] ({escape(state)})"
    if scripted:
        label += f" [yellow]{escape(scripted)}[/]"
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


def register(app: typer.Typer, **_: typer.Typer) -> None:
    app.command("runs")(runs_command)
