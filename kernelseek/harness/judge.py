"""`judge`: guard, build, run every scenario in a child process, and summarize.

A candidate is correct only if every scenario of the suite is; its speedup is the geometric mean over
the suite of baseline time / candidate time. `judge` never raises for a bad kernel: a compile error, a
guard violation, a crash, a hang or a wrong answer gives `correct=False` and the reason.

The suite is a yardstick, not the target: with `holdout=N` the judgement also draws N scenarios from
the task's scenario distribution (`Task.holdout(arch, N, seed)`), runs them beside the suite and
reports them apart, in `Judgement.holdout` ({n, seed, correct, speedup, groups}); each of their results
carries `"holdout": true`. The headline speedup and groups stay the suite's; `correct` needs every
scenario, suite and hold-out. The seed is recorded, so the same sample can be judged again.
"""

from __future__ import annotations

import fnmatch
import math
import os
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelseek.files import atomic_write_json
from kernelseek.harness.build import BuildError, build_kernel
from kernelseek.harness.device import gpu_problem
from kernelseek.harness.records import derive_floor
from kernelseek.harness.runner import JudgementInterrupted, run_scenarios
from kernelseek.harness.sanitize import SanitizerUnavailable, sanitize_problem
from kernelseek.harness.sanitize import sanitize as run_sanitizer
from kernelseek.harness.task import Task, TaskError, load_task


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
    write_error: str | None = None  # why --out could not be written, if it could not
    holdout: dict | None = None  # {n, seed, correct (count), speedup (geomean or None), groups}, or None
    # the task's memory floor, when it states one: {copy_bandwidth_Bps, fraction (the suite's geomean of
    # floor / candidate time, when correct), holdout_fraction}; per scenario floor_s and floor_fraction
    floor: dict | None = None
    sanitizer: dict | None = None  # the sanitizer gate's report (sanitize.SanitizerReport.to_dict()), if run

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def write(self, path: str | Path) -> Path:
        """Write the JSON atomically (a crash never leaves half a report)."""
        return atomic_write_json(path, self.to_dict())

    def suite_results(self) -> list[dict]:
        return [s for s in self.scenarios if not s.get("holdout")]

    def holdout_results(self) -> list[dict]:
        return [s for s in self.scenarios if s.get("holdout")]

    def failures(self, holdout: bool = False) -> list[dict]:
        """The failing scenarios of the suite (of the hold-out with holdout=True)."""
        pool = self.holdout_results() if holdout else self.suite_results()
        return [s for s in pool if not s.get("correct")]

    def slowest(self, n: int = 5, holdout: bool = False) -> list[dict]:
        pool = self.holdout_results() if holdout else self.suite_results()
        timed = [s for s in pool if s.get("speedup")]
        return sorted(timed, key=lambda s: s["speedup"])[:n]

    def holdout_line(self, shapes: bool = True) -> str | None:
        """'hold-out (24 scenarios, seed 1): 24/24 correct, geomean 0.81x'; without `shapes` the seed is
        left out (it would let the sample be drawn again)."""
        h = self.holdout
        if not h or not h.get("n"):
            return None
        where = f"{h['n']} scenarios, seed {h['seed']}" if shapes else f"{h['n']} unseen scenarios, drawn fresh"
        speed = f", geomean {h['speedup']:.3f}x" if h.get("speedup") else ""
        return f"hold-out ({where}): {h['correct']}/{h['n']} correct{speed}"

    def failure_reason(self, shapes: bool = True) -> str | None:
        """Why the judgement is incorrect when scenarios failed: the count, then the first failure, a
        suite one before a hold-out one; without `shapes`, a hold-out failure is counted, not named."""
        suite_bad, held_bad = self.failures(), self.failures(holdout=True)
        if not suite_bad and not held_bad:
            return None
        total = len(suite_bad) + len(held_bad)
        count = f"{total} of {len(self.scenarios)} scenarios failed"
        if self.holdout_results():
            count += f" ({len(held_bad)} of {len(self.holdout_results())} hold-out)"
        if suite_bad:
            return f"{count}; first: {suite_bad[0]['scenario']}: {suite_bad[0].get('reason')}"
        if shapes:
            return f"{count}; first: {held_bad[0]['scenario']}: {held_bad[0].get('reason')}"
        return f"{count}; the hold-out's shapes and failure details are withheld"

    def floor_line(self) -> str | None:
        """'memory floor (bytes moved / copy bandwidth 4310 GB/s): 0.874 of it reached (geomean)'."""
        f = self.floor
        if not f or not f.get("fraction"):
            return None
        held = f", hold-out {f['holdout_fraction']:.3f}" if f.get("holdout_fraction") else ""
        return (f"memory floor (bytes moved / copy bandwidth {f['copy_bandwidth_Bps'] / 1e9:.0f} GB/s): "
                f"{f['fraction']:.3f} of it reached (geomean){held}")

    def summary(self, limit: int = 5, holdout_shapes: bool = True) -> str:
        """A short text for an agent: the verdict, the failures or the slowest scenarios, and the hold-out
        apart. With `holdout_shapes=False` (what the loop's worker is shown) the hold-out is reported only
        as counts and a geomean: no scenario names, shapes, failure details or seed."""
        head = f"{self.judgement} judgement of {self.kernel} on {self.arch}: "
        held = self.holdout_line(shapes=holdout_shapes)
        if not self.correct:
            reason = self.failure_reason(holdout_shapes) if self.scenarios else self.reason
            lines = [head + f"INCORRECT. {reason or self.reason}"]
            bad = self.failures()
            lines += [f"  {s['scenario']}: {s.get('reason')}" for s in bad[:limit]]
            if len(bad) > limit:
                lines.append(f"  ... and {len(bad) - limit} more failing scenarios")
            if held:
                lines.append("  " + held)
                held_bad = self.failures(holdout=True)
                if holdout_shapes:
                    lines += [f"  {s['scenario']}: {s.get('reason')}" for s in held_bad[:limit]]
                elif held_bad:
                    lines.append(f"  {len(held_bad)} hold-out scenarios failed: the kernel is wrong on shapes the "
                                 "suite does not have (which ones is withheld)")
            if self.sanitizer:
                lines.append(sanitizer_lines(self.sanitizer))
            return "\n".join(lines)
        text = self._summary_correct(head, self.suite_results(), held, limit, holdout_shapes)
        return text + ("\n" + sanitizer_lines(self.sanitizer) if self.sanitizer else "")

    def _summary_correct(self, head: str, suite: list[dict], held: str | None, limit: int, holdout_shapes: bool) -> str:
        lines = [head + f"correct on all {len(suite)} scenarios; geomean speedup over "
                 f"{self.baseline} {self.speedup:.3f}x" if self.speedup else head + "correct (no baseline timing)"]
        for name, g in self.groups.items():
            if g.get("speedup"):
                floor = f", {g['floor_fraction']:.2f} of the memory floor" if g.get("floor_fraction") else ""
                lines.append(f"  group {name}: {g['speedup']:.3f}x over {g['n']} scenarios{floor}")
        if self.floor_line():
            lines.append("  " + self.floor_line())
        lines.append("  slowest: " + ", ".join(f"{s['scenario']} {s['speedup']:.2f}x" for s in self.slowest(limit)))
        if held:
            lines.append("  " + held)
            if holdout_shapes and self.slowest(limit, holdout=True):
                lines.append("  hold-out slowest: " + ", ".join(f"{s['scenario']} {s['speedup']:.2f}x"
                                                               for s in self.slowest(limit, holdout=True)))
        return "\n".join(lines)


def sanitizer_lines(report: dict) -> str:
    """The sanitizer gate's verdict in a few lines, from its report dict."""
    head = "  sanitizer gate: " + ("passed" if report.get("passed") else "FAILED")
    lines = [head + f" ({len(report.get('scenarios') or [])} scenarios, {report.get('wall_s', 0):.0f} s)"]
    for tool, v in (report.get("tools") or {}).items():
        state = "clean" if v.get("status") == "clean" else f"{str(v.get('status')).upper()}: {v.get('reason')}"
        lines.append(f"    {tool}: {state}")
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


def select_holdout(task: Task, arch: str, n: int, seed: int | None, chosen: list) -> tuple[list, int | None]:
    """The hold-out sample to judge after `chosen` (the suite's scenarios after --quick/--scenarios), and
    its seed (a fresh one when none is given). Names must not collide with the chosen ones."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise TaskError(f"holdout={n!r}: the hold-out size must be a whole number of scenarios, 0 or more "
                        "(e.g. --holdout 24).")
    if n == 0:
        return [], None
    seed = random.randrange(1 << 30) if seed is None else seed
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise TaskError(f"holdout seed {seed!r} must be a whole number, 0 or more (e.g. --holdout-seed 1).")
    sample = task.holdout(arch, n, seed)
    names = [s.name for s in chosen] + [s.name for s in sample]
    if len(sample) != n or len(set(names)) != len(names):
        raise TaskError(f"{task.folder}: Task.holdout({arch!r}, {n}, {seed}) must return {n} scenarios whose names "
                        "are unique and not the suite's; put the seed and the index in each name.")
    return sample, seed


def judge(task: str | Path | Task, kernel: str | Path, arch: str, *, quick: bool = False,
          out: str | Path | None = None, scenarios: str | None = None, seed: int | None = None,
          beside: bool = False, progress: Callable[[dict], None] | None = None,
          on_start: Callable[[int], None] | None = None, command: str | None = None,
          timeout_s: float | None = None, holdout: int = 0, holdout_seed: int | None = None,
          sanitize: dict | None = None) -> Judgement:
    """Judge `kernel` on `task`'s suite for `arch`. See the module docstring.

    `timeout_s` limits each scenario (the child is killed and the scenario fails as a hang past it);
    `scenarios` is a glob over scenario names and groups; `progress` is called with each result;
    `holdout` scenarios drawn with `holdout_seed` (fresh when None) are judged after the chosen ones.
    `sanitize`: also run the sanitizer gate (sanitize.py) after the scenarios, with these keyword arguments
    of `sanitize.sanitize` ({} for its defaults); a finding makes the judgement incorrect. Raises
    SanitizerUnavailable at once when the gate cannot run here."""
    started = time.perf_counter()
    if sanitize is not None:
        problem = None if sanitize.get("source") else sanitize_problem(arch)
        if problem:
            raise SanitizerUnavailable(problem)
    task = task if isinstance(task, Task) else load_task(task)
    if arch not in task.archs:
        raise TaskError(f"{task.folder}: the task has no {arch} suite; use one of {', '.join(task.archs)}.")
    if sanitize is not None:
        task.sanitizer_scenarios(arch)  # a task without a sanitizer suite is refused before anything runs
    chosen = select_scenarios(task, arch, quick, scenarios)
    if not chosen:
        raise TaskError(f"{task.folder}: no {arch} scenario matches '{scenarios}'; see `kernelseek scenarios`.")
    held, holdout_seed = select_holdout(task, arch, holdout, holdout_seed, chosen)
    chosen = chosen + held
    verdict = Judgement(task=task.name, kernel=str(kernel), arch=arch, judgement="quick" if quick else "full",
                        correct=False, speedup=None, reason=None, baseline=task.headline_baseline.get(arch),
                        command=command)
    if held:
        verdict.holdout = {"n": len(held), "seed": holdout_seed, "correct": 0, "speedup": None, "groups": {}}

    if out:
        check_out_path(out)

    def finish(reason: str | None) -> Judgement:
        verdict.reason = reason
        verdict.wall_s = round(time.perf_counter() - started, 2)
        if out:
            try:
                verdict.write(out)
            except OSError as error:
                verdict.write_error = f"the report could not be written to {out}: {error.strerror or error}"
        return verdict

    problem = gpu_problem(arch)
    if problem:
        return finish(problem)
    try:
        _judge_built(task, kernel, arch, chosen, held, verdict, quick=quick, seed=seed, beside=beside,
                     progress=progress, on_start=on_start, timeout_s=timeout_s)
        if sanitize is not None:
            report = run_sanitizer(task, kernel, arch, **sanitize)
            verdict.sanitizer = report.to_dict()
            if not report.passed:
                verdict.correct, verdict.speedup = False, None
        return finish(verdict.failure_reason() or (verdict.sanitizer or {}).get("reason"))
    except BuildError as error:
        return finish(f"build failed: {error}")
    except JudgementInterrupted:
        raise
    except Exception as error:  # noqa: BLE001 - whatever broke while judging, this candidate is not correct
        verdict.correct, verdict.speedup = False, None
        return finish(f"harness error while judging: {type(error).__name__}: {str(error)[:300]}")


def check_out_path(out: str | Path) -> None:
    """Refuse a report path that cannot be written, before any time is spent judging."""
    path = Path(out)
    if path.is_dir():
        raise TaskError(f"--out {out}: is a folder; give a file name, e.g. {path / 'report.json'}.")
    parent = path.parent if str(path.parent) else Path(".")
    existing = next((p for p in (parent, *parent.parents) if p.exists()), Path("."))
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise TaskError(f"--out {out}: {existing} is not a writable folder; choose a path you can write.")


def _judge_built(task: Task, kernel: str | Path, arch: str, chosen: list, held: list, verdict: Judgement, *,
                 quick: bool, seed: int | None, beside: bool, progress: Callable[[dict], None] | None,
                 on_start: Callable[[int], None] | None, timeout_s: float | None) -> None:
    build = build_kernel(kernel, arch, entry_point=task.entry_point or None,
                         forbidden_libraries=task.forbidden_libraries)
    verdict.build, verdict.sha256 = build.to_dict(), build.sha256
    verdict.build.pop("log", None)
    if on_start:
        on_start(len(chosen))
    spec = {"task": str(task.folder), "library": build.library, "arch": arch,
            "seed": seed if seed is not None else random.randrange(1 << 30),
            "budget_s": 0.1 if quick else 0.25, "beside": beside,
            "warm_s": 0.5 if quick else 1.5}
    if arch == "cpu":
        spec.update(l2_bytes=4 << 20, max_sets=8)  # a host cache's worth; the GPU child reads its L2 size
    per_scenario = timeout_s or (60 if arch != "cpu" else 30)
    results, ready = run_scenarios(spec, [s.to_dict() for s in chosen], start_timeout_s=180,
                                   scenario_timeout_s=per_scenario, headline=task.headline_baseline.get(arch),
                                   flops={s.name: task.flops(s) for s in chosen}, on_result=progress)
    groups = {s.name: s.group for s in chosen}
    held_names = {s.name for s in held}
    for result in results:
        result.setdefault("group", groups[result["scenario"]])
        result.pop("event", None)
        if result["scenario"] in held_names:
            result["holdout"] = True
    bandwidth = ready.get("copy_bandwidth_Bps")
    by_name = {s.name: s for s in chosen}
    for result in results:
        derive_floor(result, task.bytes_moved(by_name[result["scenario"]]), bandwidth)
    verdict.scenarios = results
    verdict.device = ready.get("device", {})
    verdict.baselines = ready.get("baselines", {})
    suite, held_results = verdict.suite_results(), verdict.holdout_results()
    verdict.groups = group_table(suite)
    verdict.correct = all(r.get("correct") for r in results)
    verdict.speedup = geomean([r.get("speedup") for r in suite]) if verdict.correct else None
    if held:
        held_correct = all(r.get("correct") for r in held_results) and len(held_results) == len(held)
        verdict.holdout.update(correct=sum(bool(r.get("correct")) for r in held_results),
                               speedup=geomean([r.get("speedup") for r in held_results]) if held_correct else None,
                               groups=group_table(held_results))
    if bandwidth and any("floor_s" in r for r in results):
        verdict.floor = {"copy_bandwidth_Bps": bandwidth,
                         "fraction": floor_geomean(suite) if verdict.correct else None,
                         "holdout_fraction": floor_geomean(held_results) if held and verdict.correct else None}


def floor_geomean(results: list[dict]) -> float | None:
    """The geometric mean of the candidate's fraction of the memory floor over `results`."""
    return geomean([r["floor_fraction"]["candidate"] for r in results if r.get("floor_fraction")])


def group_table(results: list[dict]) -> dict[str, dict]:
    by_group: dict[str, list[dict]] = {}
    for result in results:
        by_group.setdefault(result["group"], []).append(result)
    table = {name: {"n": len(rs), "correct": sum(bool(r.get("correct")) for r in rs),
                    "speedup": geomean([r.get("speedup") for r in rs])} for name, rs in by_group.items()}
    for name, rs in by_group.items():
        if any(r.get("floor_fraction") for r in rs):
            table[name]["floor_fraction"] = floor_geomean(rs)
    return table
