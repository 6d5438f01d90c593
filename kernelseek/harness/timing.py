"""Timing: the candidate and the baseline, interleaved, in one process.

On a GPU each implementation's calls over a rotation of input sets (together several times the L2,
so every call starts cold) are captured in one CUDA graph, and the graph's replays are timed with CUDA
events: the GPU's work, not Python's dispatch. On the CPU the same rotation is timed with the
monotonic clock. Either way the median over the trials is the time of one call.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch


class CaptureError(RuntimeError):
    """The implementation cannot be captured in a CUDA graph (it allocates, syncs or copies)."""


@dataclass
class Timed:
    median_s: float
    trials: int
    spread: float  # (p90 - p10) / median over the trials
    # how long the device stayed busy after the timed interval had ended (median over the replays): work
    # that outlives the timed stream, e.g. a kernel a launcher left running on a stream of its own
    lag_s: float = 0.0


def _summary(samples: list[float]) -> Timed:
    samples = sorted(samples)
    median = statistics.median(samples)
    lo, hi = samples[len(samples) // 10], samples[(len(samples) * 9) // 10]
    return Timed(median_s=median, trials=len(samples), spread=(hi - lo) / median if median > 0 else 0.0)


def capture(calls: Callable[[], None]) -> torch.cuda.CUDAGraph:
    """Capture `calls` (which already ran once eagerly) into a graph; raise CaptureError if impossible."""
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    try:
        with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
            calls()
    except Exception as error:  # noqa: BLE001 - any failure to capture means the same thing
        torch.cuda.synchronize()
        raise CaptureError(str(error).splitlines()[0] if str(error) else type(error).__name__) from None
    torch.cuda.synchronize()
    return graph


@dataclass
class Hooks:
    """What runs around every timed measurement, outside the timed interval: `before(name, trial)` makes
    the call's inputs and outputs ready (new values, poisoned outputs), `after(name, trial)` checks what
    it wrote, `sized(trials)` hears how many trials there will be once the first round was timed.
    `trial` is the index of the measured trial, or -1 for the warm-up and sizing rounds."""

    before: Callable[[str, int], None] = lambda name, trial: None
    after: Callable[[str, int], None] = lambda name, trial: None
    sized: Callable[[int], None] = lambda trials: None


def time_graphs(graphs: dict[str, torch.cuda.CUDAGraph], calls_per_replay: int, *,
                budget_s: float, min_trials: int = 5, max_trials: int = 100,
                hooks: Hooks | None = None) -> dict[str, Timed]:
    """Replay each graph in turn, trial after trial (the order alternates), and time each replay."""
    names = list(graphs)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    lags: dict[str, list[float]] = {name: [] for name in names}

    def replay(name: str) -> float:
        start.record()
        graphs[name].replay()
        end.record()
        end.synchronize()
        # The whole device, not the timed stream alone, is idle before the next replay is prepared: no
        # work of this replay can run on into the next one's interval, and any that ran past this one's
        # end shows as lag.
        t0 = time.perf_counter()
        torch.cuda.synchronize()
        lags[name].append((time.perf_counter() - t0) / calls_per_replay)
        return start.elapsed_time(end) / 1e3 / calls_per_replay

    # warm-up: the first replays upload the graph and bring the clocks up
    timed = _interleaved(names, replay, calls_per_replay, budget_s, min_trials, max_trials, warmups=2,
                         hooks=hooks or Hooks())
    for name, t in timed.items():
        t.lag_s = statistics.median(lags[name])
    return timed


def time_calls(calls: dict[str, Callable[[], None]], calls_per_round: int, *, budget_s: float,
               synchronize: Callable[[], None] = lambda: None, min_trials: int = 5,
               max_trials: int = 200, clock: Callable[[], float] = time.perf_counter,
               hooks: Hooks | None = None) -> dict[str, Timed]:
    """Host-clock timing of plain calls: the eager call time on a GPU (wall clock) and CPU kernels
    (`clock=time.thread_time`: the CPU time of this thread, so that other processes on a shared
    machine do not leak into the numbers; both sides run single-threaded in this thread)."""
    names = list(calls)

    def once(name: str) -> float:
        synchronize()
        t0 = clock()
        calls[name]()
        synchronize()
        return (clock() - t0) / calls_per_round

    return _interleaved(names, once, calls_per_round, budget_s, min_trials, max_trials, warmups=1,
                        hooks=hooks or Hooks())


def _interleaved(names: list[str], measure: Callable[[str], float], calls_per_round: int, budget_s: float,
                 min_trials: int, max_trials: int, *, warmups: int, hooks: Hooks) -> dict[str, Timed]:
    """Warm up, size the number of trials to the budget, then measure the implementations in turn,
    trial after trial, alternating their order so that neither always follows the other."""
    def timed(name: str, trial: int) -> float:
        hooks.before(name, trial)
        seconds = measure(name)
        hooks.after(name, trial)
        return seconds

    for name in names:
        for _ in range(warmups):
            timed(name, -1)
    started = time.perf_counter()
    one_round = sum(timed(name, -1) for name in names) * calls_per_round
    # the budget is wall time: what runs around the measurements counts too
    per_round = max(one_round, time.perf_counter() - started, 1e-9)
    trials = max(min_trials, min(max_trials, int(budget_s / per_round)))
    hooks.sized(trials)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for trial in range(trials):
        for name in names if trial % 2 == 0 else reversed(names):
            samples[name].append(timed(name, trial))
    return {name: _summary(values) for name, values in samples.items()}


def time_by_kernel_durations(fn: Callable[[], None], calls_per_round: int, *, rounds: int = 10) -> Timed:
    """For a baseline that cannot be captured in a graph: the sum of its GPU kernels' own durations
    (from the profiler), per call. Launch gaps are not counted, so this favours the baseline."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(rounds):
            fn()
        torch.cuda.synchronize()
    kernel_us = sum(e.device_time for e in prof.events() if e.device_type.name == "CUDA")
    if kernel_us <= 0:
        raise RuntimeError("the profiler saw no GPU kernel")
    return Timed(median_s=kernel_us / 1e6 / (rounds * calls_per_round), trials=rounds, spread=0.0)


def copy_bandwidth(device: str, nbytes: int | None = None, *, budget_s: float = 0.2) -> float:
    """The streaming bandwidth of this device in bytes per second (bytes read plus bytes written, as a
    kernel's traffic is counted): the faster of a plain copy and an elementwise kernel over the same
    buffers. On a GPU, 1 GiB (far past the L2) timed as graph replays; a captured copy may become a
    copy-engine memcpy, slower than a kernel reading and writing the same bytes (measured on an H200:
    2.67 TB/s, while torch.compile's kernels moved ~4 TB/s), hence the kernel beside it. On the CPU,
    64 MiB on this thread. The memory floor of a task's scenario is its bytes moved divided by this."""
    nbytes = nbytes or ((1 << 30) if device == "cuda" else (64 << 20))
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    ways = {"copy": lambda: dst.copy_(src), "kernel": lambda: torch.neg(src, out=dst)}
    for way in ways.values():
        way()  # the first call outside any capture
    if device == "cuda":
        graphs = {name: capture(way) for name, way in ways.items()}
        timed = time_graphs(graphs, 1, budget_s=budget_s, min_trials=5, max_trials=50)
        del graphs
    else:
        timed = time_calls(ways, 1, budget_s=budget_s, min_trials=3, max_trials=20, clock=time.thread_time)
    src = dst = ways = None  # (not `del`: the closures above name them)
    if device == "cuda":
        torch.cuda.empty_cache()  # the scenarios' inputs get the memory back
    return 2 * 4 * (nbytes // 4) / min(t.median_s for t in timed.values())
