"""`kernelseek experiment CONFIG`: run the graphs side by side on one task, evaluator and budget."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

console = Console()
errors = Console(stderr=True, highlight=False, soft_wrap=True)


def register(app: typer.Typer, **_: typer.Typer) -> None:
    @app.command("experiment")
    def experiment_command(
        config: Annotated[Path, typer.Argument(help="The experiment's YAML file (see evals/experiments/cpu_demo.yaml).")],
        out: Annotated[Path | None, typer.Option(help="The experiment's folder (default: <runs>/experiments/<name>).")] = None,
        parallel: int | None = typer.Option(None, help="Run N at once as Ray tasks (the kernelseek\\[ray] extra): one GPU "
                                            "each on GPU targets, one CPU core each on the CPU task, on Ray's "
                                            "local cluster or the one --ray-address names. Without it: one "
                                            "after another."),
        ray_address: str | None = typer.Option(None, "--ray-address", help="Join this Ray cluster (e.g. "
                                               "HEAD:6379, or auto on a node of it); default $RAY_ADDRESS, else "
                                               "a local cluster on this machine. Implies Ray."),
        as_json: bool = typer.Option(False, "--json", help="Print results.json (per graph, per run, provenance) "
                                     "instead of the table."),
        report_only: bool = typer.Option(False, "--report-only", help="Write the table and page from the runs "
                                         "finished so far; run nothing."),
    ) -> None:
        """Compare graphs: every (graph, repeat) of CONFIG runs as an ordinary run, then one table and one page.

        The config names the task, starting kernel, arch, model (or worker command), budgets, the graphs
        (kernelseek: questions; tool_rich: extra tools, no questions; no_question: neither) and the repeats with
        their seeds. Runs are resumable: run the same command again after Ctrl-C, a crash or a kill and it
        continues where it stopped, never repeating a finished run. Writes table.md, results.json, curves.png
        and index.html in the experiment's folder. A config with a `forks:` section instead forks a recorded
        run at its decision points, N forks per question kind with the same budget after the fork point, and
        compares their gains per kind (kernelseek/experiment/forks.py; evals/experiments/cpu_forks.yaml).

        With --parallel N each run is a Ray task; a lost worker or node makes Ray run it again, resuming from
        its last checkpoint. Run folders are written by the tasks, so on a cluster the experiment's folder
        (--out) must be on a filesystem every node mounts at the same path. Examples:

            kernelseek experiment evals/experiments/cpu_demo.yaml --parallel 2
            kernelseek experiment evals/experiments/flash_attn_sm90.yaml --parallel 8 --ray-address HEAD:6379 \
                --out /shared/experiments/flash_attn_sm90
        """
        from kernelseek.experiment.forks import is_forks_experiment

        if as_json:  # stdout holds the JSON alone; progress and notes go to stderr
            import sys

            console.file = sys.stderr

        if is_forks_experiment(config):  # a `forks:` section: counterfactual forks of a recorded run
            _forks(config, out, parallel, ray_address, report_only)
            return
        from kernelseek.agent.configuration import ConfigError
        from kernelseek.experiment.config import ExperimentConfigError, load_experiment
        from kernelseek.experiment.report import write_report
        from kernelseek.experiment.runner import check_parallel, collect, default_out, prepare

        try:
            experiment = load_experiment(config)
            check_parallel(parallel, experiment.arch)
            if not report_only:
                from kernelseek import preflight

                problem = preflight.check(experiment.arch, [(g.model, g.model_kwargs) for g in experiment.graphs])
                if problem:  # before any run starts
                    raise ExperimentConfigError(f"{config}: {problem}.")
            folder = Path(out) if out else default_out(experiment)
            jobs = prepare(experiment, folder, create=not report_only)
        except (ExperimentConfigError, ConfigError) as error:
            errors.print(f"[red]error:[/] {escape(str(error))}")
            raise typer.Exit(2) from None
        done = [j for j in jobs if j.state == "finished"]
        console.print(f"experiment [bold]{experiment.name}[/] in {folder}: {len(jobs)} runs "
                      f"({len(experiment.graphs)} graphs × {experiment.repeats} repeats), {len(done)} finished already"
                      + (f" ({', '.join(j.label for j in done)}: not run again)" if done else ""))
        from kernelseek.engine import EngineError, no_ray_line, ray_available

        use_ray = (parallel is not None or ray_address is not None) and ray_available()
        if (parallel or 1) > 1 and not ray_available():
            console.print(no_ray_line('runs', parallel), style="yellow", markup=False)
        interrupted = False
        if not report_only and len(done) < len(jobs):
            try:
                _run(jobs, parallel or 1, experiment.arch, use_ray=use_ray, address=ray_address)
            except KeyboardInterrupt:  # the runs got the same Ctrl-C; each is resumable from its last step
                interrupted = True
            except EngineError as error:
                errors.print(f"[red]error:[/] {escape(str(error))}")
                raise typer.Exit(2) from None
        metrics, missing = collect(experiment, jobs)
        results = write_report(experiment, metrics, folder, missing=missing)
        if as_json:  # results.json: the table, every run, and the provenance
            from kernelseek.commands.output import print_json

            print_json(results)
        else:
            _print_table(folder)
            console.print(f"table: {folder / 'table.md'} · page: {folder / 'index.html'}")
        if interrupted:
            console.print(f"[yellow]interrupted[/]; nothing completed is lost — run the same command again to "
                          f"continue the {len(missing)} unfinished run(s).")
            raise typer.Exit(130)
        if missing:
            failed = [j for j in jobs if j.result.startswith("failed")]
            for job in failed:
                console.print(f"[red]{escape(job.label)}[/] {escape(job.result)}")
            again = "without --report-only to run them" if report_only else "again to continue them"
            console.print(f"[yellow]{len(missing)} run(s) not finished[/]; run the same command {again}.")
            raise typer.Exit(1)


def _forks(config: Path, out: Path | None, parallel: int | None, ray_address: str | None, report_only: bool) -> None:
    from rich.markup import escape

    from kernelseek.agent.configuration import ConfigError
    from kernelseek.agent.run_store import Run, default_runs_dir
    from kernelseek.engine import EngineError, no_ray_line, ray_available
    from kernelseek.experiment.config import ExperimentConfigError
    from kernelseek.experiment.forks import collect_forks, load_forks_experiment, prepare_forks
    from kernelseek.experiment.forks_report import rows_of, write_forks_report
    from kernelseek.experiment.runner import check_parallel
    from kernelseek.forks import ForkError

    try:
        experiment = load_forks_experiment(config)
        arch = Run(experiment.run).config.arch
        check_parallel(parallel, arch)
        folder = Path(out) if out else default_runs_dir() / "experiments" / experiment.name
        jobs = prepare_forks(experiment, folder, create=not report_only)
    except (ExperimentConfigError, ConfigError, ForkError) as error:
        console.print(f"[red]error:[/] {escape(str(error))}")
        raise typer.Exit(2) from None
    done = [j for j in jobs if j.state == "finished"]
    console.print(f"forks experiment [bold]{experiment.name}[/] in {folder}: {len(jobs)} forks of run "
                  f"{experiment.run.name} (steps {', '.join(map(str, experiment.at))} × {len(experiment.kinds)} kinds × "
                  f"{experiment.repeats} repeats), {len(done)} finished already")
    use_ray = (parallel is not None or ray_address is not None) and ray_available()
    if (parallel or 1) > 1 and not ray_available():
        console.print(no_ray_line("runs", parallel), style="yellow", markup=False)
    interrupted = False
    if not report_only and len(done) < len(jobs):
        try:
            _run(jobs, parallel or 1, arch, use_ray=use_ray, address=ray_address)
        except KeyboardInterrupt:
            interrupted = True
        except EngineError as error:
            console.print(f"[red]error:[/] {escape(str(error))}")
            raise typer.Exit(2) from None
    metrics, missing = collect_forks(experiment, jobs)
    results = write_forks_report(experiment, metrics, folder, missing=missing)
    extra = results["per_kind"] if len(experiment.at) > 1 else []
    head, rows = rows_of(results["per_point"] + extra, experiment.within_evals)
    table = Table(title="per decision point and question kind (medians over repeats)")
    for column in head:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    console.print(table)
    console.print(f"table: {folder / 'table.md'} · page: {folder / 'index.html'}")
    if interrupted:
        console.print("[yellow]interrupted[/]; run the same command again to continue the unfinished forks.")
        raise typer.Exit(130)
    if missing:
        for job in (j for j in jobs if j.result.startswith("failed")):
            console.print(f"[red]{escape(job.label)}[/] {escape(job.result)}")
        console.print(f"[yellow]{len(missing)} fork(s) not finished[/]; run the same command again to continue them.")
        raise typer.Exit(1)


def _run(jobs: list[Any], parallel: int, arch: str, *, use_ray: bool, address: str | None) -> None:
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
            steps = job.graph and _max_steps(job)
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


def _max_steps(job: Any) -> int:
    from kernelseek.agent.configuration import Configuration

    return Configuration.load(job.run_dir / "config.json").max_steps


def _print_table(folder: Path) -> None:
    import json

    results = json.loads((folder / "results.json").read_text())
    from kernelseek.experiment.report import table_rows

    head, rows = table_rows(results["graphs"], results["levels"], results["level_basis"])
    table = Table(title="per graph (medians over repeats)")
    for column in head:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row)
    console.print(table)
