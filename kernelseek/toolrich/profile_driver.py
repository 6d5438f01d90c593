"""The program Nsight Compute profiles: one call of the candidate on one scenario, nothing else timed.

    python -m kernelseek.toolrich.profile_driver SPEC.json
    SPEC = {"task": folder, "library": built .so, "arch": "sm90", "scenario": name or null, "seed": int}

It makes the task's inputs on the GPU, calls the candidate through the task's entry point twice (a
first call may set things up; ncu's filter picks the candidate's own kernels by name) and prints one
JSON line with the status of each call and the scenario used.
"""

from __future__ import annotations

import ctypes
import json
import sys


def main(spec_path: str) -> int:
    import torch

    from kernelseek.harness.task import load_task

    spec = json.loads(open(spec_path).read())
    task = load_task(spec["task"])
    arch = spec["arch"]
    scenarios = task.scenarios(arch)
    scenario = task.find(arch, spec["scenario"]) if spec.get("scenario") else \
        next((s for s in scenarios if s.quick), scenarios[0])
    inputs = task.make_inputs(scenario, int(spec.get("seed", 0)), "cuda")
    outputs = task.new_outputs(scenario, inputs, "cuda")
    call = task.bind(ctypes.CDLL(spec["library"]))
    torch.cuda.synchronize()
    statuses = []
    for _ in range(int(spec.get("calls", 2))):
        statuses.append(int(call(scenario, inputs, outputs, torch.cuda.current_stream().cuda_stream)))
        torch.cuda.synchronize()
    print(json.dumps({"scenario": scenario.name, "params": scenario.params, "statuses": statuses}))
    return 0 if not any(statuses) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
