"""A graph run's LangGraph runtime context (`StateGraph(context_schema=RunContext)`): the run's settings.

The CLI opens (or makes) the run folder and passes `RunContext.of(run)`: the nodes reach that `Run` (its
configuration, trace writer and folders) through `runtime.context.run(state)`. LangGraph Studio shows the
same fields as its settings form (typed, described, with defaults) and passes them as a dict; the graph's
`start` node then makes a new run folder from them, exactly as `kernelseek run` would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr

from kernelseek.agent.configuration import ConfigError, Configuration
from kernelseek.agent.run_store import Run, default_runs_dir


class RunContext(Configuration):
    task: str = Field(description="The task: its folder, or its name under evals/tasks.")
    kernel: str = Field("", description="The kernel the run starts from (empty: the task's seed kernel).")
    arch: str = Field("", description="The target: sm90, sm100 or cpu (empty: the task's first).")
    run_dir: str | None = Field(None, description="Drive this existing run folder (its own config.json's "
                                "settings are used); empty: a new run is made from these settings.")
    runs_dir: str | None = Field(None, description="Where a new run's folder goes (empty: $KERNELSEEK_RUNS, "
                                 "else the user's data directory).")
    run_id: str | None = Field(None, description="A new run's name (empty: the time and a random suffix).")
    _run: Run | None = PrivateAttr(None)

    @classmethod
    def of(cls, run: Run) -> RunContext:
        """The context of an open run (the CLI's): the nodes use this very object, trace writer included."""
        context = cls(**run.config.to_dict(), run_dir=str(run.dir))
        context._run = run
        return context

    @property
    def is_open(self) -> bool:
        return self._run is not None

    def run(self, state: dict[str, Any]) -> Run:
        """The run the graph is driving: this context's, else the one named by the state's run folder."""
        folder = state.get("run_dir") or self.run_dir
        if self._run is None or (folder and Path(folder).resolve() != self._run.dir):
            if not folder:
                raise ConfigError("the graph has no run yet; its start node makes one.")
            self._run = Run(Path(folder))
        return self._run

    def create_run(self, thread_id: str | None = None) -> Run:
        """A new run folder from these settings, resolved as `kernelseek run` resolves its options."""
        from kernelseek.agent import studio

        runs_dir = Path(self.runs_dir).expanduser() if self.runs_dir else default_runs_dir()
        studio.check_runs_dir(runs_dir)
        self._run = Run.create(self.configuration(), runs_dir, self.run_id, thread_id=thread_id,
                               checkpoints=studio.server_checkpoints())
        return self._run

    def configuration(self) -> Configuration:
        from kernelseek.harness import TaskError, load_task
        from kernelseek.harness.task import seed_kernel

        try:
            task = load_task(self.task)
        except TaskError as error:
            raise ConfigError(str(error)) from None
        arch = self.arch or task.archs[0]
        if arch not in task.archs:
            raise ConfigError(f"arch {arch}: the task {task.name} has no {arch} suite; use one of "
                              f"{', '.join(task.archs)}.")
        kernel = Path(self.kernel).expanduser() if self.kernel else seed_kernel(task)
        settings = self.model_dump(exclude={"run_dir", "runs_dir", "run_id"})
        return Configuration(**{**settings, "task": str(task.folder), "kernel": str(kernel.resolve()),
                                "arch": arch}).validate()


def context_of(runtime: Any) -> RunContext:
    """The runtime's context; a graph invoked with none (a plain `graph.invoke(state)`) gets the defaults,
    which find the run through the state's run folder."""
    context = getattr(runtime, "context", None)
    if context is None:
        return RunContext.model_construct()
    if not isinstance(context, RunContext):
        raise ConfigError(f"the graph's context must be the run's settings (RunContext), not "
                          f"{type(context).__name__}.")
    return context
