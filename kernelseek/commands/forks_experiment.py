"""`kernelseek experiment CONFIG` for a config with a `forks:` section: counterfactual forks of a recorded
run at its decision points, N per question kind, and their gains per kind (kernelseek/experiment/forks.py)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from kernelseek.commands.errors import fail
from kernelseek.commands.jobs_view import console, drive_jobs, end, result
from kernelseek.commands.output import print_json, print_rows


def forks_experiment(config: Path, out: Path | None, parallel: int | None, ray_address: str | None,
                     report_only: bool, as_json: bool = False) -> None:
    from kernelseek.agent.run_store import Run, default_runs_dir
    from kernelseek.experiment.config import ExperimentConfigError
    from kernelseek.experiment.forks import collect_forks, load_forks_experiment, prepare_forks
    from kernelseek.experiment.forks_report import rows_of, write_forks_report
    from kernelseek.experiment.runner import check_parallel
    from kernelseek.forks import ForkError
    from kernelseek.settings import ConfigError

    try:
        experiment = load_forks_experiment(config)
        arch = Run(experiment.run).config.arch
        check_parallel(parallel, arch)
        folder = Path(out) if out else default_runs_dir() / "experiments" / experiment.name
        jobs = prepare_forks(experiment, folder, create=not report_only)
    except (ExperimentConfigError, ConfigError, ForkError) as error:
        fail(str(error))
    done = [j for j in jobs if j.state == "finished"]
    console.print(f"forks experiment [bold]{experiment.name}[/] in {folder}: {len(jobs)} forks of run "
                  f"{experiment.run.name} (steps {', '.join(map(str, experiment.at))} × {len(experiment.kinds)} kinds × "
                  f"{experiment.repeats} repeats), {len(done)} finished already")
    interrupted = not report_only and len(done) < len(jobs) and drive_jobs(jobs, parallel, ray_address, arch)
    metrics, missing = collect_forks(experiment, jobs)
    results = write_forks_report(experiment, metrics, folder, missing=missing)
    if as_json:
        print_json(results)
    else:
        extra = results["per_kind"] if len(experiment.at) > 1 else []
        head, rows = rows_of(results["per_point"] + extra, experiment.within_evals)
        print_rows(result, "per decision point and question kind (medians over repeats)", head, rows)
        result.print(Text(f"verdict: {results['verdict']['line']}"), soft_wrap=True)
    console.print(f"table: {folder / 'table.md'} · page: {folder / 'index.html'}")
    end(jobs, missing, interrupted, what="fork", again="again to continue them")
