"""Run every (graph, repeat) of an experiment as an ordinary run, resumably.

The experiment's folder (`--out`, default `<runs>/experiments/<name>`):

    experiment.json         the configuration file it was started from, and when
    runs/<graph>-r<i>/      one ordinary run folder per (graph, repeat) (`kernelseek/agent/run_store.py`):
                            `kernelseek trace show`, `report` and `resume` work on each
    table.md, results.json, curves.png, index.html   (kernelseek/experiment/report.py)

A run whose trace holds its `run_end` is finished and is never run again; one that was started and cut
off (Ctrl-C, a crash, a kill) is resumed from its last checkpoint; the others are created. Here the runs go
one after another, each in a child process (`kernelseek.experiment.child`); `--parallel N` runs N at once as
Ray tasks (`kernelseek/engine/experiment.py`), on this machine or a cluster.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelseek.experiment.config import Experiment, ExperimentConfigError, GraphSpec
from kernelseek.toolrich.tools import SETTINGS_FILE

GPU_ARCHS = ("sm90", "sm100")


@dataclass
class Job:
    graph: GraphSpec
    repeat: int
    run_dir: Path
    state: str  # "finished" | "partial" | "new"
    result: str = ""  # after running: "finished" | "failed: <why>"

    @property
    def label(self) -> str:
        return self.run_dir.name


def default_out(experiment: Experiment) -> Path:
    from kernelseek.agent.run_store import default_runs_dir

    return default_runs_dir() / "experiments" / experiment.name


def finished(run_dir: Path) -> bool:
    from kernelseek.trace import TraceError, read_trace

    trace = run_dir / "trace.jsonl"
    try:
        return trace.is_file() and any(e["type"] == "run_end" for e in read_trace(trace))
    except TraceError:
        return False


def result_of(code: int | None, run_dir: Path, why: str) -> str:
    """A run's result from its process's exit status and its trace: "finished" only with its end recorded."""
    if code == 0 and finished(run_dir):
        return "finished"
    if code == 0:
        return (f"failed: its process ended with no end recorded in {run_dir / 'trace.jsonl'}; run the same "
                "command again to continue it")
    return f"failed: {why}"


def prepare(experiment: Experiment, out: Path, *, create: bool = True) -> list[Job]:
    """The jobs of the experiment, creating the run folders that do not exist yet (unless `create` is False).
    A run folder made from a different configuration (the file was edited since) is an error naming the field."""
    from kernelseek.agent.run_store import Run
    from kernelseek.settings import IDENTITY_FIELDS, ConfigError, Configuration

    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    record = out / "experiment.json"
    if not record.is_file():
        record.write_text(json.dumps({"config": str(experiment.path), "name": experiment.name,
                                      "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, indent=1))
    jobs = []
    for graph, repeat in experiment.jobs():
        wanted = experiment.run_configuration(graph, repeat)
        try:
            wanted.validate()
        except ConfigError as error:
            raise ExperimentConfigError(f"{experiment.path}: graph {graph.name}: {error}") from None
        folder = runs / experiment.run_id(graph, repeat)
        if (folder / "config.json").is_file():
            have = Configuration.load(folder / "config.json").to_dict()
            differs = [k for k, v in wanted.to_dict().items() if k not in IDENTITY_FIELDS and have.get(k) != v]
            if differs:
                field = differs[0]
                raise ExperimentConfigError(
                    f"{experiment.path}: run {folder} was started with {field} = {have.get(field)!r} and the file "
                    f"now gives {wanted.to_dict()[field]!r}; restore it, or pass another --out to start a new "
                    "experiment.")
            state = "finished" if finished(folder) else "partial"
        elif not create:
            state = "new"
        else:
            if folder.exists():  # a folder cut off while being created: nothing in it was run
                import shutil

                shutil.rmtree(folder)
            Run.create(wanted, runs, folder.name)
            state = "new"
        if folder.is_dir() and (graph.name == "tool_rich" or experiment.docs):
            (folder / SETTINGS_FILE).write_text(json.dumps({"docs": experiment.docs}, indent=1))
        jobs.append(Job(graph, repeat, folder, state))
    return jobs


def check_parallel(parallel: int | None, arch: str) -> None:
    """--parallel is a count of runs at once; where they go is Ray's to decide (kernelseek/engine/)."""
    if parallel is not None and parallel < 1:
        raise ExperimentConfigError(f"--parallel {parallel}: give at least 1.")


def gpu_count() -> int:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip()])
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def _die_with_parent() -> None:  # in the child, before exec: end when the experiment's process ends
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _gpu_ids() -> list[str]:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d.strip() for d in visible.split(",") if d.strip()]
    return [str(i) for i in range(gpu_count())]


def run_jobs(jobs: list[Job], *, arch: str,
             on_update: Callable[[Job, dict[str, Any]], None] | None = None) -> None:
    """Run the unfinished jobs one after another, each in a child process (on GPU targets it sees the first GPU
    here); each job's `result` says how it went. On Ctrl-C (or any exception here) no further run starts, the
    running one is stopped (resumable from its last completed step) and the exception goes on. Several at once
    is `kernelseek.engine.experiment.run_jobs_on_ray`."""
    gpus = _gpu_ids() if arch in GPU_ARCHS else []
    repo = Path(__file__).resolve().parent.parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH")]))}
    if gpus:
        env["CUDA_VISIBLE_DEVICES"] = gpus[0]
    for job in [j for j in jobs if j.state != "finished"]:
        proc = subprocess.Popen([sys.executable, "-m", "kernelseek.experiment.child", str(job.run_dir)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env, preexec_fn=_die_with_parent)  # noqa: PLW1509
        try:
            stderr: list[str] = []
            reader = threading.Thread(target=lambda p=proc, e=stderr: e.extend(p.stderr), daemon=True)
            reader.start()
            last: dict[str, Any] = {}
            assert proc.stdout is not None
            for line in proc.stdout:
                if not line.startswith('{"ks"'):
                    continue
                try:
                    message = json.loads(line)
                except json.JSONDecodeError:
                    continue
                last = message
                if on_update:
                    on_update(job, message)
            code = proc.wait()
            reader.join(timeout=5)
        except BaseException:  # a run stopped mid-step resumes from its last completed one
            job.result = "stopped: interrupted (resumable)"
            try:
                proc.send_signal(signal.SIGINT)
                proc.wait(timeout=30)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                proc.kill()
            raise
        why = last.get("message") if last.get("ks") == "error" else \
            (stderr[-1].strip() if stderr else f"exit status {code}")
        job.result = result_of(code, job.run_dir, why)
        if on_update:
            on_update(job, {"ks": "done", "result": job.result})


def collect(experiment: Experiment, jobs: list[Job]) -> tuple[list, list[str]]:
    """The metrics of the finished runs, and the labels of the runs that are not finished."""
    from kernelseek.experiment.metrics import run_metrics

    metrics, missing = [], []
    for job in jobs:
        if finished(job.run_dir):
            metrics.append(run_metrics(job.run_dir, graph=job.graph.name, repeat=job.repeat,
                                       seed=experiment.seeds[job.repeat], levels=experiment.levels,
                                       basis=experiment.level_basis))
        else:
            missing.append(job.label)
    return metrics, missing
