"""A graph run's LangGraph runtime context (`StateGraph(context_schema=RunContext)`): the run's settings.

The CLI opens (or makes) the run folder and passes `RunContext.of(run)`: the nodes reach that `Run` (its
configuration, trace writer and folders) through `runtime.context.run(state)`. LangGraph Studio shows the
same fields as its settings form (typed, described, with defaults) and passes them as a dict; the graph's
`start` node then makes a new run folder from them, exactly as `kernelseek run` would.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr

from kernelseek.agent import studio
from kernelseek.agent.make_run import make_run
from kernelseek.agent.run_store import Run, default_runs_dir
from kernelseek.settings import ConfigError, RunRequest, option


def in_form_words(message: str) -> str:
    """A sentence about the run settings that names `kernelseek run`'s options (--target-gain, --no-judge-start)
    as Studio's form names its fields (target_gain, judge_start=false)."""
    fields = {option(name): name for name in RunRequest.model_fields}
    fields |= {"--no-" + option(name)[2:]: f"{name}=false" for name, info in RunRequest.model_fields.items()
               if info.annotation is bool}
    return re.sub(r"--[a-z][a-z-]*", lambda flag: fields.get(flag.group(0), flag.group(0)), message)


class RunContext(RunRequest):
    run_dir: str | None = Field(None, description="Drive this existing run folder (its own config.json's "
                                "settings are used); empty: a new run is made from these settings.")
    _run: Run | None = PrivateAttr(None)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ConfigError as error:  # Studio's form has fields, not options
            raise ConfigError(in_form_words(str(error))) from None

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
        """A new run folder from these settings, made as `kernelseek run` makes one (`make_run`), its
        checkpoints in the Studio server's file."""
        studio.check_runs_dir(Path(self.runs_dir).expanduser() if self.runs_dir else default_runs_dir())
        request = RunRequest(**self.model_dump(exclude={"run_dir"}))
        checkpoints = studio.server_checkpoints()
        try:
            self._run = make_run(request, checkpointer=Path(checkpoints) if checkpoints else "sqlite",
                                 thread_id=thread_id)
        except ConfigError as error:
            raise ConfigError(in_form_words(str(error))) from None
        return self._run


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
