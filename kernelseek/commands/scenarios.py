"""`kernelseek scenarios TASK`: a task's scenario suite, or a hold-out sample, as a table, TSV or JSON."""

from __future__ import annotations

import typer
from rich.console import Console

from kernelseek.commands.errors import fail
from kernelseek.commands.output import print_json, print_rows
from kernelseek.harness.task import TaskError, load_task

console = Console()


def scenarios_command(
    task: str = typer.Argument("flash_attn_fwd", help="Task folder or name under evals/tasks."),
    arch: str = typer.Option(None, help="Which suite (default: the task's first arch)."),
    quick: bool = typer.Option(False, "--quick", help="Only the quick subset."),
    holdout: int = typer.Option(0, "--holdout", metavar="N", help="List N hold-out scenarios instead: the "
                                "sample `kernelseek eval --holdout N` judges with the same seed."),
    holdout_seed: int = typer.Option(0, "--holdout-seed", metavar="S", help="The hold-out's seed (a "
                                     "judgement's JSON records it as holdout.seed)."),
    as_json: bool = typer.Option(False, "--json", help="Print the scenarios as JSON (name, group, quick, params)."),
) -> None:
    """List a task's scenario suite for an arch (what `kernelseek eval` checks and times), or a hold-out sample.

    On a terminal a table; in a pipe one tab-separated line per scenario after a header line
    (`kernelseek scenarios flash_attn_fwd | cut -f1` gives the names); --json for scripts."""
    if holdout < 0 or holdout_seed < 0:
        fail(f"--holdout {holdout} and --holdout-seed {holdout_seed} must be 0 or more.")
    try:
        loaded = load_task(task)
        arch = arch or loaded.archs[0]
        if arch not in loaded.archs:
            fail(f"{loaded.folder}: the task has no {arch} suite; use one of {', '.join(loaded.archs)}.")
        suite = loaded.holdout(arch, holdout, holdout_seed) if holdout else \
            [s for s in loaded.scenarios(arch) if s.quick or not quick]
    except TaskError as error:
        fail(str(error))
    if as_json:
        print_json([{"name": s.name, "group": s.group, "quick": s.quick, "params": s.params} for s in suite])
        return
    what = f"hold-out, seed {holdout_seed}" if holdout else "suite"
    rows = [(s.name, s.group, "yes" if s.quick else "",
             ", ".join(f"{k}={v}" for k, v in s.params.items() if not isinstance(v, list))) for s in suite]
    print_rows(console, f"{loaded.name} · {arch} · {what} · {len(suite)} scenarios",
               ("scenario", "group", "quick", "params"), rows, wide=("params",))


def register(app: typer.Typer, **_: typer.Typer) -> None:
    app.command("scenarios")(scenarios_command)
