"""`kernelseek experiment CONFIG`: run the graphs side by side on one task, evaluator and budget."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kernelseek.commands.errors import fail
from kernelseek.commands.jobs_view import console, drive_jobs, end, result

Config = Annotated[Path, typer.Argument(help="The experiment's YAML file (see evals/experiments/cpu_demo.yaml).")]
Out = Annotated[Path | None, typer.Option(help="The experiment's folder (default: <runs>/experiments/<name>).")]
Parallel = Annotated[int | None, typer.Option(help="Run N at once as Ray tasks (the kernelseek\\[ray] extra): one "
                                              "GPU each on GPU targets, one CPU core each on the CPU task, on Ray's "
                                              "local cluster or the one --ray-address names. Without it: one after "
                                              "another.")]
RayAddress = Annotated[str | None, typer.Option("--ray-address", help="Join this Ray cluster (e.g. HEAD:6379, or "
                                                "auto on a node of it); default $RAY_ADDRESS, else a local cluster "
                                                "on this machine. Implies Ray.")]
AsJson = Annotated[bool, typer.Option("--json", help="Print results.json (per graph, per run, provenance) instead "
                                      "of the table.")]
ReportOnly = Annotated[bool, typer.Option("--report-only", help="Write the table and page from the runs finished "
                                          "so far; run nothing.")]


def experiment_command(config: Config, out: Out = None, parallel: Parallel = None, ray_address: RayAddress = None,
                       as_json: AsJson = False, report_only: ReportOnly = False) -> None:
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
    from kernelseek.experiment.report import write_report
    from kernelseek.experiment.runner import collect

    if is_forks_experiment(config):  # a `forks:` section: counterfactual forks of a recorded run
        from kernelseek.commands.forks_experiment import forks_experiment

        return forks_experiment(config, out, parallel, ray_address, report_only, as_json)
    experiment, folder, jobs = _prepare(config, out, parallel, report_only)
    done = [j for j in jobs if j.state == "finished"]
    console.print(f"experiment [bold]{experiment.name}[/] in {folder}: {len(jobs)} runs "
                  f"({len(experiment.graphs)} graphs × {experiment.repeats} repeats), {len(done)} finished already"
                  + (f" ({', '.join(j.label for j in done)}: not run again)" if done else ""))
    interrupted = not report_only and len(done) < len(jobs) and \
        drive_jobs(jobs, parallel, ray_address, experiment.arch)
    metrics, missing = collect(experiment, jobs)
    results = write_report(experiment, metrics, folder, missing=missing)
    if as_json:  # results.json: the table, every run, and the provenance
        from kernelseek.commands.output import print_json

        print_json(results)
    else:
        _print_table(folder)
    console.print(f"table: {folder / 'table.md'} · page: {folder / 'index.html'}")
    end(jobs, missing, interrupted, what="run",
        again="without --report-only to run them" if report_only else "again to continue them")


def _prepare(config: Path, out: Path | None, parallel: int | None, report_only: bool) -> tuple:
    """The experiment, its folder and its jobs (made unless --report-only), every problem refused before any
    run starts."""
    from kernelseek import preflight
    from kernelseek.experiment.config import ExperimentConfigError, load_experiment
    from kernelseek.experiment.runner import check_parallel, default_out, prepare
    from kernelseek.settings import ConfigError

    try:
        experiment = load_experiment(config)
        check_parallel(parallel, experiment.arch)
        if not report_only:
            problem = preflight.check(experiment.arch, [(g.model, g.model_kwargs) for g in experiment.graphs])
            if problem:
                raise ExperimentConfigError(f"{config}: {problem}.")
        folder = Path(out) if out else default_out(experiment)
        return experiment, folder, prepare(experiment, folder, create=not report_only)
    except (ExperimentConfigError, ConfigError) as error:
        fail(str(error))


def _print_table(folder: Path) -> None:
    import json

    from kernelseek.commands.output import note, print_rows
    from kernelseek.experiment.report import scripted_warning, table_rows

    results = json.loads((folder / "results.json").read_text())
    warning = scripted_warning(results["provenance"]["scripted"])
    if warning:  # above the table on a terminal, on stderr in a pipe (stdout keeps the rows alone)
        note(console, warning)
    head, rows = table_rows(results["graphs"], results["levels"], results["level_basis"])
    print_rows(result, "per graph (medians over repeats)", head, rows)


def register(app: typer.Typer, **_: typer.Typer) -> None:
    app.command("experiment")(experiment_command)
