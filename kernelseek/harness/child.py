"""The child process that runs one candidate over a list of scenarios.

`python -m kernelseek.harness.child SPEC.json` loads the task and the candidate's library, then for
each scenario appends two JSON lines to the spec's results file: `{"event": "start", ...}` before
touching it and `{"event": "result", ...}` after. The parent reads that file to follow progress, to
tell which scenario hung or crashed the process, and to restart after it. A CUDA error poisons the
context, so after one the child writes its result and exits; the parent goes on in a new child.

Per scenario (the rules of DESIGN.md, in order):
  1. check: fresh random inputs, NaN-poisoned outputs, one eager call; status 0, every element
     written, error against the float32 reference within the task's tolerance relative to the
     headline baseline's error on the same inputs (the baseline passes the same check);
  2. time: rotating input sets, each implementation captured in a CUDA graph, replays interleaved;
  3. check the timed call itself: write new values into one set's inputs, poison its outputs,
     replay the graph, check that set;
  4. check again with those values in new allocations (made while the old ones are alive);
  5. the eager call time of each implementation, reported beside.
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import random
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from kernelseek.harness.task import Baseline, Scenario, Task, load_task
from kernelseek.harness.timing import CaptureError, capture, time_by_kernel_durations, time_calls, time_graphs

GPU_ARCHS = ("sm90", "sm100")


class ScenarioFailure(Exception):
    """The candidate is wrong on this scenario; the message says how."""


def _tensors(values: dict[str, Any]) -> list[torch.Tensor]:
    return [v for v in values.values() if isinstance(v, torch.Tensor)]


def _nan_count(outputs: dict[str, Any]) -> int:
    return sum(int(torch.isnan(t).sum()) for t in _tensors(outputs) if t.is_floating_point())


def _set_bytes(*groups: dict[str, Any]) -> int:
    return sum(t.numel() * t.element_size() for group in groups for t in _tensors(group))


def _finite(errors: dict[str, float]) -> dict[str, float | None]:
    return {k: (v if math.isfinite(v) else None) for k, v in errors.items()}


class Judge:
    """Runs the steps above for one scenario. `spec` holds the options the parent chose."""

    def __init__(self, task: Task, library: str, arch: str, spec: dict):
        self.task, self.arch, self.spec = task, arch, spec
        self.gpu = arch in GPU_ARCHS
        self.device = "cuda" if self.gpu else "cpu"
        self.call = task.bind(ctypes.CDLL(library))
        baselines = task.baselines(arch)
        headline = task.headline_baseline.get(arch)
        self.baseline: Baseline | None = next((b for b in baselines if b.name == headline), None)
        self.beside = [b for b in baselines if b.name != headline and b.unavailable is None
                       and spec.get("beside", False)]
        self.rng = random.Random(spec["seed"])

    def sync(self) -> None:
        if self.gpu:
            torch.cuda.synchronize()

    def stream(self) -> int:
        return torch.cuda.current_stream().cuda_stream if self.gpu else 0

    def run_candidate(self, scenario: Scenario, inputs: dict, outputs: dict) -> None:
        status = self.call(scenario, inputs, outputs, self.stream())
        if status != 0:
            raise ScenarioFailure(f"the entry point returned {status} (an error or an unsupported case)")

    @staticmethod
    def poison(outputs: dict) -> None:
        for t in _tensors(outputs):
            if t.is_floating_point():
                t.fill_(float("nan"))

    @staticmethod
    def refill(inputs: dict, values: dict) -> None:
        """Copy new values into existing input tensors, in place (views of a packed tensor too)."""
        for key, tensor in inputs.items():
            if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
                tensor.copy_(values[key])

    def check(self, scenario: Scenario, inputs: dict, outputs: dict, what: str,
              reference: tuple[dict, dict, str] | None = None) -> dict:
        """Compare outputs already computed from `inputs` with the reference; return the errors.
        `reference` (reference, allowed errors, their source) reuses one computed for the same values."""
        self.sync()
        unwritten = _nan_count(outputs)
        if unwritten:
            raise ScenarioFailure(f"{what}: {unwritten} output elements were left unwritten or are NaN")
        if reference is None:
            expected = self.task.reference(scenario, inputs)
            allowed, source = self.allowed_errors(scenario, inputs, expected)
        else:
            expected, allowed, source = reference
        errors = self.task.errors(scenario, outputs, expected)
        why = self.task.within_tolerance(errors, allowed)
        if why:
            raise ScenarioFailure(f"{what}: {why} (allowed relative to {source})")
        return {"errors": _finite(errors), "allowed": _finite(allowed), "relative_to": source}

    def allowed_errors(self, scenario: Scenario, inputs: dict, reference: dict) -> tuple[dict, str]:
        if self.baseline is None or self.baseline.unavailable:
            return self.task.fallback_errors(scenario, inputs, reference), "the low-precision reference"
        base_out = self.baseline.run(scenario, inputs)
        self.sync()
        if _nan_count(base_out):
            raise RuntimeError(f"the baseline {self.baseline.name} wrote NaN on this scenario")
        return self.task.errors(scenario, base_out, reference), f"{self.baseline.name}'s error"

    def scenario(self, scenario: Scenario) -> dict:
        task, seed = self.task, self.rng.randrange(1 << 30)
        result: dict[str, Any] = {"scenario": scenario.name, "group": scenario.group, "correct": False}
        # 1. check on fresh inputs
        inputs = task.make_inputs(scenario, seed, self.device)
        outputs = task.new_outputs(scenario, inputs, self.device)
        self.run_candidate(scenario, inputs, outputs)
        result["check"] = self.check(scenario, inputs, outputs, "first check")
        del outputs
        # 2. time against the baseline over rotating input sets
        set_bytes = max(1, _set_bytes(inputs))
        l2 = self.spec.get("l2_bytes", 50 << 20)
        count = max(1, min(self.spec.get("max_sets", 32), math.ceil(3 * l2 / set_bytes)))
        sets = [task.make_inputs(scenario, seed + 1 + i, self.device) for i in range(count)]
        outs = [task.new_outputs(scenario, s, self.device) for s in sets]
        impls = {"candidate": lambda: [self.run_candidate(scenario, s, o) for s, o in zip(sets, outs, strict=True)]}
        baselines = [b for b in (self.baseline, *self.beside) if b is not None and b.unavailable is None
                     and (b.supports is None or b.supports(scenario))]
        for b in baselines:
            impls[b.name] = (lambda b=b: [b.run(scenario, s) for s in sets])
        for name, fn in list(impls.items()):
            try:
                fn()  # each implementation's first call happens outside the capture
            except RuntimeError as error:
                if name == "candidate" or name == getattr(self.baseline, "name", None):
                    raise
                # a baseline timed only beside the headline may decline a shape; that costs the candidate nothing
                result.setdefault("beside_skipped", {})[name] = str(error).splitlines()[0][:200]
                del impls[name]
                self.sync()
        times, timing_mode = self._time(impls, count, result)
        # 3. the timed call itself, on new values in the same buffers: a kernel that skips work after
        #    its first call, or answers from a cache keyed on pointers, fails here
        j = self.rng.randrange(count)
        new_values = task.make_inputs(scenario, seed + 5_000, self.device)
        self.refill(sets[j], new_values)
        self.poison(outs[j])
        if self.gpu:
            self._graphs["candidate"].replay()
        else:
            impls["candidate"]()
        self.sync()
        # 4. the same new values in new allocations, made while the old ones are alive so that the
        #    addresses differ (torch's allocator would otherwise hand the freed block back)
        fresh_outputs = task.new_outputs(scenario, new_values, self.device)
        self.run_candidate(scenario, new_values, fresh_outputs)
        reference = task.reference(scenario, new_values)
        allowed, source = self.allowed_errors(scenario, new_values, reference)
        self.check(scenario, sets[j], outs[j], "the timed call, on new values in the same buffers",
                   reference=(reference, allowed, source))
        self.check(scenario, new_values, fresh_outputs, "the check after timing, on new buffers",
                   reference=(reference, allowed, source))
        # 5. eager call time, beside
        eager = time_calls({name: (lambda fn=fn: fn()) for name, fn in impls.items()}, count,
                           budget_s=0.05, synchronize=self.sync, min_trials=3, max_trials=10)
        self._graphs = {}
        flops = task.flops(scenario)
        cand = times["candidate"].median_s
        result.update(correct=True, timing=timing_mode, sets=count, trials=times["candidate"].trials,
                      time_s={k: v.median_s for k, v in times.items()},
                      spread={k: round(v.spread, 4) for k, v in times.items()},
                      eager_s={k: v.median_s for k, v in eager.items()},
                      tflops={k: flops / v.median_s / 1e12 for k, v in times.items()})
        if self.baseline is not None and self.baseline.name in times:
            result["speedup"] = times[self.baseline.name].median_s / cand
        result["speedup_beside"] = {b.name: times[b.name].median_s / cand for b in self.beside if b.name in times}
        return result

    def _time(self, impls: dict, count: int, result: dict) -> tuple[dict, str]:
        budget = self.spec.get("budget_s", 0.2)
        if not self.gpu:
            return time_calls(impls, count, budget_s=budget, clock=time.thread_time), "thread CPU time"
        self._graphs = {}
        uncapturable: dict[str, str] = {}
        for name, fn in impls.items():
            try:
                self._graphs[name] = capture(fn)
            except CaptureError as error:
                if name == "candidate":
                    raise ScenarioFailure(
                        f"the launcher is not capture-safe after its first call ({error}); a launcher must "
                        "not allocate, synchronize or copy between host and device on later calls") from None
                if name == getattr(self.baseline, "name", None):
                    uncapturable[name] = str(error)
                else:
                    result.setdefault("beside_skipped", {})[name] = f"not capturable: {error}"
        times = time_graphs(self._graphs, count, budget_s=budget)
        for name, why in uncapturable.items():
            times[name] = time_by_kernel_durations(impls[name], count)
            result["baseline_timing"] = f"{name}: its kernels' durations from the profiler (not capturable: {why})"
        return times, "cuda graph replay"


def device_info(arch: str) -> dict:
    info: dict[str, Any] = {"arch": arch, "torch": torch.__version__, "python": sys.version.split()[0]}
    if arch in GPU_ARCHS and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(name=props.name, capability=f"{props.major}.{props.minor}", sms=props.multi_processor_count,
                    l2_bytes=getattr(props, "L2_cache_size", 50 << 20), cuda=torch.version.cuda)
        try:
            q = "clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,driver_version"
            out = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=10).stdout.strip().splitlines()
            info["clocks"] = dict(zip(q.split(","), [s.strip() for s in out[0].split(",")], strict=False)) if out else {}
        except (OSError, subprocess.TimeoutExpired):
            info["clocks"] = {}
    else:
        import platform
        info.update(name=platform.processor() or platform.machine(), threads=torch.get_num_threads())
    return info


def warm_clocks(seconds: float) -> None:
    """Bring the GPU's clocks up before anything is timed."""
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(10):
            a @ a
        torch.cuda.synchronize()


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    results = open(spec["results"], "a", buffering=1, encoding="utf-8")

    def emit(**event: Any) -> None:
        results.write(json.dumps(event, default=str) + "\n")
        results.flush()
        os.fsync(results.fileno())

    arch = spec["arch"]
    torch.manual_seed(spec["seed"])
    if arch == "cpu":
        torch.set_num_threads(1)  # the candidate is single-threaded; so is its baseline
    task = load_task(spec["task"])
    if arch in GPU_ARCHS:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        warm_clocks(spec.get("warm_s", 1.0))
        spec.setdefault("l2_bytes", getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20))
    judge = Judge(task, spec["library"], arch, spec)
    emit(event="ready", device=device_info(arch),
         baselines={b.name: (b.unavailable or "available", b.info) for b in task.baselines(arch)})
    for entry in spec["scenarios"]:
        scenario = Scenario(**entry)
        name = scenario.name
        emit(event="start", scenario=name)
        started = time.perf_counter()
        fatal = False
        try:
            result = judge.scenario(scenario)
        except ScenarioFailure as failure:
            result = {"scenario": name, "group": scenario.group, "correct": False, "reason": str(failure)}
        except torch.cuda.OutOfMemoryError as error:
            result = {"scenario": name, "group": scenario.group, "correct": False,
                      "reason": f"out of GPU memory: {str(error).splitlines()[0]}"}
        except RuntimeError as error:
            text = str(error).splitlines()[0] if str(error) else type(error).__name__
            fatal = "CUDA" in text or "cuda" in text or "illegal" in text.lower()
            reason = f"CUDA error: {text}" if fatal else f"harness error: {text}"
            result = {"scenario": name, "group": scenario.group, "correct": False, "reason": reason,
                      "traceback": traceback.format_exc(limit=4)}
        result["wall_s"] = round(time.perf_counter() - started, 3)
        emit(event="result", **result)
        if fatal:
            return 3  # the CUDA context is unusable after an error; the parent continues in a new child
    emit(event="done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
