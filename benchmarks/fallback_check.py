"""The Hopper kernel's paths off the common case, checked against the reference on an H200: varlen batches
with fewer query rows than one TMA box (the host cannot tell from the maxima; v39 runs them in the
fallback, v40 in the main kernel with its maps bound to the true totals on the device), and ordinary
shapes whose inputs sit 2 bytes off a 16-byte boundary (no TMA map: the fallback alone). Keys span
several of the fallback's 32-key chunks; causal rows see different numbers of keys, or none.

    python3 benchmarks/fallback_check.py KERNEL.cu            # exit 1 if any shape is wrong
    compute-sanitizer --tool racecheck python3 benchmarks/fallback_check.py KERNEL.cu
"""
import ctypes
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelseek.harness import build_kernel, load_task  # noqa: E402
from kernelseek.harness.task import Scenario  # noqa: E402


def shape(name: str, **params) -> Scenario:
    base = {"batch": 1, "heads_q": 4, "heads_kv": 4, "causal": False, "softcap": 0.0, "layout": "contiguous",
            "magnitude": 1.0}
    base.update(params)
    if base["layout"] == "varlen":
        base.update(batch=len(base["seqlens_q"]), seqlen_q=max(base["seqlens_q"]), seqlen_k=max(base["seqlens_k"]))
    return Scenario(name, "fallback", base)


SMALL_VARLEN = [  # total query rows < 128, fewer than one Q box
    shape("varlen_d128_causal_long_keys", layout="varlen", head_dim=128, heads_q=4, heads_kv=2, causal=True,
          seqlens_q=[3, 0, 41], seqlens_k=[700, 5, 90]),
    shape("varlen_d96_softcap", layout="varlen", head_dim=96, heads_q=3, heads_kv=1, softcap=20.0, magnitude=2.0,
          seqlens_q=[1, 30], seqlens_k=[33, 64]),
    shape("varlen_d256_empty_keys", layout="varlen", head_dim=256, heads_q=2, heads_kv=2, causal=True,
          seqlens_q=[5, 9, 2], seqlens_k=[0, 40, 3]),
]
MISALIGNED = [  # any shape: inputs 2 bytes off 16
    shape("odd_d64_causal", head_dim=64, batch=2, seqlen_q=77, seqlen_k=300, causal=True),
    shape("odd_d256_rows_without_keys", head_dim=256, heads_q=2, heads_kv=1, seqlen_q=130, seqlen_k=65, causal=True),
    shape("odd_d192_softcap", head_dim=192, heads_q=2, heads_kv=2, seqlen_q=9, seqlen_k=1000, softcap=30.0,
          magnitude=2.0),
]


def shifted(t: torch.Tensor) -> torch.Tensor:
    """The same values, 2 bytes past a 16-byte boundary."""
    buf = torch.empty(t.numel() + 8, dtype=t.dtype, device=t.device)
    out = buf[1:1 + t.numel()].view(t.shape)
    out.copy_(t)
    return out


def main() -> int:
    task = load_task("flash_attn_fwd")
    lib = ctypes.CDLL(build_kernel(sys.argv[1], "sm90", forbidden_libraries=task.forbidden_libraries).library)
    call = task.bind(lib)
    bad = 0
    for sc, move in [(s, False) for s in SMALL_VARLEN] + [(s, True) for s in MISALIGNED]:
        inputs = task.make_inputs(sc, 11, "cuda")
        if move:
            inputs.update({key: shifted(inputs[key].contiguous()) for key in ("q", "k", "v")})
        outputs = task.new_outputs(sc, inputs, "cuda")
        for t in outputs.values():
            t.fill_(float("nan"))
        status = call(sc, inputs, outputs, torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        reference = task.reference(sc, inputs)
        errors = task.errors(sc, outputs, reference)
        unwritten = sum(int(torch.isnan(t).sum()) for t in outputs.values() if t.is_floating_point())
        why = (f"status {status}" if status else f"{unwritten} outputs unwritten" if unwritten else
               task.within_tolerance(errors, task.fallback_errors(sc, inputs, reference)))
        bad += why is not None
        print(f"{sc.name:34s} {'ok' if why is None else 'WRONG: ' + why}  out_max {errors.get('out_max', 0):.2e}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
