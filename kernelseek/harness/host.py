"""The candidate host: the only process that loads a candidate's library.

`python -m kernelseek.harness.host SPEC.json FD` is started by the checker (child.py) with one end of
a Unix socket as FD. It loads the task, seals FD (seal.py: from then on no call the candidate may make
writes to it) and only then loads the library. It allocates nothing the candidate touches: every
input and output is the checker's memory, mapped here (shared.py). It does what the checker orders
(wire.py) — map buffers, call the entry point once, time the candidate beside the baselines — and
replies with what only it can observe: the entry point's status and times. Whether an output is
correct is never its call; the checker reads the outputs itself.

Timing (`time`): each implementation's calls over the rotating input sets are captured in a CUDA
graph (on the CPU, called in turn); before every timed replay, outside the timed interval, every set's
inputs get new values (`Task.vary_inputs`) and every candidate output is poisoned with NaN, and after
it every output is checked for poison left behind. So no timed call sees inputs an earlier call saw,
and a call that skips its work leaves poison. At the trials the checker picked, the host stops before
the candidate's replay so that the checker can put values of its own into one set, and after it so
that the checker can check what was written.
"""

from __future__ import annotations

import ctypes
import json
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from kernelseek.harness.canary import attach
from kernelseek.harness.seal import seal
from kernelseek.harness.shared import give_back_cache, map_buffers
from kernelseek.harness.task import Scenario, Task, load_task
from kernelseek.harness.timing import (
    CaptureError,
    Hooks,
    capture,
    time_by_kernel_durations,
    time_calls,
    time_graphs,
)
from kernelseek.harness.wire import Peer

GPU_ARCHS = ("sm90", "sm100")


class Stopped(Exception):
    """The checker ended the timing (it found a timed call wrong)."""


def _floating(values: dict[str, Any]) -> list[torch.Tensor]:
    return [v for v in values.values() if isinstance(v, torch.Tensor) and v.is_floating_point()]


class Host:
    def __init__(self, task: Task, library: str, arch: str, spec: dict, peer: Peer):
        self.task, self.arch, self.spec, self.peer = task, arch, spec, peer
        self.gpu = arch in GPU_ARCHS
        self.call = task.bind(ctypes.CDLL(library))
        self.baselines = {b.name: b for b in task.baselines(arch) if b.unavailable is None}
        self.mapped: dict[int, dict[str, Any]] = {}
        self._graphs: dict[str, torch.cuda.CUDAGraph] = {}

    def sync(self) -> None:
        if self.gpu:
            torch.cuda.synchronize()

    def stream(self) -> int:
        return torch.cuda.current_stream().cuda_stream if self.gpu else 0

    # --- orders ------------------------------------------------------------------------------------
    def serve(self) -> int:
        while True:
            order, fds = self.peer.take_order()
            op = order["op"]
            if op == "exit":
                return 0
            try:
                getattr(self, "op_" + op)(order, fds)
            except Exception as error:  # noqa: BLE001 - the checker decides what it means
                text = str(error).splitlines()[0] if str(error) else type(error).__name__
                fatal = "CUDA" in text or "cuda" in text or "illegal" in text.lower()
                self.peer.reply({"reply": "error", "text": text[:600], "fatal": fatal,
                                 "traceback": traceback.format_exc(limit=4)[-2000:]})
                if fatal:
                    return 3  # the CUDA context is unusable after an error

    def op_map(self, order: dict, fds: list[int]) -> None:
        buffers = map_buffers(order["handles"], fds)
        for key, layout in order["layouts"].items():
            self.mapped[key] = attach(layout, buffers)
        self.peer.reply({"reply": "mapped"})

    def op_drop(self, order: dict, fds: list[int]) -> None:
        for key in order["keys"]:
            self.mapped.pop(key, None)
        self._graphs = {}
        if self.gpu:
            torch.cuda.synchronize()
            give_back_cache()
        self.peer.reply({"reply": "dropped"})

    def op_call(self, order: dict, fds: list[int]) -> None:
        scenario = Scenario(**order["scenario"])
        self.sync()
        status = int(self.call(scenario, self.mapped[order["inputs"]], self.mapped[order["outputs"]], self.stream()))
        self.sync()
        self.peer.reply({"reply": "called", "status": status})

    def op_time(self, order: dict, fds: list[int]) -> None:
        scenario = Scenario(**order["scenario"])
        sets = [(self.mapped[i], self.mapped[o]) for i, o in order["sets"]]
        count = len(sets)
        result: dict[str, Any] = {"reply": "timed", "skipped": {}, "unwritten": None}

        def candidate() -> None:
            for inputs, outputs in sets:
                status = self.call(scenario, inputs, outputs, self.stream())
                if status != 0:
                    raise StatusError(status)

        impls: dict[str, Callable[[], None]] = {"candidate": candidate}
        for name in order["baselines"]:
            b = self.baselines[name]
            impls[name] = (lambda b=b: [b.run(scenario, inputs) for inputs, _ in sets])
        for name, fn in list(impls.items()):
            try:
                fn()  # each implementation's first call happens outside any capture
            except StatusError as error:
                self.peer.reply({"reply": "status", "status": error.status})
                return
            except RuntimeError as error:
                if name == "candidate" or name == order["headline"]:
                    raise
                # a baseline timed only beside the headline may decline a shape; that costs the candidate nothing
                result["skipped"][name] = str(error).splitlines()[0][:200]
                del impls[name]
                self.sync()
        self.sync()
        prepare, leftover = self._preparation(sets)
        verify_at: set[int] = set()

        def before(name: str, trial: int) -> None:
            prepare()
            if name == "candidate" and trial in verify_at:
                self.sync()
                self._pause("verify", trial)

        def check_written(name: str, trial: int) -> None:
            if name == "candidate" and result["unwritten"] is None and (left := leftover()):
                result["unwritten"] = {"trial": trial, "count": left}

        def after(name: str, trial: int) -> None:
            check_written(name, trial)
            if name == "candidate" and trial in verify_at:
                self._pause("replayed", trial)

        def sized(trials: int) -> None:
            self.peer.reply({"reply": "sized", "trials": trials})
            answer, _ = self.peer.take_order()
            if answer["op"] != "verify_at":
                raise Stopped
            verify_at.update(answer["verify_at"])

        hooks = Hooks(before=before, after=after, sized=sized)
        try:
            times, result["timing"] = self._time(impls, count, order, result, hooks)
            # the eager call time, beside: the same preparation around every round, no checker pauses
            eager = time_calls(impls, count, budget_s=0.05, synchronize=self.sync, min_trials=3, max_trials=10,
                               hooks=Hooks(before=lambda name, trial: prepare(), after=check_written))
        except Stopped:
            self._graphs = {}
            return
        except StatusError as error:  # a later call (not captured: on the CPU) returned an error
            self._graphs = {}
            self.peer.reply({"reply": "status", "status": error.status})
            return
        except CaptureError as error:
            self._graphs = {}
            self.peer.reply({"reply": "uncapturable", "text": str(error)[:300]})
            return
        if result["unwritten"] is None:
            result["unwritten"] = self._repeat(impls["candidate"], order["repeats"], sets)
        self._graphs = {}
        if self.gpu:
            give_back_cache()  # the graphs' pools go back to the card when large: the checker allocates next
        result.update(time_s={k: v.median_s for k, v in times.items()}, trials=times["candidate"].trials,
                      spread={k: round(v.spread, 4) for k, v in times.items()},
                      eager_s={k: v.median_s for k, v in eager.items()},
                      lag_s={k: v.lag_s for k, v in times.items()})
        self.peer.reply(result)

    # --- timing ------------------------------------------------------------------------------------
    def _pause(self, where: str, trial: int) -> None:
        self.peer.reply({"reply": where, "trial": trial})
        answer, _ = self.peer.take_order()
        if answer["op"] != "go":
            raise Stopped

    def _repeat(self, candidate: Callable[[], None], repeats: int, sets: list) -> dict | None:
        """Call the candidate `repeats` more times on unchanged inputs, each time on poisoned outputs: a
        memo that skips a repeated call (keyed on pointers, content, a count or the time) leaves poison."""
        outputs = [t for _, o in sets for t in _floating(o)]

        def poison() -> None:
            for t in outputs:
                t.fill_(float("nan"))

        run = self._graphs["candidate"].replay if self.gpu else candidate
        for repeat in range(repeats):
            poison()
            run()
            self.sync()
            left = sum(int(torch.isnan(t).sum()) for t in outputs)
            if left:
                return {"repeat": repeat, "count": left}
        return None

    def _preparation(self, sets: list[tuple[dict, dict]]) -> tuple[Callable[[], None], Callable[[], int]]:
        """(prepare: new input values and poisoned outputs for every set; leftover: how many candidate
        output elements still hold poison). On a GPU both are captured once and replayed."""
        outputs = [t for _, o in sets for t in _floating(o)]

        def prepare() -> None:
            for inputs, outs in sets:
                self.task.vary_inputs(inputs)
                for t in _floating(outs):
                    t.fill_(float("nan"))

        if not self.gpu:
            return prepare, lambda: sum(int(torch.isnan(t).sum()) for t in outputs)
        counter = torch.zeros((), dtype=torch.int64, device="cuda")

        def count() -> None:
            for t in outputs:
                counter.add_(torch.isnan(t).sum())

        prepare()
        count()
        prepared, counted = capture(prepare), capture(count)  # RNG in a graph draws new values every replay
        counter.zero_()

        def leftover() -> int:
            counted.replay()
            left = int(counter.item())
            counter.zero_()
            return left

        return prepared.replay, leftover

    def _time(self, impls: dict, count: int, order: dict, result: dict, hooks: Hooks) -> tuple[dict, str]:
        budget = order["budget_s"]
        if not self.gpu:
            return time_calls(impls, count, budget_s=budget, clock=time.thread_time, hooks=hooks), "thread CPU time"
        self._graphs = {}
        uncapturable: dict[str, str] = {}
        for name, fn in impls.items():
            try:
                self._graphs[name] = capture(fn)
            except CaptureError as error:
                if name == "candidate":
                    raise
                if name == order["headline"]:
                    uncapturable[name] = str(error)
                else:
                    result["skipped"][name] = f"not capturable: {error}"
        times = time_graphs({n: g for n, g in self._graphs.items() if n not in uncapturable}, count,
                            budget_s=budget, hooks=hooks)
        for name, why in uncapturable.items():
            times[name] = time_by_kernel_durations(impls[name], count)
            result["baseline_timing"] = f"{name}: its kernels' durations from the profiler (not capturable: {why})"
        return times, "cuda graph replay"


class StatusError(Exception):
    def __init__(self, status: int):
        super().__init__(f"the entry point returned {status}")
        self.status = status


def main(spec_path: str, fd: int) -> int:
    spec = json.loads(Path(spec_path).read_text())
    # Python ignores SIGXFSZ; restored, a candidate that prints past the output limit is stopped
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    peer = Peer(socket.socket(fileno=fd))
    arch = spec["arch"]
    torch.manual_seed(spec["seed"])
    if arch == "cpu":
        torch.set_num_threads(1)  # the candidate is single-threaded; so is its baseline
    task = load_task(spec["task"])
    if arch in GPU_ARCHS:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.cuda.init()
    seal([fd])  # before the library's constructors run, and for good
    host = Host(task, spec["library"], arch, spec, peer)
    peer.reply({"reply": "ready"})
    return host.serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
