"""`judge`: guard, build, run every scenario in a child process, and summarize.

A candidate is correct only if every scenario of the suite is; its speedup is the geometric mean over
the suite of baseline time / candidate time. `judge` never raises for a bad kernel: a compile error, a
guard violation, a crash, a hang or a wrong answer gives `correct=False` and the reason.
"""

from __future__ import annotations

import fnmatch
import json
import math
import os
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelseek.harness.build import BuildError, build_kernel
from kernelseek.harness.runner import run_scenarios
from kernelseek.harness.task import Task, TaskError, load_task

GPU_CAPABILITY = {"sm90": (9,), "sm100": (10,)}


@dataclass
class Judgement:
    task: str
    kernel: str
    arch: str
    judgement: str  # "quick" or "full"
    correct: bool
    speedup: float | None  # geometric mean over the scenarios, against the headline baseline
    reason: str | None  # why it is not correct (the first failure), or None
    baseline: str | None = None
    groups: dict[str, dict] = field(default_factory=dict)
    scenarios: list[dict] = field(default_factory=list)
    build: dict = field(default_factory=dict)
    device: dict = field(default_factory=dict)
    baselines: dict = field(default_factory=dict)
    sha256: str | None = None
    wall_s: float = 0.0
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    command: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def write(self, path: str | Path) -> Path:
        """Write the JSON atomically (a crash never leaves half a report)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(path.suffix + ".partial")
        partial.write_text(json.dumps(self.to_dict(), indent=1, default=str))
        os.replace(partial, path)
        return path

    def failures(self) -> list[dict]:
        return [s for s in self.scenarios if not s.get("correct")]

    def slowest(self, n: int = 5) -> list[dict]:
        timed = [s for s in self.scenarios if s.get("speedup")]
        return sorted(timed, key=lambda s: s["speedup"])[:n]

    def summary(self, limit: int = 5) -> str:
        """A short text for an agent: the verdict, the failures or the slowest scenarios."""
        head = f"{self.judgement} judgement of {self.kernel} on {self.arch}: "
        if not self.correct:
            lines = [head + f"INCORRECT. {self.reason}"]
            bad = self.failures()
            lines += [f"  {s['scenario']}: {s.get('reason')}" for s in bad[:limit]]
            if len(bad) > limit:
                lines.append(f"  ... and {len(bad) - limit} more failing scenarios")
            return "\n".join(lines)
        lines = [head + f"correct on all {len(self.scenarios)} scenarios; geomean speedup over "
                 f"{self.baseline} {self.speedup:.3f}x" if self.speedup else head + "correct (no baseline timing)"]
        for name, g in self.groups.items():
            if g.get("speedup"):
                lines.append(f"  group {name}: {g['speedup']:.3f}x over {g['n']} scenarios")
        lines.append("  slowest: " + ", ".join(f"{s['scenario']} {s['speedup']:.2f}x" for s in self.slowest(limit)))
        return "\n".join(lines)


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def select_scenarios(task: Task, arch: str, quick: bool, pattern: str | None) -> list:
    scenarios = task.scenarios(arch)
    if quick:
        scenarios = [s for s in scenarios if s.quick]
    if pattern:
        scenarios = [s for s in scenarios if fnmatch.fnmatch(s.name, pattern) or fnmatch.fnmatch(s.group, pattern)]
    return scenarios


def gpu_problem(arch: str) -> str | None:
    """Why this machine cannot run `arch` kernels, or None."""
    if arch not in GPU_CAPABILITY:
        return None
    import torch

    if not torch.cuda.is_available():
        return (f"this machine has no usable CUDA GPU, so {arch} kernels cannot be run here; "
                "use --compile-only to build and check the kernel without one")
    major = torch.cuda.get_device_capability(0)[0]
    if major not in GPU_CAPABILITY[arch]:
        name = torch.cuda.get_device_name(0)
        return f"the GPU here ({name}, compute capability {major}.x) is not an {arch} GPU; judge it on one that is"
    return None


def judge(task: str | Path | Task, kernel: str | Path, arch: str, *, quick: bool = False,
          out: str | Path | None = None, scenarios: str | None = None, seed: int | None = None,
          beside: bool | None = None, progress: Callable[[dict], None] | None = None,
          on_start: Callable[[int], None] | None = None, command: str | None = None,
          timeout_s: float | None = None) -> Judgement:
    """Judge `kernel` on `task`'s suite for `arch`. See the module docstring.

    `timeout_s` limits each scenario (the child is killed and the scenario fails as a hang past it);
    `scenarios` is a glob over scenario names and groups; `progress` is called with each result."""
    started = time.perf_counter()
    task = task if isinstance(task, Task) else load_task(task)
    if arch not in task.archs:
        raise TaskError(f"{task.folder}: the task has no {arch} suite; use one of {', '.join(task.archs)}.")
    chosen = select_scenarios(task, arch, quick, scenarios)
    if not chosen:
        raise TaskError(f"{task.folder}: no {arch} scenario matches '{scenarios}'; see `kernelseek scenarios`.")
    verdict = Judgement(task=task.name, kernel=str(kernel), arch=arch, judgement="quick" if quick else "full",
                        correct=False, speedup=None, reason=None, baseline=task.headline_baseline.get(arch),
                        command=command)

    def finish(reason: str | None) -> Judgement:
        verdict.reason = reason
        verdict.wall_s = round(time.perf_counter() - started, 2)
        if out:
            verdict.write(out)
        return verdict

    problem = gpu_problem(arch)
    if problem:
        return finish(problem)
    try:
        build = build_kernel(kernel, arch)
    except BuildError as error:
        return finish(f"build failed: {error}")
    verdict.build, verdict.sha256 = build.to_dict(), build.sha256
    verdict.build.pop("log", None)
    if on_start:
        on_start(len(chosen))
    spec = {"task": str(task.folder), "library": build.library, "arch": arch,
            "seed": seed if seed is not None else random.randrange(1 << 30),
            "budget_s": 0.1 if quick else 0.25, "beside": (not quick) if beside is None else beside,
            "warm_s": 0.5 if quick else 1.5}
    if arch == "cpu":
        spec.update(l2_bytes=4 << 20, max_sets=8)  # a host cache's worth; the GPU child reads its L2 size
    per_scenario = timeout_s or (60 if arch != "cpu" else 30)
    results, ready = run_scenarios(spec, [s.to_dict() for s in chosen], start_timeout_s=180,
                                   scenario_timeout_s=per_scenario, on_result=progress)
    groups = {s.name: s.group for s in chosen}
    for result in results:
        result.setdefault("group", groups[result["scenario"]])
        result.pop("event", None)
    verdict.scenarios = results
    verdict.device = ready.get("device", {})
    verdict.baselines = ready.get("baselines", {})
    by_group: dict[str, list[dict]] = {}
    for result in results:
        by_group.setdefault(result["group"], []).append(result)
    verdict.groups = {name: {"n": len(rs), "correct": sum(bool(r.get("correct")) for r in rs),
                             "speedup": geomean([r.get("speedup") for r in rs])} for name, rs in by_group.items()}
    verdict.correct = all(r.get("correct") for r in results)
    verdict.speedup = geomean([r.get("speedup") for r in results]) if verdict.correct else None
    failed = [r for r in results if not r.get("correct")]
    return finish(None if verdict.correct else
                  f"{len(failed)} of {len(results)} scenarios failed; first: {failed[0]['scenario']}: {failed[0].get('reason')}")
