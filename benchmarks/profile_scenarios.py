"""One launch of a kernel and one of the task's headline baseline per scenario, for Nsight Compute:

    ncu --kernel-name regex:'fa_fwd_sm90|device_kernel|flash' --section SpeedOfLight --section Occupancy \
        --section LaunchStats --section WarpStateStats python3 benchmarks/profile_scenarios.py \
        KERNEL.cu sm90 SCENARIO [SCENARIO ...]

A scenario is a suite name or `holdout:SEED:INDEX` (the hold-out sample's INDEX-th shape, 24 drawn).
Every call runs twice (read the second launch in ncu's report: warm caches, a built baseline), inside
an NVTX range named after it (`ncu --nvtx` shows it). Prints which call is which.
"""
import ctypes
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelseek.harness import build_kernel, load_task  # noqa: E402

kernel, arch, names = sys.argv[1], sys.argv[2], sys.argv[3:]
task = load_task("flash_attn_fwd")
call = task.bind(ctypes.CDLL(build_kernel(kernel, arch, forbidden_libraries=task.forbidden_libraries).library))
baseline = task.baselines(arch)[0]
stream = torch.cuda.current_stream().cuda_stream
for name in names:
    if name.startswith("holdout:"):
        _, seed, index = name.split(":")
        sc = task.holdout(arch, 24, int(seed))[int(index)]
    else:
        sc = task.find(arch, name)
    inputs = task.make_inputs(sc, 7, "cuda")
    outputs = task.new_outputs(sc, inputs, "cuda")
    for _ in range(2):
        torch.cuda.nvtx.range_push(f"ours {sc.name}")
        status = call(sc, inputs, outputs, stream)
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print(f"ours     {sc.name}: status {status}  {sc.params}", flush=True)
    if baseline.unavailable:
        print(f"baseline {baseline.unavailable}", flush=True)
        continue
    for _ in range(2):
        torch.cuda.nvtx.range_push(f"{baseline.name} {sc.name}")
        baseline.run(sc, inputs)
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print(f"{baseline.name:8s} {sc.name}", flush=True)
