"""A run's folder, `<runs>/<id>/`, where <runs> is --runs-dir, else $KERNELSEEK_RUNS, else the user's data
directory ($XDG_DATA_HOME or ~/.local/share, then kernelseek/runs): never the repository by default.

    config.json          the Configuration, and the run's LangGraph thread id (kept when the folder is copied)
                         (and `checkpoints`, the SQLite file of a run started in LangGraph Studio)
    checkpoints.sqlite   LangGraph's SqliteSaver checkpoints
    trace.jsonl          the append-only trace (schema: kernelseek/trace.py)
    workspace/           where the worker works: the candidate kernel file (and the task's header)
    candidates/<n>.<ext> every candidate the harness judged (0 = the starting kernel), with
                         <n>.quick.json / <n>.full.json (the harness's reports) and <n>.result.json
    best/                the best kernel so far (kernel.<ext>) and its judgement (judgement.json, best.json)
    prompts/             what an external worker CLI was given, one file per turn
    replies/             the built-in worker's model replies, one file per step (a replayed step reuses it)
    decisions/<step>/    the workspace as it was at each decision point (`snapshots`: what a fork starts from)
    fork.json            in a fork: its parent, step and replaced question; forks.jsonl: the forks made from it
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any

from kernelseek.project import user_data_dir
from kernelseek.settings import ConfigError, Configuration
from kernelseek.trace import TraceWriter

RUN_ID = re.compile(r"[A-Za-z0-9._-]+")


def default_runs_dir() -> Path:
    if os.environ.get("KERNELSEEK_RUNS"):
        return Path(os.environ["KERNELSEEK_RUNS"])
    return user_data_dir() / "runs"


def check_run_id(run_id: str) -> str:
    if not RUN_ID.fullmatch(run_id) or set(run_id) == {"."} or len(run_id) > 128:
        raise ConfigError(f"--run-id {run_id!r}: a run id is 1-128 letters, digits, '.', '_' or '-' (not only dots), "
                          "e.g. try-1.")
    return run_id


class Run:
    def __init__(self, folder: Path):
        self.dir = folder.resolve()
        self.id = self.dir.name
        self.config = Configuration.load(self.dir / "config.json")
        try:
            stored = json.loads((self.dir / "config.json").read_text())
        except (OSError, ValueError):
            stored = {}
        # beside the settings: the LangGraph thread of the run's checkpoints (a run made before thread ids
        # were stored: its id), and the SQLite file they are in when it is not the run's own (a run started
        # in LangGraph Studio: the server's), or the PostgreSQL URL given with --checkpointer
        self.thread_id = str(stored.get("thread_id") or self.id)
        from kernelseek.checkpoints import is_url

        stored_ref = stored.get("checkpoints")
        self.checkpoints = stored_ref if is_url(stored_ref) else Path(stored_ref or self.dir / "checkpoints.sqlite")

    # --- opening ---------------------------------------------------------------------------------
    @classmethod
    def create(cls, config: Configuration, runs_dir: Path | None = None, run_id: str | None = None,
               thread_id: str | None = None, checkpoints: str | None = None) -> Run:
        """A new run folder; `thread_id`: the LangGraph thread its checkpoints are under (default: its id),
        `checkpoints`: the SQLite file that holds them (default: checkpoints.sqlite in the folder)."""
        runs_dir = Path(runs_dir or default_runs_dir())
        run_id = check_run_id(run_id) if run_id else time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
        folder = runs_dir / run_id
        runs_dir.mkdir(parents=True, exist_ok=True)
        try:
            folder.mkdir()  # one atomic step: of two runs made with the same id, one gets this error
        except FileExistsError:
            raise ConfigError(f"{folder}: a run with this id exists; resume it with `kernelseek resume {run_id}`.") \
                from None
        for sub in ("workspace", "candidates", "best", "prompts"):
            (folder / sub).mkdir()
        config.save(folder / "config.json", thread_id=thread_id or run_id,
                    **({"checkpoints": checkpoints} if checkpoints else {}))
        run = cls(folder)
        shutil.copyfile(config.kernel, run.candidate_file)
        shutil.copyfile(config.kernel, run.candidate_path(0))
        header = getattr(run.task, "header", "")
        if header and (run.task.folder / header).is_file():
            shutil.copyfile(run.task.folder / header, run.workspace / header)
        return run

    @classmethod
    def open(cls, ref: str | Path, runs_dir: Path | None = None) -> Run:
        """A run by folder or by id under the runs folder."""
        folder = Path(ref)
        if not (folder / "config.json").is_file():
            folder = Path(runs_dir or default_runs_dir()) / check_run_id(str(ref))
        if not (folder / "config.json").is_file():
            raise ConfigError(f"{ref}: no such run; pass a run id under {runs_dir or default_runs_dir()}/ "
                              "(see --runs-dir) or a run folder.")
        return cls(folder)

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

    @contextmanager
    def checkpointer(self) -> Iterator[Any]:  # SqliteSaver or PostgresSaver (kernelseek/checkpoints.py)
        """`with run.checkpointer() as saver:` the run's checkpointer, its connection closed after the block."""
        from kernelseek.checkpoints import open_saver

        with open_saver(self.checkpoints) as saver:
            yield saver

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
        return {"configurable": {"thread_id": self.thread_id}, "recursion_limit": 100_000}
