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
from typing import Any

BUDGETS = ("max_steps", "max_dollars", "max_tokens", "max_wall_s", "max_evals")
TOP_FIELDS = {"name", "task", "kernel", "arch", "model", "worker_command", "mode", "target", "target_gain",
              "budgets", "plateau_evals", "failing_evals", "graphs", "repeats", "seeds", "levels", "level_basis",
              "docs", "model_kwargs", "judge_start"}
GRAPH_FIELDS = {"model", "worker_command", "model_kwargs"}
MODES = ("auto", "none")


class ExperimentConfigError(ValueError):
    """A bad experiment file; the message is one sentence naming the file, the field and the fix."""


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
        from kernelseek.agent.configuration import Configuration

        return Configuration(
            task=self.task, kernel=self.kernel, arch=self.arch, model=graph.model, worker_command=graph.worker_command,
            mode=self.mode if graph.name == "kernelseek" else "none", graph=graph.name, target=self.target,
            target_gain=self.target_gain, plateau_evals=self.plateau_evals, failing_evals=self.failing_evals,
            judge_start=self.judge_start, seed=self.seeds[repeat], model_kwargs=dict(graph.model_kwargs),
            **{k: v for k, v in self.budgets.items() if v is not None or k != "max_steps"})


def _fail(path: Path, message: str) -> ExperimentConfigError:
    return ExperimentConfigError(f"{path}: {message}")


def _number(path: Path, name: str, value: Any, *, integer: bool = False, minimum: float | None = None,
            above: float | None = None, optional: bool = True) -> Any:
    if value is None:
        if optional:
            return None
        raise _fail(path, f"the field '{name}' is required.")
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise _fail(path, f"the field '{name}' must be {'a whole number' if integer else 'a number'}, not {value!r}.")
    if not math.isfinite(value):
        raise _fail(path, f"the field '{name}' must be a finite number, not {value!r}.")
    if minimum is not None and value < minimum:
        raise _fail(path, f"the field '{name}' must be at least {minimum:g}, not {value!r}.")
    if above is not None and value <= above:
        raise _fail(path, f"the field '{name}' must be above {above:g}, not {value!r}.")
    return value


def _resolve(base: Path, value: str) -> str:
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (base / path).resolve())


def _model(base: Path, model: Any, path: Path, where: str) -> str | None:
    if model is None:
        return None
    if not isinstance(model, str) or not model.strip():
        raise _fail(path, f"the field '{where}' must be a model name such as anthropic/claude-sonnet-4-5.")
    if model.startswith("scripted/"):
        script = _resolve(base, model.removeprefix("scripted/"))
        if not Path(script).is_file():
            raise _fail(path, f"the field '{where}' names the model script {script}, which does not exist; "
                        "write it or fix the path (relative to the config file).")
        return "scripted/" + script
    return model


def load_experiment(path: str | Path) -> Experiment:
    """Read and check an experiment file; raise ExperimentConfigError (one sentence) on any mistake."""
    import yaml

    from kernelseek.harness import TaskError, load_task
    from kernelseek.harness.task import repo_root

    path = Path(path)
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
    unknown = sorted(set(data) - TOP_FIELDS)
    if unknown:
        raise _fail(path, f"the field '{unknown[0]}' is unknown; the fields are {', '.join(sorted(TOP_FIELDS))}.")
    base = path.resolve().parent

    name = data.get("name") or path.stem
    if not isinstance(name, str) or not name.replace("-", "").replace("_", "").isalnum():
        raise _fail(path, f"the field 'name' must be letters, digits, '-' and '_' (it names a folder), not {name!r}.")
    if not data.get("task"):
        raise _fail(path, "the field 'task' is required: a task folder or a task name under evals/tasks.")
    task_ref = str(data["task"])
    if not Path(task_ref).is_absolute() and (base / task_ref).is_dir():
        task_ref = str((base / task_ref).resolve())
    try:
        task = load_task(task_ref)
    except TaskError as error:
        raise _fail(path, f"the field 'task': {error}") from None
    arch = data.get("arch") or task.archs[0]
    if arch not in task.archs:
        raise _fail(path, f"the field 'arch' is {arch!r}, but the task {task.name} has suites for "
                    f"{', '.join(task.archs)}; use one of those.")
    kernel = _resolve(base, data["kernel"]) if data.get("kernel") else str((repo_root() / task.seed).resolve())
    if not Path(kernel).is_file():
        raise _fail(path, f"the field 'kernel' names {kernel}, which does not exist; give the starting kernel's path.")

    model = _model(base, data.get("model"), path, "model")
    command = data.get("worker_command")
    if command is not None and not isinstance(command, str):
        raise _fail(path, "the field 'worker_command' must be a command line (a string).")
    kwargs = data.get("model_kwargs") or {}
    if not isinstance(kwargs, dict):
        raise _fail(path, "the field 'model_kwargs' must be a mapping of litellm.completion arguments.")

    raw_graphs = data.get("graphs", ["kernelseek", "tool_rich", "no_question"])
    if isinstance(raw_graphs, list):
        raw_graphs = {g: {} for g in raw_graphs} if all(isinstance(g, str) for g in raw_graphs) else None
    if not isinstance(raw_graphs, dict) or not raw_graphs:
        raise _fail(path, "the field 'graphs' must be a list of graph names (e.g. [kernelseek, tool_rich, "
                    "no_question]) or a mapping of graph name to its model.")
    from kernelseek.agent.graph import GRAPHS

    graphs = []
    for gname, spec in raw_graphs.items():
        where = f"graphs.{gname}"
        if gname not in GRAPHS and not (repo_root() / "graphs" / f"{gname}.py").is_file():
            raise _fail(path, f"the field 'graphs' names {gname!r}, which is not a graph under graphs/; use "
                        f"{', '.join(GRAPHS)}.")
        spec = spec or {}
        if not isinstance(spec, dict) or set(spec) - GRAPH_FIELDS:
            bad = sorted(set(spec) - GRAPH_FIELDS) if isinstance(spec, dict) else ["(not a mapping)"]
            raise _fail(path, f"the field '{where}' may hold only {', '.join(sorted(GRAPH_FIELDS))} "
                        f"(found {bad[0]}).")
        g_model = _model(base, spec.get("model"), path, f"{where}.model") if "model" in spec else None
        g_command = spec.get("worker_command")
        if g_model is None and g_command is None:
            g_model, g_command = model, command
        if bool(g_model) == bool(g_command):
            raise _fail(path, f"the graph {gname} needs exactly one worker: set 'model' (a litellm model) or "
                        f"'worker_command' (a coding CLI), at the top level or under '{where}'.")
        if gname == "tool_rich" and g_command:
            raise _fail(path, f"the graph tool_rich needs the built-in worker ('model' under '{where}' or at the top "
                        "level): its extra tools are offered to that worker, and an external CLI brings its own.")
        g_kwargs = spec.get("model_kwargs", kwargs)
        if not isinstance(g_kwargs, dict):
            raise _fail(path, f"the field '{where}.model_kwargs' must be a mapping.")
        graphs.append(GraphSpec(gname, g_model, g_command, dict(g_kwargs)))

    repeats = _number(path, "repeats", data.get("repeats", 1), integer=True, minimum=1)
    seeds = data.get("seeds", list(range(repeats)))
    if not isinstance(seeds, list) or len(seeds) != repeats or not all(isinstance(s, int) and not isinstance(s, bool)
                                                                       for s in seeds):
        raise _fail(path, f"the field 'seeds' must list {repeats} whole numbers, one per repeat.")

    mode = data.get("mode", "auto")
    if mode == "human":
        raise _fail(path, "the field 'mode' is 'human', which an experiment cannot run unattended; use auto (the "
                    "question bank) or run human sessions with `kernelseek run --mode human`.")
    if mode not in MODES:
        raise _fail(path, f"the field 'mode' must be one of {', '.join(MODES)}, not {mode!r}.")
    target = _number(path, "target", data.get("target"), above=0)
    target_gain = _number(path, "target_gain", data.get("target_gain"), above=1)

    budgets = data.get("budgets") or {}
    if not isinstance(budgets, dict):
        raise _fail(path, f"the field 'budgets' must be a mapping of {', '.join(BUDGETS)}.")
    for key, value in budgets.items():
        if key not in BUDGETS:
            raise _fail(path, f"the field 'budgets.{key}' is unknown; the budgets are {', '.join(BUDGETS)}.")
        _number(path, f"budgets.{key}", value, integer=key in ("max_steps", "max_tokens", "max_evals"),
                above=0)
    if not any(budgets.get(k) for k in BUDGETS) and target is None and target_gain is None:
        raise _fail(path, "the field 'budgets' sets no limit; give at least max_steps or max_dollars so every run ends.")

    levels = data.get("levels") or []
    if not isinstance(levels, list) or not all(isinstance(v, int | float) and not isinstance(v, bool) and v > 0
                                               for v in levels):
        raise _fail(path, "the field 'levels' must list positive speedups, e.g. [1.0, 1.1, 1.2].")
    basis = data.get("level_basis", "baseline")
    if basis not in ("baseline", "start"):
        raise _fail(path, f"the field 'level_basis' must be baseline or start, not {basis!r}.")
    docs = data.get("docs") or []
    if isinstance(docs, str):
        docs = [docs]
    if not isinstance(docs, list) or not all(isinstance(d, str) for d in docs):
        raise _fail(path, "the field 'docs' must list folders of documents.")
    docs = [_resolve(base, d) for d in docs]
    for folder in docs:
        if not Path(folder).exists():
            raise _fail(path, f"the field 'docs' names {folder}, which does not exist; fix the path (relative to "
                        "the config file).")
    judge_start = data.get("judge_start", True)
    if not isinstance(judge_start, bool):
        raise _fail(path, "the field 'judge_start' must be true or false.")
    if target_gain is not None and not judge_start:
        raise _fail(path, "the field 'target_gain' needs judge_start: true (the starting kernel judged).")
    if basis == "start" and not judge_start:
        raise _fail(path, "the field 'level_basis' is start, which needs judge_start: true.")
    plateau = _number(path, "plateau_evals", data.get("plateau_evals", 4), integer=True, minimum=1)
    failing = _number(path, "failing_evals", data.get("failing_evals", 3), integer=True, minimum=1)

    return Experiment(path=path.resolve(), name=name, task=str(task.folder), kernel=kernel, arch=arch, graphs=graphs,
                      repeats=repeats, seeds=seeds, mode=mode, target=target, target_gain=target_gain,
                      budgets=dict(budgets), plateau_evals=plateau, failing_evals=failing, judge_start=judge_start,
                      levels=sorted(float(v) for v in levels), level_basis=basis, docs=docs)
