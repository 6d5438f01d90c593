"""Run a flash_attn_fwd kernel once on small scenarios of every feature, for compute-sanitizer.

    compute-sanitizer --tool memcheck  python3 evals/device/sanitize.py KERNEL.cu
    compute-sanitizer --tool racecheck python3 evals/device/sanitize.py KERNEL.cu

Builds KERNEL for sm90 through the harness, calls it through the task's own binding on the task's
tiny scenarios plus a few small suite scenarios, and checks that every output element was written.
The sanitizer reports the bad accesses; this script's exit status says whether the outputs were whole.
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelseek.harness import build_kernel, load_task  # noqa: E402

SMALL = ("ragged_d64_113x203_causal", "ragged_d128_239x1", "ragged_d256_799x3_causal", "hdim_d96_s1024_causal",
         "decode_d64_q4_k1024_causal", "varlen_d64_mixed_causal", "softcap_d64_s2048", "strided_d128_s2048")


def main(kernel: str) -> int:
    task = load_task("flash_attn_fwd")
    call = task.bind(ctypes.CDLL(build_kernel(kernel, "sm90").library))
    scenarios = task.scenarios("tiny") + [task.find("sm90", name) for name in SMALL]
    bad = 0
    for scenario in scenarios:
        inputs = task.make_inputs(scenario, 7, "cuda")
        outputs = task.new_outputs(scenario, inputs, "cuda")
        status = call(scenario, inputs, outputs, torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        unwritten = sum(int(torch.isnan(t).sum()) for t in outputs.values())
        bad += status != 0 or unwritten > 0
        print(f"{scenario.name:34s} status {status}  unwritten {unwritten}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
