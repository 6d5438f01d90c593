"""A digest of the compiled code: what the compiler made of the candidate.

GPU targets: per kernel, registers, spills, shared memory and stack frame from the ptxas report the
harness's build keeps (no GPU and no cuobjdump needed), and the SASS instruction mix from
`cuobjdump --dump-sass` on the built library when cuobjdump is found. The CPU target: the x86
instruction mix of the task's entry point from `objdump -d`.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from kernelseek.toolrich.common import Timeout, find_tool, last_lines, run_limited

# SASS opcode -> category; the first matching prefix wins, so longer prefixes come first.
SASS_CATEGORIES: list[tuple[str, tuple[str, ...]]] = [
    ("tensor core", ("HGMMA", "QGMMA", "IGMMA", "BGMMA", "HMMA", "IMMA", "DMMA", "BMMA", "UTCHMMA", "UTCQMMA",
                     "UTCIMMA", "UTCMMA", "WARPGROUP")),
    ("bulk copy / TMA", ("UTMALDG", "UTMASTG", "UTMAPF", "UTMACCTL", "UTMACMDFLUSH", "UBLKCP", "UBLKRED",
                         "UBLKPF", "UTCBAR", "UTCCP")),
    ("shared memory", ("LDSM", "STSM", "LDS", "STS", "ATOMS", "LDGSTS")),
    ("global / local memory", ("LDG", "STG", "LDL", "STL", "LD", "ST", "ATOMG", "ATOM", "RED", "CCTL")),
    ("constant load", ("LDC", "ULDC")),
    ("synchronization", ("BAR", "SYNCS", "MEMBAR", "DEPBAR", "ARRIVES", "ELECT", "ERRBAR", "FENCE", "UCGABAR")),
    ("special function", ("MUFU",)),
    ("fp32 / fp16 arithmetic", ("FFMA", "FADD", "FMUL", "FMNMX", "FSETP", "FSEL", "FSET", "FCHK", "FRND", "FSWZADD",
                                "HFMA2", "HADD2", "HMUL2", "HMNMX2", "HSETP2", "DFMA", "DADD", "DMUL")),
    ("conversion", ("F2FP", "F2F", "F2I", "I2F", "I2FP", "F2IP")),
    ("warp shuffle / vote", ("SHFL", "VOTE", "MATCH", "REDUX")),
    ("control", ("BRA", "BRX", "JMP", "JMX", "EXIT", "RET", "CALL", "BSSY", "BSYNC", "WARPSYNC", "BPT", "YIELD",
                 "NANOSLEEP", "KILL", "BMOV", "ACQBULK")),
    ("register moves", ("MOV", "UMOV", "S2R", "S2UR", "CS2R", "R2UR", "P2R", "R2P", "PRMT", "UPRMT", "SEL", "USEL",
                        "PLOP3", "UPLOP3")),
    ("integer arithmetic", ("IMAD", "IADD", "VIADD", "LOP", "SHF", "SHL", "SHR", "ISETP", "LEA", "IMNMX", "VIMNMX",
                            "IABS", "POPC", "FLO", "BREV", "IMUL", "UIMAD", "UIADD", "ULOP", "USHF", "UISETP", "ULEA",
                            "USHL", "USHR", "UFLO", "UPOPC", "UBREV", "IDP", "IDX")),
    ("no-op", ("NOP",)),
]

_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-fA-F]{4,}\*/\s+(?:\{\s*)?(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Za-z0-9_]+)*)")


def sass_category(opcode: str) -> str:
    for category, prefixes in SASS_CATEGORIES:
        if opcode.startswith(prefixes):
            return category
    return "other"


def parse_sass(text: str) -> dict[str, Counter]:
    """Opcode counts (base opcode, modifiers dropped) per function of `cuobjdump --dump-sass` output."""
    functions: dict[str, Counter] = {}
    current: Counter | None = None
    for line in text.splitlines():
        if m := _FUNCTION.match(line):
            current = functions.setdefault(m.group(1), Counter())
        elif current is not None and (m := _INSTRUCTION.match(line)):
            current[m.group(1)] += 1
    return functions


def describe_mix(counts: Counter, top: int = 12) -> list[str]:
    total = sum(counts.values())
    if not total:
        return ["  (no instructions)"]
    by_category: Counter = Counter()
    for opcode, n in counts.items():
        by_category[sass_category(opcode)] += n
    lines = [f"  {total} instructions; by category: " +
             ", ".join(f"{c} {n} ({100 * n / total:.0f}%)" for c, n in by_category.most_common())]
    lines.append("  most frequent: " + ", ".join(f"{op} {n}" for op, n in counts.most_common(top)))
    return lines


def _resources(resources: list[dict]) -> list[str]:
    if not resources:
        return ["registers/spills/shared memory: the ptxas report names no kernel (was the library built with -v?)"]
    lines = ["per kernel, from the ptxas report:"]
    for r in resources:
        lines.append(f"  {r['kernel']} ({r.get('target')}): {r.get('registers')} registers, "
                     f"{r.get('smem_bytes', 0)} bytes static shared memory, {r.get('stack_frame', 0)} bytes stack "
                     f"frame, spills: {r.get('spill_stores', 0)} bytes stored / {r.get('spill_loads', 0)} bytes loaded")
        lines += [f"    ptxas: potential performance loss: {note}" for note in r.get("advisories", [])]
    return lines


def sass_mix(library: str | Path, timeout_s: float = 60.0) -> list[str]:
    tool = find_tool("cuobjdump")
    if not tool:
        return ["SASS instruction mix: unavailable: cuobjdump was not found (install the CUDA toolkit's cuobjdump, "
                "put it on PATH or set KERNELSEEK_CUOBJDUMP)"]
    try:
        proc = run_limited([tool, "--dump-sass", str(library)], timeout_s)
    except Timeout as error:
        return [f"SASS instruction mix: unavailable: {error}"]
    if proc.returncode != 0:
        return [f"SASS instruction mix: unavailable: cuobjdump failed: {last_lines(proc.stderr or proc.stdout)}"]
    functions = parse_sass(proc.stdout)
    if not functions:
        return ["SASS instruction mix: unavailable: cuobjdump found no SASS in the library"]
    lines = ["SASS instruction mix (cuobjdump --dump-sass):"]
    for name, counts in functions.items():
        lines.append(f" {name}:")
        lines += describe_mix(counts)
    return lines


_X86 = re.compile(r"^\s*[0-9a-f]+:\s+(?:[0-9a-f]{2}\s)*\s*([a-z][a-z0-9]*)", re.IGNORECASE)


def x86_mix(library: str | Path, entry_point: str, timeout_s: float = 60.0) -> list[str]:
    tool = find_tool("objdump")
    if not tool:
        return ["x86 instruction mix: unavailable: objdump was not found (install binutils)"]
    try:
        proc = run_limited([tool, "-d", "--no-show-raw-insn", str(library)], timeout_s)
    except Timeout as error:
        return [f"x86 instruction mix: unavailable: {error}"]
    if proc.returncode != 0:
        return [f"x86 instruction mix: unavailable: objdump failed: {last_lines(proc.stderr)}"]
    counts: Counter = Counter()
    inside = False
    for line in proc.stdout.splitlines():
        if line.endswith(">:"):
            inside = line.split("<", 1)[-1].startswith(entry_point + ">") if "<" in line else False
        elif inside and (m := _X86.match(line)):
            counts[m.group(1)] += 1
    if not counts:
        return [f"x86 instruction mix: unavailable: no function {entry_point} in the library"]
    total = sum(counts.values())
    vector = sum(n for op, n in counts.items() if op.startswith("v") or op.endswith(("ps", "pd")))
    fma = sum(n for op, n in counts.items() if "fmadd" in op or "fnmadd" in op)
    branches = sum(n for op, n in counts.items() if op.startswith("j"))
    division = sum(n for op, n in counts.items() if op.startswith(("div", "vdiv", "sqrt", "vsqrt", "vrsqrt", "vrcp")))
    return [f"x86 instruction mix of {entry_point} (objdump -d): {total} instructions; vector {vector} "
            f"({100 * vector / total:.0f}%), fused multiply-add {fma}, divide/sqrt {division}, branches {branches}",
            "  most frequent: " + ", ".join(f"{op} {n}" for op, n in counts.most_common(12))]


def code_digest(source: str | Path, arch: str, *, entry_point: str | None = None,
                forbidden_libraries: dict[str, str] | None = None, timeout_s: float = 60.0) -> str:
    """The digest of `source` built for `arch` by the harness (cached by content, as the judge builds it, with
    the task's `forbidden_libraries`)."""
    from kernelseek.harness import BuildError, build_kernel

    try:
        build = build_kernel(source, arch, forbidden_libraries=forbidden_libraries)
    except BuildError as error:
        return f"unavailable: the candidate does not build, so there is no compiled code to digest: {error}"
    lines = [f"compiled code of {Path(source).name} for {arch} (library {build.library})"]
    if arch == "cpu":
        lines += x86_mix(build.library, entry_point or "", timeout_s) if entry_point else \
            ["x86 instruction mix: unavailable: the task names no entry point"]
    else:
        lines += _resources(build.resources)
        lines += sass_mix(build.library, timeout_s)
    return "\n".join(lines)
