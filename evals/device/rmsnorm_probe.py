"""Issue 18 on an H200: why torch.compile's error on a one-row add_rmsnorm scenario sat far below one bf16
rounding (the bound that failed the seed), and what the floor's bandwidth is by each way of streaming.
Prints, for a few scenarios and input seeds: the output dtypes, the errors of torch.compile, of the eager
bf16 reference and of the float32 reference rounded once, against the float32 reference; then the
bandwidth of a captured copy and of a captured elementwise kernel over 1 GiB.
    python evals/device/rmsnorm_probe.py"""

import torch

from kernelseek.harness.task import load_task
from kernelseek.harness.timing import capture, time_graphs

task = load_task("evals/tasks/add_rmsnorm")
compiled, eager = (b for b in task.baselines("sm90"))
for name in ("odd_h1000_r1", "decode_h4096_r1", "odd_h1000_r4096"):
    scenario = task.find("sm90", name)
    for seed in range(3):
        inputs = task.make_inputs(scenario, seed, "cuda")
        reference = task.reference(scenario, inputs)
        once = {k: v.to(torch.bfloat16) for k, v in reference.items()}
        rows = {"torch_compile": compiled.run(scenario, inputs), "eager": eager.run(scenario, inputs), "fp32-once": once}
        torch.cuda.synchronize()
        dtypes = {k: str(v.dtype) for k, v in rows["torch_compile"].items()}
        line = " ".join(f"{who}: out_max {task.errors(scenario, out, reference)['out_max']:.4f}" for who, out in rows.items())
        print(f"{name} seed {seed}: absmax {task.errors(scenario, once, reference)['out_ref_absmax']:.2f} "
              f"compile dtypes {dtypes} | {line}")

nbytes = 1 << 30
src = torch.ones(nbytes // 4, device="cuda")
dst = torch.empty_like(src)
ways = {"copy_": lambda: dst.copy_(src), "neg kernel": lambda: torch.neg(src, out=dst),
        "bf16 add kernel": lambda: torch.add(src.view(torch.bfloat16), 0, out=dst.view(torch.bfloat16))}
for way in ways.values():
    way()
timed = time_graphs({k: capture(v) for k, v in ways.items()}, 1, budget_s=0.5)
for k, t in timed.items():
    print(f"{k}: {2 * nbytes / t.median_s / 1e12:.2f} TB/s (read + written, median of {t.trials})")
