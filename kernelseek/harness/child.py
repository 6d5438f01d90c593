"""The child process that runs one candidate over a list of scenarios.

`python -m kernelseek.harness.child SPEC.json FD` loads the task and the candidate's library, then for
each scenario writes two JSON lines to the inherited pipe FD: `{"event": "start", ...}` before
touching it and `{"event": "result", ...}` after, with raw measurements only (errors, times); the
parent validates every line and derives the speedups. The pipe is no file the candidate could find
and write (its host code may not open files or make system calls: guard.py). A CUDA error poisons the
context, so after one the child writes its result and exits; the parent goes on in a new child.

Every tensor the candidate sees lies inside guard bands (canary.py); the reference and the baseline's
error are computed before the candidate sees the inputs, and a copy taken then must still equal the
inputs afterwards. Per scenario (the rules of DESIGN.md, in order):
  1. check: fresh random inputs, NaN-poisoned outputs, one eager call; status 0, guard bands and
     inputs untouched, every element written, error against the float32 reference within the task's
     tolerance relative to the headline baseline's error on the same inputs;
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
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from kernelseek.harness.canary import Guarded
from kernelseek.harness.task import Baseline, Scenario, Task, load_task
from kernelseek.harness.timing import (
    CaptureError,
    capture,
    copy_bandwidth,
    time_by_kernel_durations,
    time_calls,
    time_graphs,
)

GPU_ARCHS = ("sm90", "sm100")


class ScenarioFailure(Exception):
    """The candidate is wrong on this scenario; the message says how."""


def _tensors(values: dict[str, Any]) -> list[torch.Tensor]:
    return [v for v in values.values() if isinstance(v, torch.Tensor)]


def _nan_count(outputs: dict[str, Any]) -> int:
    return sum(int(torch.isnan(t).sum()) for t in _tensors(outputs) if t.is_floating_point())


def _set_bytes(*groups: dict[str, Any]) -> int:
    return sum(t.numel() * t.element_size() for group in groups for t in _tensors(group))


def _tensor_items(values: dict[str, Any]) -> list[tuple[str, torch.Tensor]]:
    return [(k, v) for k, v in values.items() if isinstance(v, torch.Tensor)]


def _copies(values: dict[str, Any]) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in _tensor_items(values)}


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

    def expect(self, scenario: Scenario, inputs: dict) -> tuple[dict, dict, str]:
        """The reference and the allowed errors for `inputs`, computed before the candidate sees them."""
        expected = self.task.reference(scenario, inputs)
        allowed, source = self.allowed_errors(scenario, inputs, expected)
        return expected, allowed, source

    def check(self, scenario: Scenario, inputs: Guarded, pristine: dict, outputs: Guarded, what: str,
              reference: tuple[dict, dict, str]) -> dict:
        """Compare the outputs the candidate computed from `inputs` with `reference`; return the errors.
        The inputs must still equal `pristine`, and no guard band may have been written."""
        self.sync()
        for guarded in (outputs, inputs):
            breach = guarded.breach()
            if breach:
                raise ScenarioFailure(f"{what}: the candidate {breach}")
        for key, tensor in _tensor_items(inputs.values):
            if not torch.equal(tensor, pristine[key]):
                raise ScenarioFailure(f"{what}: the candidate changed its input {key} (inputs are read-only)")
        unwritten = _nan_count(outputs.values)
        if unwritten:
            raise ScenarioFailure(f"{what}: {unwritten} output elements were left unwritten or are NaN")
        expected, allowed, source = reference
        errors = self.task.errors(scenario, outputs.values, expected)
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
            raise RuntimeError(f"the baseline {self.baseline.name} wrote NaN on this scenario "
                               "(before the candidate ran: the baseline's own failure)")
        return self.task.errors(scenario, base_out, reference), f"{self.baseline.name}'s error"

    def inputs(self, scenario: Scenario, seed: int) -> Guarded:
        return Guarded(self.task.make_inputs(scenario, seed, self.device), pattern=seed)

    def outputs(self, scenario: Scenario, inputs: Guarded, seed: int) -> Guarded:
        return Guarded(self.task.new_outputs(scenario, inputs.values, self.device), pattern=seed + 1)

    def scenario(self, scenario: Scenario) -> dict:
        seed = self.rng.randrange(1 << 30)
        result: dict[str, Any] = {"scenario": scenario.name, "group": scenario.group, "correct": False}
        # 1. check on fresh inputs; the reference and the baseline see them before the candidate does
        inputs = self.inputs(scenario, seed)
        reference = self.expect(scenario, inputs.values)
        pristine = _copies(inputs.values)
        outputs = self.outputs(scenario, inputs, seed)
        self.run_candidate(scenario, inputs.values, outputs.values)
        result["check"] = self.check(scenario, inputs, pristine, outputs, "first check", reference)
        del outputs, reference
        # 2. time against the baseline over rotating input sets
        set_bytes = max(1, _set_bytes(inputs.values))
        l2 = self.spec.get("l2_bytes", 50 << 20)
        count = max(1, min(self.spec.get("max_sets", 32), math.ceil(3 * l2 / set_bytes)))
        del inputs, pristine
        sets = [self.inputs(scenario, seed + 1 + i) for i in range(count)]
        outs = [self.outputs(scenario, s, seed + 1 + i) for i, s in enumerate(sets)]
        impls = {"candidate": lambda: [self.run_candidate(scenario, s.values, o.values)
                                       for s, o in zip(sets, outs, strict=True)]}
        baselines = [b for b in (self.baseline, *self.beside) if b is not None and b.unavailable is None
                     and (b.supports is None or b.supports(scenario))]
        for b in baselines:
            impls[b.name] = (lambda b=b: [b.run(scenario, s.values) for s in sets])
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
        new_values = self.inputs(scenario, seed + 5_000)
        reference = self.expect(scenario, new_values.values)
        pristine = _copies(new_values.values)
        self.refill(sets[j].values, new_values.values)
        self.poison(outs[j].values)
        if self.gpu:
            self._graphs["candidate"].replay()
        else:
            impls["candidate"]()
        self.sync()
        # 4. the same new values in new allocations, made while the old ones are alive so that the
        #    addresses differ (torch's allocator would otherwise hand the freed block back)
        fresh_outputs = self.outputs(scenario, new_values, seed + 5_000)
        self.run_candidate(scenario, new_values.values, fresh_outputs.values)
        self.check(scenario, sets[j], pristine, outs[j], "the timed call, on new values in the same buffers",
                   reference)
        self.check(scenario, new_values, pristine, fresh_outputs, "the check after timing, on new buffers",
                   reference)
        for i, (s, o) in enumerate(zip(sets, outs, strict=True)):
            breach = o.breach() or s.breach()
            if breach:
                raise ScenarioFailure(f"timing, input set {i}: the candidate {breach}")
        # 5. eager call time, beside
        eager = time_calls({name: (lambda fn=fn: fn()) for name, fn in impls.items()}, count,
                           budget_s=0.05, synchronize=self.sync, min_trials=3, max_trials=10)
        self._graphs = {}
        # raw measurements only: the parent derives speedups and rates from them
        result.update(correct=True, timing=timing_mode, sets=count, trials=times["candidate"].trials,
                      time_s={k: v.median_s for k, v in times.items()},
                      spread={k: round(v.spread, 4) for k, v in times.items()},
                      eager_s={k: v.median_s for k, v in eager.items()})
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


def main(spec_path: str, channel_fd: int) -> int:
    spec = json.loads(Path(spec_path).read_text())
    os.set_inheritable(channel_fd, False)
    # Python ignores SIGXFSZ; restored, a candidate that prints past the parent's output limit is stopped
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)

    def emit(**event: Any) -> None:
        line = (json.dumps(event, default=str) + "\n").encode()
        while line:
            line = line[os.write(channel_fd, line):]

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
    # the copy bandwidth the task's memory floor is measured against, before any candidate code is here
    floors = any(task.bytes_moved(Scenario(**entry)) for entry in spec["scenarios"])
    bandwidth = copy_bandwidth("cuda" if arch in GPU_ARCHS else "cpu") if floors else None
    # ready is sent before the candidate's library is loaded, so none of its code has run yet
    emit(event="ready", device=device_info(arch), copy_bandwidth_Bps=bandwidth,
         baselines={b.name: (b.unavailable or "available", b.info) for b in task.baselines(arch)})
    judge = Judge(task, spec["library"], arch, spec)
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
        except Exception as error:  # noqa: BLE001 - whatever broke, this scenario fails with the reason
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
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
