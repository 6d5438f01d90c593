"""Whether two builds of a kernel file compile to the same machine code: a refactor that needs no GPU.

    python benchmarks/sass_same.py OLD.cu NEW.cu [--arch sm_90a]

Both files are compiled as the harness compiles them (nvcc -O3), their SASS is read with cuobjdump and
compared function by function, modulo register numbers (ptxas may rename registers between two equal
programs). Exit 0 and "same" when every function's instructions match in order; otherwise the functions
that differ, each with its instruction counts and first differing line. cuobjdump as in sass_loop_stats.py.
A change that removes a kernel parameter's field moves the fields after it: --param-shift 0x508:-8 reads
OLD's parameter offsets (constant bank 0) from 0x508 up as 8 bytes lower, so that only that move is forgiven.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from sass_loop_stats import INSTR, cuobjdump

FUNCTION = re.compile(r"\s+Function : (\S+)")
REGISTER = re.compile(r"\bU?R\d+\b")
PARAM = re.compile(r"c\[0x0\]\[(0x[0-9a-f]+)\]")


def shift_params(instr: str, start: int, delta: int) -> str:
    """`instr` with every constant-bank-0 offset at or past `start` moved by `delta`."""
    def moved(m: re.Match) -> str:
        offset = int(m.group(1), 16)
        return f"c[0x0][{hex(offset + delta) if offset >= start else m.group(1)}]"
    return PARAM.sub(moved, instr)


def sass(source: str, arch: str, tool: str, folder: Path) -> dict[str, list[str]]:
    """Each function's instructions, registers written as R (U)R."""
    if not Path(source).is_file():
        sys.exit(f"{source}: no such file")
    obj = folder / (Path(source).stem + f"-{len(list(folder.iterdir()))}.o")
    built = subprocess.run(["nvcc", f"-gencode=arch=compute_{arch[3:]},code={arch}", "-O3", "-std=c++17", "-c",
                            source, "-o", str(obj)], capture_output=True, text=True)
    if built.returncode != 0:
        sys.exit(f"{source}: nvcc failed:\n{built.stderr[-2000:]}")
    out: dict[str, list[str]] = {}
    current = None
    for line in subprocess.run([tool, "-sass", str(obj)], capture_output=True, text=True, check=True).stdout.splitlines():
        if m := FUNCTION.match(line):
            current = out.setdefault(m.group(1), [])
        elif current is not None and (m := INSTR.match(line)):
            current.append(REGISTER.sub(lambda r: "UR" if r.group().startswith("U") else "R", m.group(2)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--arch", default="sm_90a", help="the SASS target (default sm_90a)")
    parser.add_argument("--param-shift", metavar="OFFSET:DELTA",
                        help="read OLD's parameter offsets from OFFSET up as moved by DELTA bytes (a removed field)")
    args = parser.parse_args()
    tool = cuobjdump()
    with tempfile.TemporaryDirectory() as tmp:
        old, new = sass(args.old, args.arch, tool, Path(tmp)), sass(args.new, args.arch, tool, Path(tmp))
    if args.param_shift:
        try:
            start, delta = (int(x, 0) for x in args.param_shift.split(":"))
        except ValueError:
            sys.exit(f"--param-shift {args.param_shift}: give OFFSET:DELTA, e.g. 0x508:-8")
        old = {name: [shift_params(i, start, delta) for i in instrs] for name, instrs in old.items()}
    differ = 0
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if a == b:
            continue
        differ += 1
        if a is None or b is None:
            print(f"{name}: only in {'new' if a is None else 'old'}")
            continue
        first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        print(f"{name}: {len(a)} -> {len(b)} instructions; first difference at {first}: "
              f"{a[first] if first < len(a) else '(end)'} | {b[first] if first < len(b) else '(end)'}")
    print("same" if not differ else f"{differ} of {len(set(old) | set(new))} functions differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
