"""The one way a run is made, for `kernelseek run` and LangGraph Studio alike: a `RunRequest` (the task by
name, the kernel and arch left to the task's defaults) is resolved into the run's `Configuration`, checked
for everything that would fail later (a GPU target without a GPU, a model without its credentials, a worker
that cannot be confined, a malformed bank, an unreachable checkpoint database), and given its folder.
Every problem is a `ConfigError` of one sentence, raised before any folder is made.
"""

from __future__ import annotations

from pathlib import Path

from kernelseek import preflight
from kernelseek.agent import sandbox
from kernelseek.agent.run_store import Run, default_runs_dir
from kernelseek.checkpoints import check_ref, is_url, open_saver
from kernelseek.harness import TaskError, load_task
from kernelseek.harness.task import seed_kernel
from kernelseek.settings import ConfigError, Configuration, RunRequest, option

REQUEST_ONLY = ("runs_dir", "run_id")  # where the folder goes, not how the run is configured


def make_run(request: RunRequest, *, checkpointer: str | Path = "sqlite", thread_id: str | None = None) -> Run:
    """A new run folder for `request`. `checkpointer`: sqlite (a file in the run folder), a PostgreSQL URL
    (the thread is then the run's UUID, unique across folders), or the Path of a SQLite file others write
    too (the Studio server's); `thread_id`: the LangGraph thread its checkpoints are under (default: the
    run's id)."""
    if isinstance(checkpointer, str):
        check_ref(checkpointer)  # sqlite or a URL, before anything is checked at length
    config = configuration(request)
    check_ready(config)
    shared = is_url(checkpointer)
    if shared:
        with open_saver(checkpointer):  # reachable, with its tables, before the run is made
            pass
    runs_dir = Path(request.runs_dir).expanduser() if request.runs_dir else default_runs_dir()
    return Run.create(config, runs_dir, request.run_id, thread_id=thread_id or (config.run_uuid if shared else None),
                      checkpoints=None if checkpointer == "sqlite" else str(checkpointer))


def configuration(request: RunRequest) -> Configuration:
    """The request's task, arch and kernel resolved as the task says (its first arch, its seed kernel)."""
    try:
        task = load_task(request.task)
        arch = request.arch or task.archs[0]
        if arch not in task.archs:
            raise ConfigError(f"{option('arch')} {arch}: the task {task.name} has no {arch} suite; use one of "
                              f"{', '.join(task.archs)}.")
        if request.sanitize:  # asked for: refused now where the gate cannot run
            from kernelseek.harness.sanitize import sanitize_problem

            problem = sanitize_problem(arch)
            if problem:
                raise ConfigError(problem + ".")
            task.sanitizer_scenarios(arch)
    except TaskError as error:
        raise ConfigError(str(error)) from None
    kernel = Path(request.kernel).expanduser() if request.kernel else seed_kernel(task)
    settings = request.model_dump(exclude=set(REQUEST_ONLY))
    if request.bank_stats:
        settings["bank_stats"] = str(Path(request.bank_stats).expanduser().resolve())
    return Configuration(**{**settings, "task": str(task.folder), "kernel": str(kernel.resolve()),
                            "arch": arch}).validate()


def check_ready(config: Configuration) -> None:
    """What would fail once the run started, refused before it starts."""
    if config.model and config.model.startswith("scripted/"):
        from kernelseek.models.scripted import ScriptError, load_script

        try:
            load_script(config.model.removeprefix("scripted/"))
        except ScriptError as error:
            raise ConfigError(str(error)) from None
    problem = preflight.check(config.arch, [(config.model, config.model_kwargs)])
    if problem:  # before anything is judged or any model called
        raise ConfigError(problem + ".")
    problem = sandbox_problem(config)
    if problem:
        raise ConfigError(problem)
    if config.mode == "auto":
        from kernelseek.bank import BankError, load_bank

        try:
            load_bank()  # a malformed bank file is reported now, not at the first question
        except BankError as error:
            raise ConfigError(str(error)) from None


def sandbox_problem(config: Configuration) -> str | None:
    """Why the worker's shell could not be confined, unless the run says --unconfined; an external coding
    CLI keeps its own environment and confinement."""
    if config.worker_command or config.unconfined:
        return None
    return sandbox.unavailable()
