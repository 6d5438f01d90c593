"""What a task folder provides, and how the harness loads one.

A task is a folder `evals/tasks/<name>/` holding `task.py`, which defines `TASK`, an instance of a
`Task` subclass. The harness knows nothing about any operator: everything operator-specific (inputs,
the C entry point's arguments, the reference, the tolerance rule, the baselines, the scenario suites)
comes through this interface.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from kernelseek import project


class TaskError(ValueError):
    """A task folder that cannot be used; the message names the file and the fix."""


@dataclass(frozen=True)
class Scenario:
    """One case of a suite. `params` is whatever the task needs to build its inputs (JSON types)."""

    name: str
    group: str
    params: dict[str, Any]
    quick: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "group": self.group, "params": self.params, "quick": self.quick}


@dataclass
class Baseline:
    """An implementation the candidate is checked beside and timed against.

    `run(scenario, inputs)` returns the outputs as a dict of tensors. `unavailable` is None when the
    baseline can run here, else one sentence saying why not. A headline baseline must support every
    scenario; one timed only beside it may support fewer."""

    name: str
    run: Callable[[Scenario, dict], dict]
    unavailable: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    supports: Callable[[Scenario], bool] | None = None  # None: every scenario of the suite


class Task:
    """Base class of a task. Subclasses set the class attributes and implement the methods."""

    name: str = ""
    description: str = ""  # shown to the worker: what the operator computes and what the contract is
    entry_point: str = ""  # the C symbol every kernel exports
    header: str = ""  # file name, in the task folder, of the C declaration of the entry point
    seed: str = ""  # path of the seed kernel, relative to the folder above evals/ (the project or the package)
    archs: tuple[str, ...] = ()  # the targets this task has suites for ("sm90", "sm100", "cpu")
    headline_baseline: dict[str, str] = {}  # arch -> name of the baseline the speedup is against
    # Libraries a kernel for this task may not use (one that would do the task's work for it), even where the
    # toolkit ships them: the library's name -> a regular expression that a folder or file name on its headers'
    # paths matches whole (in any case, up to the first dot), e.g. {"cuBLAS": r"cublas.*"}. The guard
    # refuses an #include of one, installed here or not. None by default: then only the guard's own rule holds
    # (headers of the CUDA toolkit and of the system's C/C++ library only).
    forbidden_libraries: dict[str, str] = {}
    # The narrowest type a kernel for this task may multiply in on the tensor cores ("bf16", "fp8"...): the
    # compute floor is `flops` at that type's dense peak (floors.py). None: no compute floor.
    compute_dtype: str | None = None

    folder: Path = Path(".")

    def __reduce__(self) -> tuple:
        # A task's class lives in a module executed from its folder, which another process (a Ray worker)
        # cannot import by name: it travels as its folder and is loaded again there.
        return load_task, (str(self.folder),)

    # --- the suite -------------------------------------------------------------------------------
    def scenarios(self, arch: str) -> list[Scenario]:
        raise NotImplementedError

    # --- the hold-out: unseen scenarios from the suite's distribution ------------------------------
    def holdout(self, arch: str, n: int, seed: int) -> list[Scenario]:
        """`n` scenarios drawn, deterministically from `seed`, from the distribution the arch's suite
        samples (random sizes, every feature of the suite), each one the headline baseline supports.

        Names carry the seed and the index (`holdout_s<seed>_<i>_...`), so they never collide with the
        suite's names; groups say which feature a scenario exercises and start with "holdout". A task
        that cannot sample leaves this as it is: asking it for a hold-out is a TaskError."""
        raise TaskError(f"{self.folder}: the task defines no hold-out sampler; implement Task.holdout(arch, n, "
                        "seed) in its task.py, or judge without a hold-out (--holdout 0).")

    # --- the sanitizer suite: small shapes of every feature, for compute-sanitizer ------------------
    def sanitizer_scenarios(self, arch: str) -> list[Scenario]:
        """Scenarios small enough to run under compute-sanitizer (which slows a kernel 10-1000x) that
        still reach every code path of a kernel for `arch`: each feature and size class the suite has.
        A task that names none cannot be gated: asking for the gate is a TaskError."""
        raise TaskError(f"{self.folder}: the task names no sanitizer suite; implement Task.sanitizer_scenarios(arch) "
                        "in its task.py (small scenarios of every feature), or judge without --sanitize.")

    # --- one scenario, inside the child process --------------------------------------------------
    def make_inputs(self, scenario: Scenario, seed: int, device: str) -> dict[str, Any]:
        """Fresh random inputs (tensors and plain values); a different seed gives different values."""
        raise NotImplementedError

    def new_outputs(self, scenario: Scenario, inputs: dict[str, Any], device: str) -> dict[str, Any]:
        """Freshly allocated outputs, poisoned with NaN so that an unwritten element is seen."""
        raise NotImplementedError

    def vary_inputs(self, inputs: dict[str, Any]) -> None:
        """Give every floating-point input new values in place, of the kind the scenario allows, so that no
        timed call sees inputs an earlier one saw (a cache keyed on their content never hits). Runs before
        every timed call, outside the timed interval, captured in a CUDA graph on a GPU: torch ops only, no
        host synchronization. The default flips the sign of each element at random, which keeps every
        magnitude; a task whose inputs must keep their signs overrides it."""
        import torch  # here, not above: loading a task's description needs no torch

        for value in inputs.values():
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                value.mul_(torch.randint_like(value, 0, 2).mul_(2).sub_(1))

    def bind(self, lib: ctypes.CDLL) -> Callable[[Scenario, dict, dict, int], int]:
        """Return `call(scenario, inputs, outputs, stream) -> status` for the entry point in `lib`."""
        raise NotImplementedError

    def reference(self, scenario: Scenario, inputs: dict[str, Any]) -> dict[str, Any]:
        """The outputs computed in float32 (or better)."""
        raise NotImplementedError

    def errors(self, scenario: Scenario, outputs: dict, reference: dict) -> dict[str, float]:
        """Error measures of `outputs` against `reference` (NaN-aware: a NaN gives inf)."""
        raise NotImplementedError

    def fallback_errors(self, scenario: Scenario, inputs: dict, reference: dict) -> dict[str, float]:
        """The errors the tolerance is relative to when no baseline can run here."""
        raise NotImplementedError

    def within_tolerance(self, errors: dict[str, float], allowed: dict[str, float]) -> str | None:
        """None when `errors` pass against `allowed` (the baseline's errors), else why not."""
        raise NotImplementedError

    def baselines(self, arch: str) -> list[Baseline]:
        raise NotImplementedError

    def flops(self, scenario: Scenario) -> float:
        raise NotImplementedError

    # --- the memory floor (optional) ----------------------------------------------------------------
    def bytes_moved(self, scenario: Scenario) -> float | None:
        """The bytes a kernel must read and write for `scenario` at the least (each input read once, each
        output written once), or None when the task states no memory floor. When it returns a number, the
        judge measures the GPU's (or CPU's) copy bandwidth before the candidate is loaded and reports per
        scenario the floor `bytes_moved / copy bandwidth` and the fraction of it each implementation
        reached (`floor_s / time`); the verdict gives the suite's geometric mean of the candidate's."""
        return None

    # --- helpers shared by every task --------------------------------------------------------------
    def find(self, arch: str, name: str) -> Scenario:
        for scenario in self.scenarios(arch):
            if scenario.name == name:
                return scenario
        raise TaskError(f"{self.folder}: the {arch} suite has no scenario named '{name}'.")


def holdout_name(seed: int, index: int, n: int, detail: str) -> str:
    """The name of hold-out scenario `index` of `n` drawn with `seed`: `holdout_s1_07_<detail>`."""
    width = max(2, len(str(max(n - 1, 0))))
    return f"holdout_s{seed}_{index:0{width}d}_{detail}"


def load_task(path: str | Path) -> Task:
    """Load `TASK` from `<path>/task.py`. `path` is a task folder, or the name of a task of the project here
    or of the package (kernelseek/project.py)."""
    folder = Path(path)
    if not folder.is_dir():
        found = project.task_folder(str(path))
        if found is None:
            names = ", ".join(f.name for f in project.task_folders()) or "none"
            raise TaskError(f"{path}: no such task folder or task name (tasks here: {names}); pass a task folder "
                            "or one of those names.")
        folder = found
    module_file = folder / "task.py"
    if not module_file.is_file():
        raise TaskError(f"{folder}: the task folder has no task.py; a task defines TASK in task.py.")
    with _load_lock:
        module = _exec_task_module(folder.resolve())
    task = getattr(module, "TASK", None)
    if not isinstance(task, Task):
        raise TaskError(f"{module_file}: TASK is missing or not a kernelseek Task; define TASK = YourTask().")
    _check_forbidden_libraries(task.forbidden_libraries, module_file)
    task.folder = folder.resolve()
    return task


def _check_forbidden_libraries(libraries: Any, module_file: Path) -> None:
    if not isinstance(libraries, dict) or not all(isinstance(k, str) and k and isinstance(v, str)
                                                  for k, v in libraries.items()):
        raise TaskError(f"{module_file}: forbidden_libraries is {libraries!r}; make it a dict from each library's "
                        "name to a pattern of its headers' folder or file names, e.g. {'cuBLAS': 'cublas.*'}.")
    for name, pattern in libraries.items():
        try:
            re.compile(pattern)
        except re.error as error:
            raise TaskError(f"{module_file}: forbidden_libraries['{name}'] = {pattern!r} is not a regular "
                            f"expression ({error}); fix the pattern.") from None


# --- running a task folder's code -----------------------------------------------------------------
#
# Each folder's task.py runs as the module `kernelseek_tasks.<folder>_<hash>.task` of a package whose
# path is the folder, so `from . import scenarios` finds the folder's own scenarios.py. A plain
# `import scenarios` at the top of task.py finds it too: while task.py runs, the folder is first on
# sys.path and the names of its modules are free in sys.modules (another task's `scenarios`, loaded
# earlier, is set aside and put back after). Afterwards the folder's modules live only under the
# package's name, so two task folders with modules of the same name never see each other's.

TASKS_PACKAGE = "kernelseek_tasks"
_load_lock = threading.RLock()


def _package_name(folder: Path) -> str:
    safe = re.sub(r"\W", "_", folder.name) or "task"
    return f"{TASKS_PACKAGE}.{safe}_{hashlib.sha1(str(folder).encode()).hexdigest()[:8]}"


def _own_module_names(folder: Path) -> set[str]:
    """Top-level names the folder's own modules would be imported as (`scenarios` for scenarios.py)."""
    names = {p.stem for p in folder.glob("*.py")}
    names |= {p.name for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    return {n for n in names if n.isidentifier()}


def _matches(key: str, names: set[str]) -> bool:
    return key.split(".", 1)[0] in names


def _inside(module: ModuleType, folder: Path) -> bool:
    file = getattr(module, "__file__", None)
    return bool(file) and Path(file).resolve().is_relative_to(folder)


def _exec_task_module(folder: Path) -> ModuleType:
    package = _package_name(folder)
    for key in [k for k in sys.modules if k == package or k.startswith(package + ".")]:
        del sys.modules[key]  # a fresh load runs the folder's code again
    if TASKS_PACKAGE not in sys.modules:
        root = ModuleType(TASKS_PACKAGE, "The task folders the harness loaded (one subpackage each).")
        root.__path__ = []
        sys.modules[TASKS_PACKAGE] = root
    holder = ModuleType(package, f"The task folder {folder}.")
    holder.__path__ = [str(folder)]
    holder.__package__ = package
    sys.modules[package] = holder
    names = _own_module_names(folder)
    set_aside = {k: sys.modules.pop(k) for k in [k for k in sys.modules if _matches(k, names)]}
    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location(f"{package}.task", folder / "task.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
        for key in [k for k in sys.modules if _matches(k, names)]:
            loaded = sys.modules.pop(key)
            if _inside(loaded, folder):
                sys.modules.setdefault(f"{package}.{key}", loaded)
        sys.modules.update(set_aside)
    return module


def repo_root() -> Path:
    """The first folder that holds data: the project here, else the package's data (kernelseek/project.py)."""
    return project.roots()[0]


def seed_kernel(task: Task) -> Path:
    """The task's seed kernel file: beside the task (its project or the package), else wherever data is."""
    return project.data_file(task.folder, task.seed)
