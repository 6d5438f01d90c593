"""The checker: the judging process that decides whether a candidate is correct, and never runs its code.

`python -m kernelseek.harness.child SPEC.json FD` loads the task (not the candidate's library) and
reports to the parent on the inherited pipe FD: `ready`, then for each scenario a `start` before
touching it and a `result` after, with raw measurements only (errors, times); the parent validates
every line and derives the speedups. The candidate's code runs in a second process, the host
(host.py), which this one starts: the host loads the library, sealed so that nothing the candidate may
call can write to its socket, and holds no descriptor of this pipe. Every input and output the
candidate touches is this process's memory, mapped by the host (shared.py): the references, the
baselines' errors, the guard bands and the verdicts are computed here, on what the candidate wrote.
The host reports only what cannot be seen from here (the entry point's status, its times), and each
time is a claim: one below the physical floor (floors.py) fails the scenario. If the host dies or
errs fatally, this process reports the scenario and exits; the parent goes on in a new pair.

Per scenario (the rules of docs/design.md, in order):
  1. check: fresh random inputs inside guard bands (canary.py), NaN-poisoned outputs, one call; status
     0, guard bands and inputs untouched, every element written, error against the float32 reference
     within the task's tolerance relative to the headline baseline's error on the same inputs (both
     computed before the candidate saw the inputs);
  2. time: rotating input sets, each implementation captured in a CUDA graph, replays interleaved;
     before every replay the inputs get new values and the outputs are poisoned, after it no poison
     may be left (host.py); at two trials picked here, one set gets values of this process's making
     and the timed call's outputs are checked as in 1; then repeated calls on unchanged inputs must
     each write their outputs (a memo that skips any of them leaves poison);
  3. check again with the last checked values in new allocations (made while the old ones are alive);
  4. the speed of light: the candidate's time must not be below the memory or compute floor;
  5. the eager call time of each implementation, reported beside.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from kernelseek.harness.canary import Guarded, attach
from kernelseek.harness.floors import outlived, peak_flops, speed_of_light
from kernelseek.harness.runner import OUTPUT_LIMIT
from kernelseek.harness.shared import Arena, give_back_cache
from kernelseek.harness.task import Baseline, Scenario, Task, load_task
from kernelseek.harness.timing import copy_bandwidth
from kernelseek.harness.wire import Peer, WireError, expect_reply, number, pair
from kernelseek.procs import exit_text, last_words

GPU_ARCHS = ("sm90", "sm100")
VERIFIED_TRIALS = 2  # timed calls per scenario whose outputs this process checks on values of its own
REPEATS = 17  # repeated calls on unchanged inputs: enough to catch a memo that skips one in sixteen


class ScenarioFailure(Exception):
    """The candidate is wrong on this scenario; the message says how."""


class HostGone(Exception):
    """The candidate's process died, hung up or broke the protocol; the message says how. Fatal here."""


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


class Host:
    """The candidate's process, seen from here: start it, give it orders, read its replies."""

    def __init__(self, spec: dict, folder: Path, number_: int):
        mine, theirs = pair()
        self.log_path = folder / f"host-{number_}.log"
        spec_path = folder / f"host-spec-{number_}.json"
        spec_path.write_text(json.dumps(spec))
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "kernelseek.harness.host", str(spec_path), str(theirs.fileno())],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, pass_fds=(theirs.fileno(),),
                preexec_fn=_die_with_parent, env=host_environment())
        theirs.close()
        self.peer = Peer(mine)
        self.ask_reply("ready", {})

    def order(self, message: dict, fds: list[int] = ()) -> None:
        try:
            self.peer.order(message, list(fds))
        except OSError as error:
            raise HostGone(self._gone(f"stopped listening ({error})")) from None

    def reply(self) -> dict:
        try:
            message = self.peer.take_reply()
        except WireError as error:
            raise HostGone(self._gone(f"sent no reply ({error})")) from None
        if message.get("reply") == "error":
            text = str(message.get("text"))[:600]
            if message.get("fatal"):
                raise HostGone(f"CUDA error: {text}")
            raise RuntimeError(f"in the candidate's process: {text}")
        return message

    def ask_reply(self, kind: str, fields: dict, message: dict | None = None, fds: list[int] = ()) -> dict:
        if message is not None:
            self.order(message, fds)
        try:
            return expect_reply(self.reply(), kind, fields)
        except WireError as error:
            raise HostGone(self._gone(f"broke the protocol ({error})")) from None

    def _gone(self, what: str) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return f"the candidate's process {what}; it was killed"
        if code == -signal.SIGXFSZ:
            return f"crash: the candidate printed more than {OUTPUT_LIMIT >> 20} MB and was stopped"
        words = last_words(self.log_path)
        return f"crash: the candidate's process exited with {exit_text(code)}" + (f": {words}" if words else "")

    def end(self) -> None:
        try:
            self.peer.order({"op": "exit"})
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.peer.sock.close()


_SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|SESSION|COOKIE|DSN|POSTGRES", re.IGNORECASE)


def host_environment() -> dict[str, str]:
    """This process's environment without what looks like a secret (API keys, tokens, database URLs): the
    candidate's code may read its process's memory, and a kernel needs none of them."""
    return {k: v for k, v in os.environ.items() if not _SECRET.search(k)}


def _die_with_parent() -> None:  # runs in the host between fork and exec
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Checker:
    """Runs the steps above for one scenario, with the candidate's calls made by `host`."""

    def __init__(self, task: Task, arch: str, spec: dict, host: Host, device: dict):
        self.task, self.arch, self.spec, self.host = task, arch, spec, host
        self.gpu = arch in GPU_ARCHS
        self.device = "cuda" if self.gpu else "cpu"
        baselines = task.baselines(arch)
        headline = task.headline_baseline.get(arch)
        self.baseline: Baseline | None = next((b for b in baselines if b.name == headline), None)
        self.beside = [b for b in baselines if b.name != headline and b.unavailable is None
                       and spec.get("beside", False)]
        self.rng = random.Random(spec["seed"])
        self.arena = Arena()
        self.keys = 0
        self.live: list[int] = []  # keys of what the host maps now
        self.peak = peak_flops(arch, task.compute_dtype, device.get("sms"), _mhz(device))
        self._bandwidths: dict[int, float] = {}
        self.waiting = False

    def sync(self) -> None:
        if self.gpu:
            torch.cuda.synchronize()

    # --- memory the host maps ------------------------------------------------------------------------
    def inputs(self, scenario: Scenario, seed: int, shared: bool = True) -> Guarded:
        return Guarded(self.task.make_inputs(scenario, seed, self.device), pattern=seed,
                       alloc=self.arena.alloc if shared else None)

    def outputs(self, scenario: Scenario, inputs: Guarded, seed: int) -> Guarded:
        return Guarded(self.task.new_outputs(scenario, inputs.values, self.device), pattern=seed + 1,
                       alloc=self.arena.alloc)

    def share(self, *groups: Guarded) -> list[int]:
        """Map `groups` into the host; returns their keys there."""
        buffers = [b for g in groups for b in g.buffers]
        handles, fds = self.arena.handles(buffers)
        layouts, keys, first = {}, [], 0
        for group in groups:
            self.keys += 1
            layout = group.layout()
            layout["views"] = {k: (i + first, *rest) for k, (i, *rest) in layout["views"].items()}
            layouts[self.keys] = layout
            keys.append(self.keys)
            first += len(group.buffers)
        self.live += keys
        self.sync()  # what was written here is there before the host reads it
        try:
            self.host.ask_reply("mapped", {}, {"op": "map", "handles": handles, "layouts": layouts}, fds)
        finally:
            Arena.close(fds)
        return keys

    def drop(self, keys: list[int]) -> None:
        self.host.ask_reply("dropped", {}, {"op": "drop", "keys": keys})
        self.live = [key for key in self.live if key not in keys]
        self.release()

    def drop_all(self) -> None:
        """Unmap whatever a failed scenario left mapped in the host."""
        if self.live:
            self.drop(list(self.live))

    def release(self) -> None:
        """Give the GPU memory this process no longer uses back to the device: the host's allocator cannot
        take it from this one's cache (two processes share one card)."""
        if self.gpu:
            torch.cuda.ipc_collect()  # blocks the host has let go of are freed here only when asked
            give_back_cache()

    def call(self, scenario: Scenario, inputs: int, outputs: int) -> None:
        reply = self.host.ask_reply("called", {"status": int},
                                    {"op": "call", "scenario": scenario.to_dict(), "inputs": inputs, "outputs": outputs})
        if reply["status"] != 0:
            raise ScenarioFailure(f"the entry point returned {reply['status']} (an error or an unsupported case)")

    # --- checks ------------------------------------------------------------------------------------
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

    def allowed_errors(self, scenario: Scenario, inputs: dict, reference: dict) -> tuple[dict, str]:
        if self.baseline is None or self.baseline.unavailable:
            return self.task.fallback_errors(scenario, inputs, reference), "the low-precision reference"
        base_out = self.baseline.run(scenario, inputs)
        self.sync()
        if _nan_count(base_out):
            raise RuntimeError(f"the baseline {self.baseline.name} wrote NaN on this scenario "
                               "(before the candidate ran: the baseline's own failure)")
        return self.task.errors(scenario, base_out, reference), f"{self.baseline.name}'s error"

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

    # --- one scenario -------------------------------------------------------------------------------
    def scenario(self, scenario: Scenario) -> dict:
        seed = self.rng.randrange(1 << 30)
        result: dict[str, Any] = {"scenario": scenario.name, "group": scenario.group, "correct": False}
        # 1. check on fresh inputs; the reference and the baseline see them before the candidate does
        inputs = self.inputs(scenario, seed)
        reference = self.expect(scenario, inputs.values)
        pristine = _copies(inputs.values)
        outputs = self.outputs(scenario, inputs, seed)
        keys = self.share(inputs, outputs)
        self.call(scenario, *keys)
        result["check"] = self.check(scenario, inputs, pristine, outputs, "first check", reference)
        self.drop(keys)
        # 2. time against the baselines over rotating input sets
        set_bytes = max(1, _set_bytes(inputs.values, outputs.values))
        l2 = self.spec.get("l2_bytes", 50 << 20)
        count = max(1, min(self.spec.get("max_sets", 32), math.ceil(3 * l2 / set_bytes)))
        del inputs, outputs, pristine, reference
        self.release()
        sets = [self.inputs(scenario, seed + 1 + i) for i in range(count)]
        outs = [self.outputs(scenario, s, seed + 1 + i) for i, s in enumerate(sets)]
        keys = self.share(*sets, *outs)
        pairs = list(zip(keys[:count], keys[count:], strict=True))
        baselines = [b.name for b in (self.baseline, *self.beside) if b is not None and b.unavailable is None
                     and (b.supports is None or b.supports(scenario))]
        timed, checked = self._time(scenario, seed, sets, outs, pairs, baselines)
        for i, (s, o) in enumerate(zip(sets, outs, strict=True)):
            breach = o.breach() or s.breach()
            if breach:
                raise ScenarioFailure(f"timing, input set {i}: the candidate {breach}")
        # 3. the last checked values again, in new allocations made while the old ones are alive (so that
        #    the addresses differ: torch's allocator would otherwise hand the freed block back)
        new_values, reference = _unpark(checked, self.device)
        fresh_inputs = Guarded(new_values.values, pattern=seed + 7, alloc=self.arena.alloc)
        fresh_outputs = self.outputs(scenario, fresh_inputs, seed + 7)
        pristine = _copies(fresh_inputs.values)
        fresh = self.share(fresh_inputs, fresh_outputs)
        self.call(scenario, *fresh)
        self.check(scenario, fresh_inputs, pristine, fresh_outputs, "the check after timing, on new buffers", reference)
        self.drop(keys + fresh)
        # 4. the speed of light
        moved = self.task.bytes_moved(scenario)
        why = speed_of_light(timed["time_s"]["candidate"], bytes_moved=moved,
                             copy_bandwidth=self._bandwidth(count * set_bytes) if moved else None,
                             flops=self.task.flops(scenario),
                             peak=self.peak)
        lags = timed["lag_s"]
        host_lag = min((lag for name, lag in lags.items() if name != "candidate"), default=0.0)
        why = why or outlived(timed["time_s"]["candidate"], lags.get("candidate", 0.0), host_lag)
        if why:
            raise ScenarioFailure(why)
        # raw measurements only: the parent derives speedups and rates from them
        result.update(correct=True, timing=timed["timing"], sets=count, trials=timed["trials"],
                      time_s=timed["time_s"], spread=timed["spread"], eager_s=timed["eager_s"], lag_s=lags)
        for key in ("skipped", "baseline_timing"):
            if timed.get(key):
                result["beside_skipped" if key == "skipped" else key] = timed[key]
        return result

    def _time(self, scenario: Scenario, seed: int, sets: list[Guarded], outs: list[Guarded],
              pairs: list[tuple[int, int]], baselines: list[str]) -> tuple[dict, tuple[Guarded, tuple]]:
        """Order the timing and answer the host's pauses; returns (its times, the last values checked)."""
        self.waiting = False  # whether the host waits for an answer (it paused, or told its trial count)
        try:
            return self._timing(scenario, seed, sets, outs, pairs, baselines)
        except HostGone:
            raise
        except BaseException:
            if self.waiting:
                self.host.order({"op": "stop"})  # so that the next order is not taken for the answer
            raise

    def _answer(self, message: dict) -> None:
        self.host.order(message)
        self.waiting = False

    def _timing(self, scenario: Scenario, seed: int, sets: list[Guarded], outs: list[Guarded],
                pairs: list[tuple[int, int]], baselines: list[str]) -> tuple[dict, tuple[Guarded, tuple]]:
        self.host.order({"op": "time", "scenario": scenario.to_dict(), "sets": pairs, "baselines": baselines,
                         "headline": getattr(self.baseline, "name", None), "budget_s": self.spec.get("budget_s", 0.2),
                         "repeats": REPEATS})
        checked: tuple[Guarded, tuple] | None = None
        verify_at: list[int] = []
        chosen = -1
        while True:
            reply = self.host.reply()
            kind = reply.get("reply")
            self.waiting = kind in ("sized", "verify", "replayed")
            if kind == "sized":
                trials = int(number(reply.get("trials"), "trials", positive=True))
                verify_at = sorted(self.rng.sample(range(trials), min(VERIFIED_TRIALS, trials)))
                self._answer({"op": "verify_at", "verify_at": verify_at})
            elif kind == "verify":
                trial = reply.get("trial")
                if trial not in verify_at:
                    raise HostGone(f"the candidate's process paused at trial {str(trial)[:20]}, which was not asked")
                # the previous trial's values and reference, freed before the next are made
                checked = new_values = reference = pristine = None
                self.release()
                # values of this process's making in one set, poisoned outputs: the timed call must compute them.
                # They are the set's values as the host's variation left them, varied again here (with this
                # process's random numbers), so of the same kind as every other trial's: a memo cannot tell a
                # checked trial by its inputs (new magnitudes where the others keep theirs) and compute only there.
                chosen = self.rng.randrange(len(sets))
                new_values = self.inputs(scenario, seed + 5_000 + trial, shared=False)
                self.refill(new_values.values, sets[chosen].values)
                self.task.vary_inputs(new_values.values)
                reference = self.expect(scenario, new_values.values)
                self.refill(sets[chosen].values, new_values.values)
                pristine = _copies(sets[chosen].values)
                self.poison(outs[chosen].values)
                self.sync()
                checked = (new_values, reference)
                self._answer({"op": "go"})
            elif kind == "replayed":
                if checked is None or reply.get("trial") not in verify_at:
                    raise HostGone("the candidate's process reported a replay that was not asked")
                what = f"the timed call (trial {reply['trial']}, input set {chosen})"
                try:
                    for i, o in enumerate(outs):
                        left = _nan_count(o.values)
                        if left:
                            raise ScenarioFailure(f"{what}: the candidate left its output unwritten on a timed call "
                                                  f"({left} elements of input set {i}'s outputs still held the poison)")
                    self.check(scenario, sets[chosen], pristine, outs[chosen], what, checked[1])
                except ScenarioFailure:
                    self._answer({"op": "stop"})
                    raise
                # kept for the check after timing, off the card while the host's graphs hold its memory
                checked, pristine = _park(checked), None
                self.release()
                self._answer({"op": "go"})
            elif kind == "status":
                raise ScenarioFailure(f"the entry point returned {reply.get('status')} on a timed call")
            elif kind == "uncapturable":
                raise ScenarioFailure(
                    f"the launcher is not capture-safe after its first call ({str(reply.get('text'))[:300]}); a "
                    "launcher must not allocate, synchronize or copy between host and device on later calls")
            elif kind == "timed":
                break
            else:
                raise HostGone(f"the candidate's process sent an unexpected reply: {str(reply)[:120]}")
        names = {"candidate", *baselines}
        try:
            for field in ("time_s", "eager_s"):
                table = reply.get(field)
                if not isinstance(table, dict) or not set(table) <= names or "candidate" not in table:
                    raise WireError(f"{field} names {str(table)[:80]}")
                for name, value in table.items():
                    number(value, f"{field}[{name}]", positive=True)
            lags = reply.get("lag_s")
            if not isinstance(lags, dict) or not set(lags) <= names:
                raise WireError(f"lag_s names {str(lags)[:80]}")
            if any(number(value, f"lag_s[{name}]") < 0 for name, value in lags.items()):
                raise WireError("a lag is negative")
            trials = int(number(reply.get("trials"), "trials", positive=True))
        except WireError as error:
            raise HostGone(f"the candidate's process sent invalid times ({error})") from None
        if trials < len(verify_at) or checked is None:
            raise HostGone("the candidate's process skipped the checked trials")
        unwritten = reply.get("unwritten")
        if isinstance(unwritten, dict):
            if "repeat" in unwritten:
                raise ScenarioFailure(f"the candidate left its output unwritten on a repeated call with unchanged "
                                      f"inputs (call {unwritten['repeat'] + 2} on the same inputs; "
                                      f"{unwritten.get('count')} elements still held the poison)")
            raise ScenarioFailure(f"the candidate left its output unwritten on a timed call (trial "
                                  f"{unwritten.get('trial')}; {unwritten.get('count')} elements still held the poison)")
        return reply, checked

    def _bandwidth(self, footprint: int) -> float | None:
        """A copy's bandwidth over `footprint` bytes (rounded up to a power of two, measured once each)."""
        size = 1 << max(20, math.ceil(math.log2(max(footprint, 1))))
        if size not in self._bandwidths:
            self._bandwidths[size] = copy_bandwidth(self.device, size // 2, budget_s=0.05)
        return self._bandwidths[size]


PARK_BYTES = 256 << 20  # checked values larger than this wait in host memory during the timing


def _park(checked: tuple[Guarded, tuple], limit: int = PARK_BYTES) -> tuple[Any, tuple]:
    """The last checked values and their reference, moved to host memory when large (see _unpark). The
    values' buffers move whole, so that views of one storage (packed, strided) stay what they were."""
    values, (expected, allowed, source) = checked
    if _set_bytes(values.values, expected) < limit:
        return checked
    parked = (values.layout(), [b.cpu() for b in values.buffers])
    return parked, ({k: (v.cpu() if isinstance(v, torch.Tensor) else v) for k, v in expected.items()},
                    allowed, source)


def _unpark(checked: tuple[Any, tuple], device: str) -> tuple[Any, tuple]:
    """`checked` as `_park` left it, back on `device`: (an object with the values as `.values`, the reference)."""
    values, (expected, allowed, source) = checked
    if isinstance(values, Guarded):
        return checked
    layout, buffers = values
    back = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in expected.items()}
    return _Values(attach(layout, [b.to(device) for b in buffers])), (back, allowed, source)


class _Values:
    """Values rebuilt from parked buffers, shaped as a Guarded's (`.values`) for the check after timing."""

    def __init__(self, values: dict[str, Any]):
        self.values = values


def _mhz(device: dict) -> float | None:
    """The highest SM clock, in MHz: nvidia-smi's reading of this GPU, else what its driver reports."""
    found = re.match(r"\s*([\d.]+)", str((device.get("clocks") or {}).get("clocks.max.sm", "")))
    return float(found.group(1)) if found else (device.get("gpu") or {}).get("sm_clock_max_mhz")


def device_info(arch: str) -> dict:
    """The hardware a judgement ran on, recorded in its report: the GPU (as torch and its driver see it), the
    driver and the clocks; on the CPU task, the CPU."""
    from kernelseek.harness import gpu_info

    info: dict[str, Any] = {"arch": arch, "torch": torch.__version__, "python": sys.version.split()[0]}
    if arch in GPU_ARCHS and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(name=props.name, capability=f"{props.major}.{props.minor}", sms=props.multi_processor_count,
                    l2_bytes=getattr(props, "L2_cache_size", 50 << 20), cuda=torch.version.cuda)
        try:  # torch's device 0 is the driver's ordinal 0: both count the devices CUDA_VISIBLE_DEVICES leaves
            gpu = next(iter(gpu_info.gpus()), {})
            readings = gpu_info.smi(gpu.get("pci_bus_id"))
            cuda_driver = gpu_info.driver_version()
        except Exception:  # noqa: BLE001 - the record is a description: a failed query leaves its fields out
            gpu, readings, cuda_driver = {}, {}, None
        info.update(gpu=gpu, clocks=readings, driver=readings.get("driver_version"), driver_cuda=cuda_driver)
    else:
        info.update(cpu=gpu_info.cpu(), name=gpu_info.cpu()["name"], threads=torch.get_num_threads())
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
    # Python ignores SIGXFSZ; restored, a process that prints past the parent's output limit is stopped
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)

    def emit(**event: Any) -> None:
        line = (json.dumps(event, default=str) + "\n").encode()
        while line:
            line = line[os.write(channel_fd, line):]

    arch = spec["arch"]
    torch.manual_seed(spec["seed"])
    if arch == "cpu":
        torch.set_num_threads(1)  # the baseline's errors are computed as it is timed: on one thread
    task = load_task(spec["task"])
    if arch in GPU_ARCHS:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        warm_clocks(spec.get("warm_s", 1.0))
        spec.setdefault("l2_bytes", getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20))
    # the copy bandwidth the task's memory floor is reported against, before the candidate's process exists
    floors = any(task.bytes_moved(Scenario(**entry)) for entry in spec["scenarios"])
    bandwidth = copy_bandwidth("cuda" if arch in GPU_ARCHS else "cpu") if floors else None
    device = device_info(arch)
    emit(event="ready", device=device, copy_bandwidth_Bps=bandwidth,
         baselines={b.name: (b.unavailable or "available", b.info) for b in task.baselines(arch)})
    folder = Path(spec_path).parent
    host_spec = {k: spec[k] for k in ("task", "library", "arch", "seed")}
    try:
        host = Host(host_spec, folder, len(list(folder.glob("host-*.log"))))
    except HostGone as gone:  # the library did not load (a constructor crashed, a symbol is missing)
        for entry in spec["scenarios"]:
            emit(event="start", scenario=entry["name"])
            emit(event="result", scenario=entry["name"], group=entry["group"], correct=False, reason=str(gone))
        emit(event="done")
        return 0
    checker = Checker(task, arch, spec, host, device)
    for entry in spec["scenarios"]:
        scenario = Scenario(**entry)
        name = scenario.name
        emit(event="start", scenario=name)
        started = time.perf_counter()
        fatal = False
        try:
            result = checker.scenario(scenario)
        except ScenarioFailure as failure:
            result = {"scenario": name, "group": scenario.group, "correct": False, "reason": str(failure)}
        except HostGone as gone:
            fatal = True
            result = {"scenario": name, "group": scenario.group, "correct": False, "reason": str(gone)}
        except torch.cuda.OutOfMemoryError as error:
            result = {"scenario": name, "group": scenario.group, "correct": False,
                      "reason": f"out of GPU memory: {str(error).splitlines()[0]}"}
            fatal = True  # the two processes' memory is tangled; start both afresh
        except Exception as error:  # noqa: BLE001 - whatever broke, this scenario fails with the reason
            text = str(error).splitlines()[0] if str(error) else type(error).__name__
            fatal = "CUDA" in text or "cuda" in text or "illegal" in text.lower()
            reason = f"CUDA error: {text}" if fatal else f"harness error: {text}"
            result = {"scenario": name, "group": scenario.group, "correct": False, "reason": reason,
                      "traceback": traceback.format_exc(limit=4)}
            fatal = True  # the candidate's process may be mid-order; a new pair goes on
        if not fatal:
            try:
                checker.drop_all()
            except HostGone:
                fatal = True
        result["wall_s"] = round(time.perf_counter() - started, 3)
        emit(event="result", **result)
        if fatal:
            return 3  # the parent continues with the scenarios left, in a new pair of processes
    host.end()
    emit(event="done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
