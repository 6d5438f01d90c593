"""An experiment's configuration: a small YAML file.

    name: my_experiment              # optional; default: the file's name without .yaml
    task: my_task                    # a task folder, or a task name under evals/tasks
    kernel: null                     # the starting kernel (default: the task's seed)
    arch: cpu                        # default: the task's first target
    model: anthropic/claude-sonnet-4-5    # the built-in worker's model (litellm) ...
    worker_command: null             # ... or an external coding CLI, exactly one of the two
    mode: auto                       # who asks in the question-driven graph: auto (the bank); none
    target: null                     # end a run at this speedup ...
    target_gain: 1.3                 # ... or at this multiple of the starting kernel's speedup
    budgets: {max_steps: 40, max_dollars: 10, max_tokens: null, max_wall_s: null, max_evals: null}
    plateau_evals: 4                 # optional: the decision points' settings
    failing_evals: 3
    graphs: [kernelseek, tool_rich, no_question]   # or a mapping graph -> {model | worker_command | model_kwargs}
    repeats: 3
    seeds: [0, 1, 2]                 # one per repeat (default 0, 1, ...); the bank policy's seed
    levels: [1.1, 1.2, 1.3]          # speedup levels for "steps and dollars to reach"
    level_basis: start               # levels are multiples of the starting kernel's speedup (start) or speedups (baseline)
    docs: [docs/]                    # folders the tool-rich graph's search_docs tool searches
    model_kwargs: {}                 # passed to litellm.completion

Relative paths (kernel, docs, a `scripted/<path>` model) are relative to the config file. Every mistake
is reported as one sentence naming the file and the field (`ExperimentConfigError`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from kernelseek.validation import problem, sentence

BUDGETS = ("max_steps", "max_dollars", "max_tokens", "max_wall_s", "max_evals")
GRAPH_FIELDS = ("model", "worker_command", "model_kwargs")
MODES = ("auto", "none")


class ExperimentConfigError(ValueError):
    """A bad experiment file; the message is one sentence naming the file, the field and the fix."""


# --- the file, as pydantic models: types, ranges and unknown keys; the messages are `_sentence`'s ------------

def _finite(value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise PydanticCustomError("finite", "")
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class Budgets(_Strict):
    max_steps: int | None = Field(None, gt=0)
    max_dollars: float | None = Field(None, gt=0)
    max_tokens: int | None = Field(None, gt=0)
    max_wall_s: float | None = Field(None, gt=0)
    max_evals: int | None = Field(None, gt=0)

    _check_finite = field_validator("max_dollars", "max_wall_s")(_finite)


class GraphEntry(_Strict):
    model: str | None = None
    worker_command: str | None = None
    model_kwargs: dict[str, Any] | None = None


class ExperimentFile(_Strict):
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9_-]+$")
    task: str = Field(min_length=1)
    kernel: str | None = None
    arch: str | None = None
    model: str | None = Field(None, min_length=1)
    worker_command: str | None = None
    mode: Literal["auto", "none"] = "auto"
    target: float | None = Field(None, gt=0)
    target_gain: float | None = Field(None, gt=1)
    budgets: Budgets | None = None
    plateau_evals: int = Field(4, ge=1)
    failing_evals: int = Field(3, ge=1)
    graphs: list[str] | dict[str, GraphEntry | None] = ["kernelseek", "tool_rich", "no_question"]
    repeats: int = Field(1, ge=1)
    seeds: list[int] | None = None
    levels: list[float] | None = None
    level_basis: Literal["baseline", "start"] = "baseline"
    docs: str | list[str] | None = None
    model_kwargs: dict[str, Any] | None = None
    judge_start: bool = True

    _check_finite = field_validator("target", "target_gain")(_finite)

    @field_validator("levels")
    @classmethod
    def _positive_levels(cls, levels: list[float] | None) -> list[float] | None:
        if levels and not all(math.isfinite(v) and v > 0 for v in levels):
            raise PydanticCustomError("levels", "")
        return levels

    @model_validator(mode="after")
    def _together(self) -> ExperimentFile:
        if self.seeds is not None and len(self.seeds) != self.repeats:
            raise PydanticCustomError("config", f"the field 'seeds' must list {self.repeats} whole numbers, one per "
                                      "repeat.")
        return self


_FIELD_HINTS = {  # what a value of the wrong shape must be: "the field 'x' must ..."
    "name": "be letters, digits, '-' and '_' (it names a folder)",
    "model": "be a model name such as anthropic/claude-sonnet-4-5",
    "worker_command": "be a command line (a string)",
    "model_kwargs": "be a mapping of litellm.completion arguments",
    "budgets": f"be a mapping of {', '.join(BUDGETS)}",
    "graphs": "be a list of graph names (e.g. [kernelseek, tool_rich, no_question]) or a mapping of graph name "
              "to its model",
    "levels": "list positive speedups, e.g. [1.0, 1.1, 1.2]",
    "docs": "list folders of documents",
    "judge_start": "be true or false",
    "seeds": "list whole numbers, one per repeat",
    "level_basis": "be baseline or start",
}


def _sentence(error: ValidationError, data: dict[str, Any]) -> str:
    """pydantic's first problem with the file, as one sentence naming the field and the fix."""
    # a union field reports each branch it tried (graphs: a list or a mapping): the deepest one is the mistake
    found = problem(error, first=(), deepest=True)
    kind, value, loc, where, top = found.kind, found.value, found.path, found.where, found.field
    if kind == "config":
        return found.message
    if top == "graphs" and len(loc) == 3 and loc[2] in _FIELD_HINTS and kind != "extra_forbidden":
        return f"the field '{where}' must {_FIELD_HINTS[loc[2]]}, not {value!r}."
    if kind == "extra_forbidden":
        if top == "budgets":
            return f"the field '{where}' is unknown; the budgets are {', '.join(BUDGETS)}."
        if top == "graphs":
            return f"the field '{'.'.join(loc[:2])}' may hold only {', '.join(GRAPH_FIELDS)} (found {loc[-1]})."
        return sentence(found, fields=sorted(ExperimentFile.model_fields))
    if kind == "missing" and top == "task":
        return "the field 'task' is required: a task folder or a task name under evals/tasks."
    if top == "mode" and value == "human":
        return ("the field 'mode' is 'human', which an experiment cannot run unattended; use auto (the question "
                "bank) or run human sessions with `kernelseek run --mode human`.")
    if top == "mode":
        return f"the field 'mode' must be one of {', '.join(MODES)}, not {value!r}."
    if len(loc) == 1 and top in _FIELD_HINTS and kind not in ("finite", "greater_than", "greater_than_equal"):
        return f"the field '{top}' must {_FIELD_HINTS[top]}, not {data.get(top, value)!r}."
    return sentence(found)


@dataclass
class GraphSpec:
    name: str
    model: str | None
    worker_command: str | None
    model_kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Experiment:
    path: Path
    name: str
    task: str  # the task folder (absolute)
    kernel: str  # absolute
    arch: str
    graphs: list[GraphSpec]
    repeats: int
    seeds: list[int]
    mode: str = "auto"
    target: float | None = None
    target_gain: float | None = None
    budgets: dict[str, Any] = field(default_factory=dict)
    plateau_evals: int = 4
    failing_evals: int = 3
    judge_start: bool = True
    levels: list[float] = field(default_factory=list)
    level_basis: str = "baseline"
    docs: list[str] = field(default_factory=list)

    def jobs(self) -> list[tuple[GraphSpec, int]]:
        """Every (graph, repeat), repeat-major: the first repeat of every graph comes before any second one."""
        return [(g, r) for r in range(self.repeats) for g in self.graphs]

    def run_id(self, graph: GraphSpec, repeat: int) -> str:
        return f"{graph.name}-r{repeat}"

    def run_configuration(self, graph: GraphSpec, repeat: int):  # noqa: ANN201 - kernelseek.agent Configuration
        from kernelseek.settings import Configuration

        return Configuration(
            task=self.task, kernel=self.kernel, arch=self.arch, model=graph.model, worker_command=graph.worker_command,
            mode=self.mode if graph.name == "kernelseek" else "none", graph=graph.name, target=self.target,
            target_gain=self.target_gain, plateau_evals=self.plateau_evals, failing_evals=self.failing_evals,
            judge_start=self.judge_start, seed=self.seeds[repeat], model_kwargs=dict(graph.model_kwargs),
            **{k: v for k, v in self.budgets.items() if v is not None or k != "max_steps"})


def _fail(path: Path, message: str) -> ExperimentConfigError:
    return ExperimentConfigError(f"{path}: {message}")


def _resolve(base: Path, value: str) -> str:
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (base / path).resolve())


def _model(base: Path, model: str | None, path: Path, where: str) -> str | None:
    if model is None or not model.startswith("scripted/"):
        return model
    script = _resolve(base, model.removeprefix("scripted/"))
    if not Path(script).is_file():
        raise _fail(path, f"the field '{where}' names the model script {script}, which does not exist; "
                    "write it or fix the path (relative to the config file).")
    return "scripted/" + script


def read_file(path: Path) -> ExperimentFile:
    """The file's fields, typed and range-checked (ExperimentConfigError, one sentence, on any mistake)."""
    import yaml

    if not path.is_file():
        raise ExperimentConfigError(f"{path}: no such experiment file; pass a YAML file such as "
                                    "evals/experiments/cpu_demo.yaml.")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise _fail(path, f"the file is not valid YAML{where}; fix its syntax.") from None
    if not isinstance(data, dict):
        raise _fail(path, "an experiment file is a mapping of fields (task, model, graphs, repeats, ...).")
    try:
        return ExperimentFile(**{key: value for key, value in data.items()})
    except ValidationError as error:
        raise _fail(path, _sentence(error, data)) from None


def load_experiment(path: str | Path) -> Experiment:
    """Read and check an experiment file; raise ExperimentConfigError (one sentence) on any mistake."""
    from kernelseek import project
    from kernelseek.harness import TaskError, load_task
    from kernelseek.harness.task import seed_kernel

    path = Path(path)
    file = read_file(path)
    base = path.resolve().parent

    task_ref = file.task
    if not Path(task_ref).is_absolute() and (base / task_ref).is_dir():
        task_ref = str((base / task_ref).resolve())
    try:
        task = load_task(task_ref)
    except TaskError as error:
        raise _fail(path, f"the field 'task': {error}") from None
    arch = file.arch or task.archs[0]
    if arch not in task.archs:
        raise _fail(path, f"the field 'arch' is {arch!r}, but the task {task.name} has suites for "
                    f"{', '.join(task.archs)}; use one of those.")
    kernel = _resolve(base, file.kernel) if file.kernel else str(seed_kernel(task).resolve())
    if not Path(kernel).is_file():
        raise _fail(path, f"the field 'kernel' names {kernel}, which does not exist; give the starting kernel's path.")

    model, command, kwargs = _model(base, file.model, path, "model"), file.worker_command, file.model_kwargs or {}
    entries = {g: None for g in file.graphs} if isinstance(file.graphs, list) else file.graphs
    if not entries:
        raise _fail(path, f"the field 'graphs' must {_FIELD_HINTS['graphs']}.")
    graphs = []
    for gname, entry in entries.items():
        where = f"graphs.{gname}"
        if project.graph_file(str(gname)) is None:
            raise _fail(path, f"the field 'graphs' names {gname!r}, which is not a graph under graphs/; use "
                        f"{', '.join(project.graph_names())}.")
        entry = entry or GraphEntry()
        g_model = _model(base, entry.model, path, f"{where}.model")
        g_command = entry.worker_command
        if g_model is None and g_command is None:
            g_model, g_command = model, command
        if bool(g_model) == bool(g_command):
            raise _fail(path, f"the graph {gname} needs exactly one worker: set 'model' (a litellm model) or "
                        f"'worker_command' (a coding CLI), at the top level or under '{where}'.")
        if gname == "tool_rich" and g_command:
            raise _fail(path, f"the graph tool_rich needs the built-in worker ('model' under '{where}' or at the top "
                        "level): its extra tools are offered to that worker, and an external CLI brings its own.")
        graphs.append(GraphSpec(gname, g_model, g_command, dict(entry.model_kwargs if entry.model_kwargs is not None
                                                                else kwargs)))

    budgets = (file.budgets or Budgets()).model_dump(exclude_unset=True)
    if not any(budgets.get(k) for k in BUDGETS) and file.target is None and file.target_gain is None:
        raise _fail(path, "the field 'budgets' sets no limit; give at least max_steps or max_dollars so every run ends.")
    docs = [file.docs] if isinstance(file.docs, str) else list(file.docs or [])
    docs = [_resolve(base, d) for d in docs]
    for folder in docs:
        if not Path(folder).exists():
            raise _fail(path, f"the field 'docs' names {folder}, which does not exist; fix the path (relative to "
                        "the config file).")
    if file.target_gain is not None and not file.judge_start:
        raise _fail(path, "the field 'target_gain' needs judge_start: true (the starting kernel judged).")
    if file.level_basis == "start" and not file.judge_start:
        raise _fail(path, "the field 'level_basis' is start, which needs judge_start: true.")

    return Experiment(path=path.resolve(), name=file.name or path.stem, task=str(task.folder), kernel=kernel,
                      arch=arch, graphs=graphs, repeats=file.repeats,
                      seeds=file.seeds if file.seeds is not None else list(range(file.repeats)), mode=file.mode,
                      target=file.target, target_gain=file.target_gain, budgets=budgets,
                      plateau_evals=file.plateau_evals, failing_evals=file.failing_evals, judge_start=file.judge_start,
                      levels=sorted(float(v) for v in file.levels or []), level_basis=file.level_basis, docs=docs)
