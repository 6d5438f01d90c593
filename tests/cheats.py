"""Cheat fixtures: candidates that game a judge rather than fail it (tests/fixtures/cheats/README.md says what
each one does and what the judge must say about it)."""

from __future__ import annotations

import re
from pathlib import Path

CHEATS = Path(__file__).resolve().parent / "fixtures" / "cheats"
ROOT = CHEATS.parents[2]
# The device-flag memo is written into a task's seed kernel (one file, as every kernel is): the memo's code
# (memo_flag.inc) after the includes, `if (ks_memo_flag) return;` first in every __global__ function, and
# its one-thread pre-kernel launched on the call's stream just before the seed's own launch (the anchor).
MEMO_FLAG = {
    "flash_attn_fwd": ("kernels/seeds/flash_attn_fwd.cu", r"^  switch \(head_dim\) \{$",
                       "  memo_check<<<1, 1, 0, st>>>(static_cast<const unsigned char*>(q), 32, out);\n"
                       "  if (cudaGetLastError() != cudaSuccess) return 6;\n"),
    "add_rmsnorm": ("kernels/seeds/add_rmsnorm.cu", r"^    add_rmsnorm_row<<<",
                    "    memo_check<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(\n"
                    "        static_cast<const unsigned char*>(x), hidden < 16 ? 2 * hidden : 32, out);\n"),
}


def cheat(name: str, tmp_path: Path, skip_every: int | None = None) -> Path:
    """The rmsnorm_cpu cheat `name` ("memo_skip.cpp", or its stem) as a kernel file in `tmp_path`: the seed kernel
    with its entry point renamed `seed_impl` (the arithmetic a cheat calls when it does compute), then the
    fixture; with `skip_every`, `#define SKIP_EVERY n` first (the memo cheats read that macro)."""
    path = CHEATS / (name if name.endswith(".cpp") else f"{name}.cpp")
    if not path.is_file():
        raise FileNotFoundError(f"no cheat fixture named {name!r} in {CHEATS}")
    text = path.read_text()
    if skip_every is not None and "SKIP_EVERY" not in text:
        raise ValueError(f"{path.name} takes no SKIP_EVERY")
    seed = (ROOT / "kernels/seeds/rmsnorm_cpu.cpp").read_text().replace("ks_rmsnorm", "seed_impl")
    variant = Path(tmp_path) / f"{path.stem}_skip{skip_every or 1}.cpp"
    variant.write_text((f"#define SKIP_EVERY {int(skip_every)}\n" if skip_every else "") + seed + "\n" + text)
    return variant


def memo_flag(task: str, tmp_path: Path, skip_every: int | None = None) -> Path:
    """`task`'s seed kernel with the device-flag memo written in (see MEMO_FLAG), skipping every `skip_every`-th
    repeated call (every one by default), as a file in `tmp_path`."""
    seed, anchor, launch = MEMO_FLAG[task]
    lines = (ROOT / seed).read_text().splitlines(keepends=True)
    last_include = max(i for i, line in enumerate(lines) if line.startswith("#include"))
    out, in_signature = [], False
    for i, line in enumerate(lines):
        if re.match(anchor, line):
            out.append("  // the cheat: the memo's pre-kernel first, on the same stream\n" + launch)
        out.append(line)
        in_signature = in_signature or line.lstrip().startswith("__global__")
        if in_signature and line.rstrip().endswith("{"):
            out.append('  if (ks_memo_flag) return;  // the cheat: "already computed"\n')
            in_signature = False
        if i == last_include:
            out.append("\n" + (CHEATS / "memo_flag.inc").read_text())
    text = "".join(out)
    if text.count("memo_check<<<") != 1 or "if (ks_memo_flag)" not in text:
        raise ValueError(f"{seed} changed: the memo's anchors ({anchor!r}, a __global__ function) are not found")
    path = Path(tmp_path) / f"{task}_memo_flag_skip{skip_every or 1}.cu"
    path.write_text((f"#define SKIP_EVERY {int(skip_every)}\n" if skip_every else "") + text)
    return path
