"""A CPU model of add_rmsnorm v2's launcher (kernels/hopper/add_rmsnorm.cu) and of every thread's
memory accesses, to check its alignment logic without a GPU.

The model transliterates, line by line, the parts of the .cu that decide what is accessed: the work rule
of ks_add_rmsnorm (which kernel, V, threads, grid), and in add_rmsnorm_vec the row's head, its chunks,
each pointer's access width (chunk_width), the extra elements and their owners. For every scenario it
checks, for each row it simulates:
  - every element of every row of x, the residual, out and residual_out, and of the weight, is read or
    written exactly once per pass that needs it, by one thread (in place: the same thread reads and then
    writes an element of the residual);
  - every access of W bytes is at an address that is a multiple of W, and none leaves the row's own
    elements (so none leaves the tensor);
  - every row < rows is processed by exactly one warp or CTA, and no thread works on a row >= rows.
Then, on the small scenarios, it computes the outputs through the same ownership map (inputs from
task.make_inputs, on the CPU) into NaN-poisoned buffers and judges them with the task's own tolerance
against its float32 reference.

Run from the repository root:  PYTHONPATH=$PWD python kernels/hopper/versions/add_rmsnorm_v2_model.py
(--variant-b: the work rule of the variant with kShortRowsToWarps = false; --no-sweep: without the
sweep, which takes most of its ~16 minutes). It prints one line per family of cases and exits non-zero at the first violation. The base addresses
come from torch (its allocations are 256-byte aligned), plus, in the sweep, any 2-byte offset of each
pointer, so that rows of every alignment of every pointer (the weight included) are covered.
"""

from __future__ import annotations

import itertools
import random
import sys
from dataclasses import dataclass

import torch

from evals.tasks.add_rmsnorm import scenarios as suites
from evals.tasks.add_rmsnorm.task import TASK

SMS = 132  # the H200's multiprocessors (multiprocessors() in the .cu)
WARP_ROWS_PER_CTA = 8
SHORT_ROWS_TO_WARPS = "--variant-b" not in sys.argv  # kShortRowsToWarps; add_rmsnorm_v2b sets it false


def max_threads(v: int) -> int:
    return 1024 if v <= 2 else 512


@dataclass
class Launch:
    kernel: str  # "vec" or "wide"
    any: bool
    v: int
    warp_rows: bool
    threads: int
    grid: int


def aligned(addr: int, stride_elems: int, nbytes: int) -> bool:
    return ((addr | (stride_elems * 2)) & (nbytes - 1)) == 0


def launcher(rows, hidden, ptrs, strides, res) -> Launch | int:
    """ks_add_rmsnorm's decisions; ptrs: byte addresses of x, residual, weight, out, residual_out."""
    x, r, w, o, ro = ptrs
    xs, rs, os_, ros = strides
    if rows == 0 and hidden >= 1:
        return 0
    if rows < 0 or hidden < 1:
        return 1
    if any(p % 2 for p in (x, w, o) + ((r, ro) if res else ())):
        return 1
    vecs = hidden // 8
    if vecs > 8 * max_threads(8):
        return Launch("wide", True, 0, False, 512, rows)
    any_ = not (hidden % 8 == 0 and aligned(x, xs, 16) and aligned(w, 0, 16) and aligned(o, os_, 16)
                and (not res or (aligned(r, rs, 16) and aligned(ro, ros, 16))))
    short_rows = vecs <= 32 * 4
    warp_rows = SHORT_ROWS_TO_WARPS and short_rows and rows >= WARP_ROWS_PER_CTA * SMS
    threads = 32
    if warp_rows:
        v = 1 if vecs <= 32 else 2 if vecs <= 64 else 4
    elif short_rows:
        v = 1
        threads = (vecs + 31) // 32 * 32 or 32
    else:
        few_rows = rows < SMS

        def limit(v):
            return max_threads(v) if few_rows else 512

        v = 1 if few_rows else 2
        while v < 8 and (vecs + v - 1) // v > limit(v):
            v *= 2
        threads = ((vecs + v - 1) // v + 31) // 32 * 32
        if threads > max_threads(v):
            return 3
    grid = (rows + WARP_ROWS_PER_CTA - 1) // WARP_ROWS_PER_CTA if warp_rows else rows
    return Launch("vec", any_, v, warp_rows, 32 * WARP_ROWS_PER_CTA if warp_rows else threads, grid)


def chunk_width(addr: int) -> int:
    a = (addr | 16) & 0xFFFFFFFF
    return a & (-a & 0xFFFFFFFF)


class Violation(AssertionError):
    pass


def check(cond: bool, what: str):
    if not cond:
        raise Violation(what)


def row_accesses(launch: Launch, hidden: int, row_starts: dict[str, int], res: bool):
    """Every access one row's warp or CTA makes: (tensor, byte address, bytes, thread, pass), where pass
    is 'read' (x, residual, weight) or 'write' (residual_out, out). row_starts: byte address of the row in
    x, residual, out, residual_out (the weight's is its base)."""
    lanes = 32 if launch.warp_rows else launch.threads
    xr = row_starts["x"]
    if launch.kernel == "wide":
        for t in range(lanes):
            for c in range(t, hidden, lanes):
                yield ("x", xr + 2 * c, 2, t, "read")
                if res:
                    yield ("residual", row_starts["residual"] + 2 * c, 2, t, "read")
                    yield ("residual_out", row_starts["residual_out"] + 2 * c, 2, t, "write")
                    yield ("residual_out", row_starts["residual_out"] + 2 * c, 2, t, "reread")
                yield ("weight", row_starts["weight"] + 2 * c, 2, t, "read")
                yield ("out", row_starts["out"] + 2 * c, 2, t, "write")
        return
    if launch.any:
        head = min(((0 - (xr >> 1)) & 0xFFFFFFFF) & 7, hidden)  # (0u - (xr >> 1)) & 7u, then min
        chunks = (hidden - head) >> 3
    else:
        head, chunks = 0, hidden >> 3
    # RES == false: rr points at x and ror at out; neither is accessed then
    starts = {k: row_starts[k] + 2 * head for k in ("x", "residual", "weight", "out", "residual_out") if k in row_starts}
    widths = {k: (chunk_width(a) if launch.any else 16) for k, a in starts.items()}
    names = ["x", "weight", "out"] + (["residual", "residual_out"] if res else [])
    for t in range(lanes):
        for i in range(launch.v):
            c = t + i * lanes
            if c >= chunks:
                continue
            for name in names:
                width = widths[name]
                base = starts[name] + 16 * c
                for k in range(16 // width):
                    yield (name, base + k * width, width, t, "write" if name in ("out", "residual_out") else "read")
        extras = hidden - 8 * chunks if launch.any else 0
        if t < extras:
            e = t if t < head else t + 8 * chunks
            for name in names:
                yield (name, row_starts[name] + 2 * e, 2, t, "write" if name in ("out", "residual_out") else "read")


def check_row(launch, hidden, row_starts, res, label):
    """The properties of one row's accesses (see the module's docstring)."""
    owner: dict[tuple[str, str, int], int] = {}
    for name, addr, width, t, kind in row_accesses(launch, hidden, row_starts, res):
        check(addr % width == 0, f"{label}: {name} access of {width} bytes at {addr:#x} is misaligned")
        lo = row_starts[name]
        check(lo <= addr and addr + width <= lo + 2 * hidden,
              f"{label}: {name} access [{addr - lo}, {addr - lo + width}) bytes leaves the row of {2 * hidden} bytes")
        for b in range(addr, addr + width, 2):
            key = (name, kind, (b - lo) // 2)
            check(key not in owner, f"{label}: {name} element {(b - lo) // 2} {kind} twice (threads {owner.get(key)}, {t})")
            owner[key] = t
    names = ["x", "weight", "out"] + (["residual", "residual_out"] if res else [])
    for name in names:
        kind = "write" if name in ("out", "residual_out") else "read"
        for e in range(hidden):
            check((name, kind, e) in owner, f"{label}: {name} element {e} never {kind}")
    if res:  # in place or not: the residual element a thread writes is one it read itself
        for e in range(hidden):
            check(owner[("residual", "read", e)] == owner[("residual_out", "write", e)],
                  f"{label}: residual element {e} read by one thread, written by another")
    return owner


def check_grid(launch: Launch, rows: int, hidden: int, label: str):
    if launch.warp_rows:
        covered = [cta * WARP_ROWS_PER_CTA + w for cta in range(launch.grid) for w in range(WARP_ROWS_PER_CTA)]
        covered = [r for r in covered if r < rows]  # the others return at once
    else:
        covered = list(range(launch.grid))
        check(launch.grid == rows, f"{label}: grid {launch.grid} != rows {rows}")
        check(launch.threads % 32 == 0 and 32 <= launch.threads <= 1024, f"{label}: {launch.threads} threads")
        if launch.kernel == "vec":
            check(launch.threads <= max_threads(launch.v), f"{label}: threads above the kernel's launch bound")
    check(sorted(covered) == list(range(rows)), f"{label}: rows not each covered once")
    if launch.kernel == "vec":
        lanes = 32 if launch.warp_rows else launch.threads
        check(lanes * launch.v >= hidden // 8, f"{label}: {lanes} threads x V={launch.v} hold fewer than {hidden // 8} chunks")


def sample_rows(rows: int) -> list[int]:
    """Row alignments repeat every 8 rows (strides are whole elements): the first 16 and the last 8."""
    return sorted(set(range(min(rows, 16))) | set(range(max(rows - 8, 0), rows)))


def check_case(rows, hidden, strides, res, bases, label):
    """bases: byte addresses of x, residual, weight, out, residual_out; strides: x, residual, out, residual_out."""
    launch = launcher(rows, hidden, bases, strides, res)
    if rows == 0:
        check(launch == 0, f"{label}: rows 0 must return 0")
        return None
    check(isinstance(launch, Launch), f"{label}: the launcher refused the case ({launch})")
    check_grid(launch, rows, hidden, label)
    x, r, w, o, ro = bases
    for row in sample_rows(rows):
        starts = {"x": x + 2 * row * strides[0], "weight": w, "out": o + 2 * row * strides[2]}
        if res:
            starts["residual"] = r + 2 * row * strides[1]
            starts["residual_out"] = ro + 2 * row * strides[3]
        check_row(launch, hidden, starts, res, f"{label} row {row}")
    return launch


def scenario_case(s, bases=None):
    p = s.params
    res = p["residual"] != "none"
    strides = list(p["strides"])
    if bases is None:  # torch's allocations: 256-byte aligned, each tensor its own
        bases = [0x7F0000000000 + 0x10000000 * k for k in range(5)]
        if p["residual"] == "inplace":
            bases[4] = bases[1]
    return p["rows"], p["hidden"], strides, res, bases


def check_scenarios(scens, family):
    kinds = {}
    for s in scens:
        rows, hidden, strides, res, bases = scenario_case(s)
        launch = check_case(rows, hidden, strides, res, bases, s.name)
        if launch:
            kinds[s.name] = launch
    print(f"{family}: {len(scens)} scenarios, every sampled row checked")
    return kinds


def check_numerics(s):
    """The outputs through the model's ownership map, judged by the task's tolerance on the CPU."""
    p = s.params
    rows, hidden = p["rows"], p["hidden"]
    res = p["residual"] != "none"
    inputs = TASK.make_inputs(s, seed=1, device="cpu")
    outputs = TASK.new_outputs(s, inputs, "cpu")
    x, w = inputs["x"], inputs["weight"]
    resid = inputs.get("residual")
    if p["residual"] == "inplace":
        outputs["residual_out"].copy_(resid)
        resid = outputs["residual_out"]
    before = resid.clone() if res else None
    strides = [x.stride(0), resid.stride(0) if res else 0, outputs["out"].stride(0),
               outputs["residual_out"].stride(0) if res else 0]
    ptrs = [x.data_ptr(), resid.data_ptr() if res else 0, w.data_ptr(), outputs["out"].data_ptr(),
            outputs["residual_out"].data_ptr() if res else 0]
    launch = launcher(rows, hidden, ptrs, strides, res)
    if rows == 0:
        check(launch == 0, f"{s.name}: rows 0 must return 0")
        return
    for row in range(rows):
        starts = {"x": ptrs[0] + 2 * row * strides[0], "weight": ptrs[2], "out": ptrs[3] + 2 * row * strides[2]}
        if res:
            starts["residual"] = ptrs[1] + 2 * row * strides[1]
            starts["residual_out"] = ptrs[4] + 2 * row * strides[3]
        owner = check_row(launch, hidden, starts, res, f"{s.name} row {row}")
        # the math of add_rmsnorm_vec, element by element (the sum's order aside)
        xf = x[row].float()
        h = (xf + before[row].float()).to(torch.bfloat16) if res else x[row]
        hf = h.float()
        scale = torch.rsqrt((hf * hf).sum() / hidden + p["eps"])
        out = (hf * scale * w.float()).to(torch.bfloat16)
        for e in range(hidden):  # written only where the map says a thread writes
            if ("out", "write", e) in owner:
                outputs["out"][row, e] = out[e]
            if res and ("residual_out", "write", e) in owner:
                outputs["residual_out"][row, e] = h[e]
    found = TASK.errors(s, outputs, TASK.reference(s, inputs))
    allowed = TASK.fallback_errors(s, inputs, TASK.reference(s, inputs))
    verdict = TASK.within_tolerance(found, allowed)
    check(verdict is None, f"{s.name}: {verdict}")


def sweep(n_random: int, seed: int):
    """Every hidden 1..80 and sizes around the chunk and rule boundaries, strides hidden + 0..9, each
    pointer at a random 2-byte offset (the weight too), every residual kind."""
    rng = random.Random(seed)
    hiddens = list(range(1, 81)) + [255, 256, 257, 767, 768, 1000, 1001, 1023, 1024, 1025, 1031, 1032, 1033,
                                    2047, 4095, 4096, 4097, 4099, 8191, 16383, 32767, 32768, 32775, 32776, 32777]
    count = 0
    for hidden, pad, kind in itertools.product(hiddens, range(10), ("separate", "none", "inplace")):
        if hidden > 4096 and rng.random() < 0.8:
            continue  # the wide ones are slow in Python: a sample
        rows = rng.choice((1, 3, 7, 131, 132, 1055, 1056, 5000))
        res = kind != "none"
        pads = [rng.choice((pad, 0, 1, 2, 3, 8)) for _ in range(4)]
        strides = [hidden + q for q in pads]
        bases = [0x7F0000000000 + 0x10000000 * k + 2 * rng.randrange(8) for k in range(5)]
        if rng.random() < 0.5:
            bases[2] = 0x7F0000000000 + 0x10000000 * 2  # the weight aligned, as torch allocates it
        if kind == "inplace":
            bases[4], strides[3] = bases[1], strides[1]
        check_case(rows, hidden, strides, res, bases, f"sweep h{hidden} strides{strides} {kind} bases%16="
                   f"{[b % 16 for b in bases]}")
        count += 1
    for _ in range(n_random):
        hidden = rng.randrange(1, 3000)
        rows = rng.randrange(1, 3000)
        res = rng.random() < 0.7
        strides = [hidden + rng.randrange(0, 20) for _ in range(4)]
        bases = [0x7F0000000000 + 0x10000000 * k + 2 * rng.randrange(8) for k in range(5)]
        check_case(rows, hidden, strides, res, bases, f"random h{hidden} r{rows} strides{strides}")
        count += 1
    print(f"sweep: {count} cases (hidden 1..80 and boundary sizes, random strides and 2-byte offsets)")


def check_odd_pointers():
    check(launcher(4, 64, [1, 0, 0, 0, 0], [64] * 4, False) == 1, "an odd-byte x must be refused")
    check(launcher(0, 64, [0] * 5, [64] * 4, True) == 0, "rows 0 returns 0 before any pointer check")
    print("refusals: odd-byte pointers refused, rows 0 returns 0")


def main() -> int:
    try:
        suite = check_scenarios(suites.sm90(), "suite sm90")
        check_scenarios(suites.sanitize("sm90"), "sanitizer suite")
        check_scenarios(suites.tiny(), "tiny")
        for seed in (1, 2, 3):
            check_scenarios(suites.holdout("sm90", 24, seed), f"hold-out seed {seed}")
        check_odd_pointers()
        if "--no-sweep" not in sys.argv:
            sweep(300, seed=18)
        small = [s for s in suites.sanitize("sm90")  # the tiny scenarios and the small ones
                 if s.params["rows"] * s.params["hidden"] <= 400_000 and s.params["rows"] <= 400]
        for s in small:
            check_numerics(s)
        print(f"numerics: {len(small)} small scenarios within the task's tolerance through the model's map: "
              + ", ".join(s.name for s in small))
    except Violation as v:
        print(f"VIOLATION: {v}")
        return 1
    print("the launches of the suite's misaligned and odd scenarios:")
    for name, launch in suite.items():
        if name.startswith(("odd", "unaligned", "decode_h1024")):
            print(f"  {name:36s} {'ANY' if launch.any else 'aligned'} V={launch.v} "
                  f"{'warp rows' if launch.warp_rows else 'CTA rows'} threads={launch.threads} grid={launch.grid}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
