"""Issue 18 on the GPU: how much a latency-bound add_rmsnorm scenario can gain at all. For each scenario,
the time of one call as the judge measures it (calls over rotating input sets captured in one CUDA graph,
the replays timed with events) of each kernel given, of torch.compile, and of an empty kernel
(`torch.cuda._sleep(0)`: a launch and nothing else) in the same kind of graph: the launch floor no kernel
gets under, so torch.compile's time over it is the most any kernel can gain there.
    python benchmarks/rmsnorm_launch_floor.py KERNEL.cu [KERNEL.cu ...] [--scenarios decode_h1024_r1,...]
Each kernel is named by its file's stem; the scenarios default to the suite's latency-bound ones in a
judgement (`rmsnorm_summary.latency_bound`; --from, default `benchmarks/results/add_rmsnorm-v5-sm90-full-h100.json`;
the recorded table timed the 18 of the H200's v2 judgement, one more than v5's H100 judgement names).
`rmsnorm_summary.py JSON --launch-floor OUTPUT` reads the output against the 1.2x bar."""

from __future__ import annotations

import argparse
import ctypes
import json
import math
from pathlib import Path

import torch
from rmsnorm_summary import latency_bound

from kernelseek.harness.build import build_kernel
from kernelseek.harness.task import load_task
from kernelseek.harness.timing import capture, time_graphs

JUDGEMENT = Path("benchmarks/results/add_rmsnorm-v5-sm90-full-h100.json")


def default_scenarios(judgement: Path = JUDGEMENT) -> list[str]:
    suite = [s for s in json.loads(judgement.read_text())["scenarios"] if not s.get("holdout") and s.get("floor_fraction")]
    return [s["scenario"] for s in latency_bound(suite)]


def time_scenario(task, scenario, calls: dict, compiled, n_sets: int) -> dict:
    """Each implementation's calls over `n_sets` input sets in one graph; the median time of a replay."""
    sets = [task.make_inputs(scenario, seed, "cuda") for seed in range(n_sets)]
    outs = [task.new_outputs(scenario, s, "cuda") for s in sets]
    impls = {"empty": lambda: [torch.cuda._sleep(0) for _ in sets]}
    for stem, call in calls.items():
        impls[stem] = lambda call=call: [call(scenario, s, o, torch.cuda.current_stream().cuda_stream)
                                         for s, o in zip(sets, outs, strict=True)]
    impls["torch_compile"] = lambda: [compiled.run(scenario, s) for s in sets]
    for fn in impls.values():
        fn()  # the first call outside the capture (torch.compile compiles here)
    torch.cuda.synchronize()
    return time_graphs({k: capture(fn) for k, fn in impls.items()}, n_sets, budget_s=0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("kernels", nargs="+", type=Path)
    parser.add_argument("--scenarios", help="comma-separated scenario names (default: the latency-bound ones)")
    parser.add_argument("--from", dest="judgement", type=Path, default=JUDGEMENT,
                        help="the judgement whose latency-bound scenarios are the default")
    parser.add_argument("--sets", type=int, default=32, help="input sets a graph rotates over (the judge's cap)")
    args = parser.parse_args()

    task = load_task("evals/tasks/add_rmsnorm")
    compiled = next(b for b in task.baselines("sm90") if b.name == task.headline_baseline["sm90"])
    calls = {}
    for kernel in args.kernels:
        build = build_kernel(kernel, "sm90", entry_point=task.entry_point or None)
        calls[kernel.stem] = task.bind(ctypes.CDLL(build.library))
    names = ["empty", *calls, "torch_compile"]
    print(f"{torch.cuda.get_device_name()}: us a call, median of the replays of a graph of {args.sets} calls")
    print(f"{'scenario':26s} " + " ".join(f"{n:>14s}" for n in names) + "   torch.compile / empty")
    logs = []
    for name in args.scenarios.split(",") if args.scenarios else default_scenarios(args.judgement):
        scenario = task.find("sm90", name)
        times = time_scenario(task, scenario, calls, compiled, args.sets)
        us = {k: t.median_s * 1e6 for k, t in times.items()}
        ratio = us["torch_compile"] / us["empty"]
        logs.append(math.log(ratio))
        print(f"{name:26s} " + " ".join(f"{us[n]:14.2f}" for n in names) + f"   {ratio:.2f}x")
    print(f"geomean of torch.compile over the empty kernel: {math.exp(sum(logs) / len(logs)):.3f}x "
          f"(the most any kernel can gain on these scenarios)")


if __name__ == "__main__":
    main()
