"""Check the tool-rich graph's profiler and compiled-code tools on a GPU: run on the H200.

    PYTHONPATH=$PWD python3 benchmarks/toolrich_check.py [--out DIR]

Builds the seed kernel kernels/seeds/flash_attn_fwd.cu for sm90 through the harness, then prints a short
sample of what the worker would get from `compiled_code` (ptxas registers/spills/smem and the SASS
instruction mix from cuobjdump) and from `profile` (Nsight Compute on the task's first quick scenario).
The full answers go to DIR/compiled_code.txt and DIR/profile.txt. Needs torch, nvcc, cuobjdump and ncu
(all on the H200 image); runs in well under a minute. Exit status 0 when both tools returned real data.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def sample(text: str, lines: int) -> str:
    body = text.splitlines()
    more = f"\n  [... {len(body) - lines} more lines]" if len(body) > lines else ""
    return "\n".join(line[:220] for line in body[:lines]) + more


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.environ.get("OUT", "/tmp/toolrich-check"))
    parser.add_argument("--arch", default="sm90")
    parser.add_argument("--profile-timeout", type=float, default=90.0)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    from kernelseek.toolrich import code_digest, profile_summary
    from kernelseek.toolrich.common import find_tool

    seed = ROOT / "kernels" / "seeds" / "flash_attn_fwd.cu"
    task = ROOT / "evals" / "tasks" / "flash_attn_fwd"
    print(f"tools: nvcc {find_tool('nvcc')}, cuobjdump {find_tool('cuobjdump')}, ncu {find_tool('ncu')}", flush=True)

    began = time.monotonic()
    digest = code_digest(seed, args.arch, timeout_s=60)
    (out / "compiled_code.txt").write_text(digest)
    print(f"\n=== compiled_code ({time.monotonic() - began:.1f} s) ===\n{sample(digest, 14)}", flush=True)

    began = time.monotonic()
    profile = profile_summary(seed, args.arch, task, timeout_s=args.profile_timeout)
    (out / "profile.txt").write_text(profile)
    print(f"\n=== profile ({time.monotonic() - began:.1f} s) ===\n{sample(profile, 16)}", flush=True)

    digest_ok = "SASS instruction mix (cuobjdump" in digest and "registers" in digest
    profile_ok = not profile.startswith("unavailable") and "kernel " in profile
    print(f"\ncompiled_code real data: {digest_ok}; profile real data: {profile_ok}")
    return 0 if digest_ok and profile_ok else 1


if __name__ == "__main__":
    sys.exit(main())
