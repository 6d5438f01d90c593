"""Static instruction counts of a kernel's main loop, from its SASS: what a key block costs a warp.

    python benchmarks/sass_loop_stats.py KERNEL.cubin [FUNCTION_SUBSTRING ...]

Build the cubin first (`nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -cubin -o k.cubin
kernels/hopper/flash_attn_fwd/flash_attn_fwd.cu`). For every function whose mangled name contains one of the substrings
(default: every fa_fwd_sm90 instantiation without the varlen schedule), it finds the main loop (the
backward branch whose body holds the most HGMMA, under 1500 instructions), lists the conditional forward
branches inside it with the instructions each skips and what they are (softcap: MUFU.TANH; the O
rescale: FMUL only; a barrier's spin: a few; the mask: the rest), and prints the loop's size, its
common path (no softcap, no mask; with and without the rescale) and an opcode histogram; before them,
the prologue a tile runs before its first product (first barrier to first HGMMA) and its IABS, one an
emulated integer division.
cuobjdump comes from $CUOBJDUMP, the PATH, or the pip package nvidia-cuda-cuobjdump.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys

INSTR = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
BRANCH = re.compile(r"^(@!?U?P\w+\s+)?BRA\s.*?(0x[0-9a-f]+)")


def cuobjdump() -> str:
    found = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    if not found:
        try:
            import nvidia.cu13  # type: ignore[import-not-found]  # pip install nvidia-cuda-cuobjdump

            found = os.path.join(list(nvidia.cu13.__path__)[0], "bin", "cuobjdump")
        except ImportError:
            pass
    if not found or not os.path.exists(found):
        sys.exit("cuobjdump was not found: set $CUOBJDUMP, put it on the PATH, or pip install nvidia-cuda-cuobjdump")
    return found


def functions(tool: str, cubin: str) -> list[str]:
    if not os.path.isfile(cubin):
        sys.exit(f"{cubin}: no such file; build it with nvcc -cubin (see --help)")
    done = subprocess.run([tool, "-elf", cubin], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{cubin}: cuobjdump could not read it ({(done.stderr.strip().splitlines() or ['no message'])[-1]})")
    return sorted(set(re.findall(r"\.text\.(\S+)", done.stdout)))


def instructions(tool: str, cubin: str, name: str) -> list[tuple[int, str]]:
    sass = subprocess.run([tool, "-sass", "-fun", name, cubin], capture_output=True, text=True, check=True).stdout
    return [(int(m.group(1), 16), m.group(2)) for m in map(INSTR.match, sass.splitlines()) if m]


def opcode(text: str) -> str:
    words = text.split()
    return (words[1] if words[0].startswith("@") else words[0]).split(".")[0]


def main_loop(ins: list[tuple[int, str]]) -> tuple[int, int] | None:
    best = None
    for addr, text in ins:
        m = BRANCH.match(text)
        if m and int(m.group(2), 16) < addr:
            lo = int(m.group(2), 16)
            body = [t for a, t in ins if lo <= a <= addr]
            hg = sum(opcode(t) == "HGMMA" for t in body)
            if hg and len(body) < 1500 and (best is None or (hg, -len(body)) > (best[0], -best[1])):
                best = (hg, len(body), lo, addr)
    return (best[2], best[3]) if best else None


def kind(inside: list[str]) -> str:
    """What a branch-skipped region of the loop is, by its instructions."""
    ops = [opcode(x) for x in inside]
    if any("MUFU.TANH" in x for x in inside):
        return "softcap"
    if ops and ops.count("FMUL") >= 0.9 * len(ops):
        return "O rescale"
    if len(ops) <= 12:
        return "barrier spin"
    return "mask"


def prologue(ins: list[tuple[int, str]]) -> str:
    """The code a tile runs before its first product: from the CTA's first barrier (the one after the
    barriers' set-up) to the first HGMMA, every branch counted (a tile takes one decode order)."""
    bars = [a for a, t in ins if opcode(t) == "BAR"]
    first = next((a for a, t in ins if opcode(t) == "HGMMA"), None)
    if not bars or first is None or first < bars[0]:
        return "  prologue: no barrier before the first HGMMA"
    body = [t for a, t in ins if bars[0] < a < first]
    divisions = sum(opcode(t) == "IABS" for t in body)
    return f"  prologue (first barrier to first HGMMA): {len(body)} instructions, {divisions} IABS (emulated divisions)"


def report(ins: list[tuple[int, str]]) -> None:
    print(prologue(ins))
    loop = main_loop(ins)
    if loop is None:
        print("  no loop with HGMMA")
        return
    lo, hi = loop
    body = [(a, t) for a, t in ins if lo <= a <= hi]
    skipped = collections.Counter()
    for addr, text in body:
        m = BRANCH.match(text)
        if m and m.group(1) and addr < int(m.group(2), 16) <= hi + 16:
            inside = [t for a, t in body if addr < a < int(m.group(2), 16)]
            what = kind(inside)
            skipped[what] += len(inside)
            print(f"  branch at {addr:#x} skips {len(inside):4d} instructions: {what}")
    hg = sum(opcode(t) == "HGMMA" for _, t in body)
    common = len(body) - skipped["softcap"] - skipped["mask"] - skipped["barrier spin"]
    line = f"  loop {lo:#x}-{hi:#x}: {len(body)} instructions, {hg} HGMMA; common path (no softcap, no mask): {common}"
    if skipped["O rescale"]:
        line += f", {common - skipped['O rescale']} where the rescale is skipped"
    print(line)
    hist = collections.Counter(opcode(t) for _, t in body)
    print("  opcodes (whole loop): " + ", ".join(f"{k} {v}" for k, v in hist.most_common(24)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cubin")
    ap.add_argument("names", nargs="*", help="substrings of mangled function names (default: fa_fwd_sm90 without VS)")
    args = ap.parse_args()
    tool = cuobjdump()
    names = args.names or ["fa_fwd_sm90"]
    for fn in functions(tool, args.cubin):
        if any(n in fn for n in names) and not (not args.names and fn.endswith("Lb1EEEv14CUtensorMap_stS1_S1_S1_NS_6ParamsE")):
            print(fn)
            report(instructions(tool, args.cubin, fn))
    return 0


if __name__ == "__main__":
    sys.exit(main())
