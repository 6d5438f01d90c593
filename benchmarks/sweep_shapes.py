"""Time a kernel beside the task's headline baseline on shapes given on the command line: an
exploration tool to separate what a slow scenario's shape does (its length, its GQA ratio, its mask)
from the rest, one variable at a time. Not a judgement: no correctness check beyond the largest
difference from the baseline's output, printed beside each time; `kernelseek eval` is the judge.

    python3 benchmarks/sweep_shapes.py KERNEL.cu sm90 d128:h16/16:b8:q600:k600:causal d128:h40/8:b11:q719 ...

A shape is HEAD_DIM, heads q/kv, batch, seqlen_q, seqlen_k, then `causal` or nothing, joined by `:`.
Each shape's two calls are captured in CUDA graphs (CALLS calls a replay, default 10) and replayed in
turn, as the judge times them.
"""
import ctypes
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kernelseek.harness import build_kernel, load_task  # noqa: E402
from kernelseek.harness.task import Scenario  # noqa: E402
from kernelseek.harness.timing import capture, time_graphs  # noqa: E402


def parse(spec: str) -> Scenario:
    fields = spec.split(":")
    try:
        d, heads, b, q, k = fields[:5]
        if fields[5:] not in ([], ["causal"]):
            raise ValueError(fields[5:])
        hq, hkv = heads[1:].split("/")
        params = {"head_dim": int(d[1:]), "heads_q": int(hq), "heads_kv": int(hkv), "batch": int(b[1:]),
                  "seqlen_q": int(q[1:]), "seqlen_k": int(k[1:]), "causal": fields[5:] == ["causal"],
                  "softcap": 0.0, "magnitude": 1.0, "layout": "contiguous"}
    except ValueError:
        sys.exit(f"sweep_shapes: cannot read shape {spec!r}; write it as d128:h16/16:b8:q600:k600[:causal]")
    return Scenario(spec, "sweep", params)


def time_shape(task, ours, baseline, sc: Scenario, calls: int) -> tuple[float, float, float]:
    """Microseconds a call of ours and of the baseline, and the largest difference of their outputs."""
    inputs = task.make_inputs(sc, 7, "cuda")
    outputs = task.new_outputs(sc, inputs, "cuda")
    ways = {"ours": lambda: ours(sc, inputs, outputs, torch.cuda.current_stream().cuda_stream),
            "base": lambda: baseline.run(sc, inputs)}
    status = ways["ours"]()
    if status != 0:
        raise RuntimeError(f"the kernel returned status {status} on {sc.name}")
    diff = (outputs["out"].float() - baseline.run(sc, inputs)["out"].float()).abs().max().item()
    graphs = {name: capture(lambda way=way: [way() for _ in range(calls)]) for name, way in ways.items()}
    timed = time_graphs(graphs, calls, budget_s=0.4)
    return timed["ours"].median_s * 1e6, timed["base"].median_s * 1e6, diff


def main() -> None:
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    kernel, arch, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
    shapes = [parse(spec) for spec in specs]
    calls = int(os.environ.get("CALLS", "10"))
    task = load_task("flash_attn_fwd")
    ours = task.bind(ctypes.CDLL(build_kernel(kernel, arch, forbidden_libraries=task.forbidden_libraries).library))
    baseline = task.baselines(arch)[0]
    print(f"{'shape':40s} {'ours us':>9s} {baseline.name + ' us':>9s} {'speedup':>8s} {'max diff':>9s}")
    for sc in shapes:
        try:
            t, tb, diff = time_shape(task, ours, baseline, sc, calls)
        except RuntimeError as error:  # a refused shape or a failed capture: say so, go on with the next
            print(f"{sc.name:40s} {error}", flush=True)
            continue
        print(f"{sc.name:40s} {t:9.1f} {tb:9.1f} {tb / t:8.3f} {diff:9.2e}", flush=True)


if __name__ == "__main__":
    main()
