"""An experiment's runs driven here or as Ray tasks, with a progress bar each (`kernelseek experiment`)."""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from kernelseek.commands.errors import fail

console = Console(stderr=True)  # the runs' progress and notes: stderr, so that stdout holds the results alone
result = Console()  # the experiment's table and verdict


def drive_jobs(jobs: list[Any], parallel: int | None, ray_address: str | None, arch: str) -> bool:
    """Run the unfinished jobs, here one after another or as Ray tasks (--parallel, --ray-address); True when
    Ctrl-C stopped them (the runs got the same Ctrl-C; each is resumable from its last step)."""
    from kernelseek.engine import EngineError, no_ray_line, ray_available

    use_ray = (parallel is not None or ray_address is not None) and ray_available()
    if (parallel or 1) > 1 and not ray_available():
        console.print(no_ray_line("runs", parallel), style="yellow", markup=False)
    try:
        run_jobs_here(jobs, parallel or 1, arch, use_ray=use_ray, address=ray_address)
    except KeyboardInterrupt:
        return True
    except EngineError as error:
        fail(str(error))
    return False


def end(jobs: list[Any], missing: list[Any], interrupted: bool, *, what: str, again: str) -> None:
    """The exit of an experiment: 130 when interrupted, 1 when runs are missing (the failed ones named)."""
    if interrupted:
        console.print(f"[yellow]interrupted[/]; nothing completed is lost — run the same command again to "
                      f"continue the {len(missing)} unfinished {what}(s).")
        raise typer.Exit(130)
    if missing:
        for job in (j for j in jobs if j.result.startswith("failed")):
            console.print(f"[red]{escape(job.label)}[/] {escape(job.result)}")
        console.print(f"[yellow]{len(missing)} {what}(s) not finished[/]; run the same command {again}.")
        raise typer.Exit(1)


def run_jobs_here(jobs: list[Any], parallel: int, arch: str, *, use_ray: bool, address: str | None) -> None:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from kernelseek.experiment.runner import run_jobs

    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed:.0f}/{task.total:.0f} {task.fields[unit]}"),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        bars = {}
        todo = [j for j in jobs if j.state != "finished"]
        if use_ray:
            overall = progress.add_task("connecting to Ray", total=len(todo), unit="runs")
        for job in jobs:
            if job.state == "finished":
                continue
            steps = job.graph and max_steps(job)
            bars[job.label] = progress.add_task(f"{job.label:<16} {'resuming' if job.state == 'partial' else 'waiting'}",
                                                total=steps, unit="steps")

        def update(job: Any, message: dict[str, Any]) -> None:
            bar = bars[job.label]
            if message["ks"] == "update":
                best = f"{message['best']:.3f}x" if message.get("best") else "-"
                progress.update(bar, completed=message.get("step", 0),
                                description=f"{job.label:<16} best {best:<7} {(message.get('event') or '')[:60]}")
            elif message["ks"] in ("started", "rescheduled"):
                gpus = f" GPU {','.join(message['gpus'])}" if message.get("gpus") else ""
                text = (f"rescheduled (attempt {message['attempt']}), resuming from its last checkpoint on "
                        if message["ks"] == "rescheduled" else "running on ") + f"{message['node']}{gpus}"
                progress.update(bar, description=f"{job.label:<16} {text}")
                if not console.is_terminal:
                    console.print(f"{job.label}: {text} (worker pid {message['pid']})")
            elif message["ks"] == "placed":
                progress.update(bar, description=f"{job.label:<16} placed (waiting for a worker)")
            elif message["ks"] == "done":
                progress.update(bar, description=f"{job.label:<16} {message['result'][:80]}")
                if use_ray:
                    progress.advance(overall)
                if not console.is_terminal:
                    console.print(f"{job.label}: {message['result']}")

        def cluster(line: str) -> None:
            progress.update(overall, description=line)
            if not console.is_terminal:
                console.print(line)

        if use_ray:
            from kernelseek.engine.experiment import run_jobs_on_ray

            run_jobs_on_ray(jobs, parallel=parallel, arch=arch, address=address, on_update=update, on_cluster=cluster)
        else:
            run_jobs(jobs, arch=arch, on_update=update)


def max_steps(job: Any) -> int:
    from kernelseek.settings import Configuration

    return Configuration.load(job.run_dir / "config.json").max_steps
