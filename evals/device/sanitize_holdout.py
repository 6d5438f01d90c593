"""sanitize.py's scenarios plus the hold-out shapes (seed 1) that take v12's and v15's own paths (a GQA
group of 5 packed into one tile; a d256 decode split 16 ways; causal rows that see no key, filled by
fa_fill_empty), for compute-sanitizer:

    compute-sanitizer --tool racecheck python3 evals/device/sanitize_holdout.py KERNEL.cu
"""
import ctypes
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelseek.harness import build_kernel, load_task  # noqa: E402

SMALL = ("ragged_d64_113x203_causal", "ragged_d128_239x1", "ragged_d256_799x3_causal", "hdim_d96_s1024_causal",
         "decode_d64_q4_k1024_causal", "varlen_d64_mixed_causal", "softcap_d64_s2048", "strided_d128_s2048")

task = load_task("flash_attn_fwd")
call = task.bind(ctypes.CDLL(build_kernel(sys.argv[1], "sm90", forbidden_libraries=task.forbidden_libraries).library))
extra = [s for s in task.holdout("sm90", 24, 1) if any(t in s.name for t in ("_05_", "_08_", "_11_", "_17_"))]
scenarios = task.scenarios("tiny") + [task.find("sm90", n) for n in SMALL] + extra
bad = 0
for sc in scenarios:
    inputs = task.make_inputs(sc, 7, "cuda")
    outputs = task.new_outputs(sc, inputs, "cuda")
    status = call(sc, inputs, outputs, torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    unwritten = sum(int(torch.isnan(t).sum()) for t in outputs.values())
    bad += status != 0 or unwritten > 0
    print(f"{sc.name:50s} status {status} unwritten {unwritten}")
sys.exit(1 if bad else 0)
