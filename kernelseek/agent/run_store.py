"""A run's folder, `runs/<id>/`:

    config.json          the Configuration
    checkpoints.sqlite   LangGraph's SqliteSaver checkpoints (thread id = run id)
    trace.jsonl          the append-only trace (schema: kernelseek/trace.py)
    workspace/           where the worker works: the candidate kernel file (and the task's header)
    candidates/<n>.<ext> every candidate the harness judged (0 = the starting kernel), with
                         <n>.quick.json / <n>.full.json (the harness's reports) and <n>.result.json
    best/                the best kernel so far (kernel.<ext>) and its judgement (judgement.json, best.json)
    prompts/             what an external worker CLI was given, one file per turn
    replies/             the built-in worker's model replies, one file per step (a replayed step reuses it)
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path

from kernelseek.agent.configuration import ConfigError, Configuration
from kernelseek.trace import TraceWriter

_OPEN: dict[str, Run] = {}


def default_runs_dir() -> Path:
    return Path(os.environ.get("KERNELSEEK_RUNS", "runs"))


class Run:
    def __init__(self, folder: Path):
        self.dir = folder.resolve()
        self.id = self.dir.name
        self.config = Configuration.load(self.dir / "config.json")

    # --- opening ---------------------------------------------------------------------------------
    @classmethod
    def create(cls, config: Configuration, runs_dir: Path | None = None, run_id: str | None = None) -> Run:
        runs_dir = Path(runs_dir or default_runs_dir())
        run_id = run_id or time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
        folder = runs_dir / run_id
        if folder.exists():
            raise ConfigError(f"{folder}: a run with this id exists; resume it with `kernelseek resume {run_id}`.")
        for sub in ("workspace", "candidates", "best", "prompts"):
            (folder / sub).mkdir(parents=True)
        config.save(folder / "config.json")
        run = cls(folder)
        shutil.copyfile(config.kernel, run.candidate_file)
        shutil.copyfile(config.kernel, run.candidate_path(0))
        header = getattr(run.task, "header", "")
        if header and (run.task.folder / header).is_file():
            shutil.copyfile(run.task.folder / header, run.workspace / header)
        _OPEN[str(run.dir)] = run
        return run

    @classmethod
    def open(cls, ref: str | Path, runs_dir: Path | None = None) -> Run:
        """A run by folder or by id under the runs folder."""
        folder = Path(ref)
        if not (folder / "config.json").is_file():
            folder = Path(runs_dir or default_runs_dir()) / str(ref)
        if not (folder / "config.json").is_file():
            raise ConfigError(f"{ref}: no such run; pass a run id under {runs_dir or default_runs_dir()}/ "
                              "(see --runs-dir) or a run folder.")
        return cls.get(folder)

    @classmethod
    def get(cls, folder: str | Path) -> Run:
        """The open run for a folder (one object per process, so the trace writer is shared)."""
        key = str(Path(folder).resolve())
        if key not in _OPEN:
            _OPEN[key] = cls(Path(key))
        return _OPEN[key]

    # --- parts -----------------------------------------------------------------------------------
    @cached_property
    def trace(self) -> TraceWriter:
        return TraceWriter(self.dir / "trace.jsonl")

    @cached_property
    def task(self):  # noqa: ANN201 - kernelseek.harness.Task
        from kernelseek.harness import load_task

        return load_task(self.config.task)

    @property
    def workspace(self) -> Path:
        return self.dir / "workspace"

    @property
    def candidate_file(self) -> Path:
        """The file in the workspace the harness judges."""
        return self.workspace / Path(self.config.kernel).name

    def candidate_path(self, n: int) -> Path:
        return self.dir / "candidates" / f"{n}{Path(self.config.kernel).suffix}"

    @property
    def best_dir(self) -> Path:
        return self.dir / "best"

    def checkpointer(self):  # noqa: ANN201 - SqliteSaver
        from langgraph.checkpoint.sqlite import SqliteSaver

        return SqliteSaver(sqlite3.connect(self.dir / "checkpoints.sqlite", check_same_thread=False))

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the run for this process; another `run`/`resume` of it is refused. The OS releases the lock
        when the process dies, so a killed run can be resumed at once."""
        with open(self.dir / "lock", "w") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ConfigError(f"run {self.id} is being driven by another process; wait for it or stop it "
                                  "first.") from None
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def thread(self) -> dict:
        return {"configurable": {"thread_id": self.id}, "recursion_limit": 100_000}
