"""CPU model of add_rmsnorm v3's launcher and accesses: v2's model (add_rmsnorm_v2_model.py), with the
cluster rule of v3 (`cluster_ranks`, `launch_cluster`) and each cluster CTA's share of a row.

v2's checks then hold for v3 too: every element of every row is read or written exactly once per pass,
by one thread (the threads of a cluster's CTAs numbered apart), aligned, inside its row; every row is
covered by exactly one cluster; and, on the small scenarios, the outputs through the ownership map meet
the task's tolerance. What it adds for clusters: rows x ranks <= SMs, 2 <= ranks <= 8, every CTA of a
cluster holds at least one chunk, and no CTA holds more chunks than its threads x V.

Run from the repository root:  PYTHONPATH=$PWD python kernels/hopper/versions/add_rmsnorm_v3_model.py
(--no-sweep: without v2's sweep of alignments and sizes, which takes most of the time;
--min-row-bytes=98304: v5's rule, the same partition from rows of 96 KB up).
"""

from __future__ import annotations

import importlib.util
import random
import sys
from dataclasses import dataclass
from pathlib import Path

_spec = importlib.util.spec_from_file_location("v2", Path(__file__).with_name("add_rmsnorm_v2_model.py"))
v2 = importlib.util.module_from_spec(_spec)
sys.modules["v2"] = v2  # its dataclasses look their module up
_spec.loader.exec_module(v2)

MAX_CLUSTER = 8  # kMaxCluster
CLUSTER_MIN_ROW_BYTES = 32 << 10  # kClusterMinRowBytes
CLUSTER_MIN_CHUNKS = 64  # kClusterMinChunks
clusters_seen: list[tuple[int, int, int]] = []  # (rows, hidden, ranks) of every cluster launch checked


@dataclass
class Launch(v2.Launch):
    ranks: int = 1  # CTAs sharing a row (a cluster); 1: one CTA or warp a row, as v2


def cluster_ranks(rows: int, vecs: int, res: bool) -> int:
    row_bytes = (10 if res else 6) * 8 * vecs
    if rows >= v2.SMS or row_bytes < CLUSTER_MIN_ROW_BYTES:
        return 1
    ranks = min(MAX_CLUSTER, v2.SMS // rows, vecs // CLUSTER_MIN_CHUNKS)
    return ranks if ranks > 1 else 1


def launcher(rows, hidden, ptrs, strides, res):
    launch = v2_launcher(rows, hidden, ptrs, strides, res)
    if not isinstance(launch, v2.Launch) or launch.kernel != "vec" or launch.any or launch.warp_rows:
        return launch
    vecs = hidden // 8
    ranks = cluster_ranks(rows, vecs, res)
    if ranks == 1:
        return launch
    per = (vecs + ranks - 1) // ranks
    v = 1 if per <= v2.max_threads(1) else 2
    threads = ((per + v - 1) // v + 31) // 32 * 32
    return Launch("vec", False, v, False, threads, rows * ranks, ranks)


def row_accesses(launch, hidden, row_starts, res):
    ranks = getattr(launch, "ranks", 1)
    if ranks == 1:
        yield from v2_row_accesses(launch, hidden, row_starts, res)
        return
    chunks = hidden >> 3
    per = (chunks + ranks - 1) // ranks
    names = ["x", "weight", "out"] + (["residual", "residual_out"] if res else [])
    for rank in range(ranks):
        first = min(rank * per, chunks)
        mine = min(per, chunks - first)
        v2.check(mine >= 1, f"rank {rank} of {ranks} holds no chunk of {chunks}")
        v2.check(mine <= launch.threads * launch.v, f"rank {rank}: {mine} chunks for {launch.threads} x V={launch.v}")
        for t in range(launch.threads):
            for i in range(launch.v):
                c = t + i * launch.threads
                if c >= mine:
                    continue
                for name in names:
                    base = row_starts[name] + 2 * 8 * (first + c)
                    yield (name, base, 16, rank * launch.threads + t,
                           "write" if name in ("out", "residual_out") else "read")


def check_grid(launch, rows, hidden, label):
    ranks = getattr(launch, "ranks", 1)
    if ranks == 1:
        return v2_check_grid(launch, rows, hidden, label)
    v2.check(launch.grid == rows * ranks, f"{label}: grid {launch.grid} != rows {rows} x {ranks}")
    v2.check(2 <= ranks <= MAX_CLUSTER and rows * ranks <= v2.SMS, f"{label}: {ranks} CTAs a row, {rows} rows")
    v2.check(launch.threads % 32 == 0 and 32 <= launch.threads <= v2.max_threads(launch.v),
             f"{label}: {launch.threads} threads at V={launch.v}")
    clusters_seen.append((rows, hidden, ranks))


v2_launcher, v2_row_accesses, v2_check_grid = v2.launcher, v2.row_accesses, v2.check_grid
v2.launcher, v2.row_accesses, v2.check_grid = launcher, row_accesses, check_grid


def cluster_sweep(seed: int) -> None:
    """Aligned rows around the cluster rule's edges: chunk counts that the ranks do not divide (the last
    CTA holds fewer), rows near SMs / 8 and SMs / 2, every residual kind, strides with padding."""
    rng = random.Random(seed)
    count = 0
    for hidden in (3272, 3280, 3288, 4096, 4104, 5120, 7168, 8200, 12288, 13824, 16376):
        for rows in (1, 2, 3, 16, 17, 33, 65, 66, 67, 131):
            kind = rng.choice(("separate", "none", "inplace"))
            res = kind != "none"
            strides = [hidden + 8 * rng.randrange(3) for _ in range(4)]
            bases = [0x7F0000000000 + 0x10000000 * k for k in range(5)]
            if kind == "inplace":
                bases[4], strides[3] = bases[1], strides[1]
            v2.check_case(rows, hidden, strides, res, bases, f"cluster sweep h{hidden} r{rows} {kind} {strides}")
            count += 1
    print(f"cluster sweep: {count} aligned cases around the rule's edges")


def main() -> int:
    global CLUSTER_MIN_ROW_BYTES
    for arg in [a for a in sys.argv[1:] if a.startswith("--min-row-bytes=")]:
        CLUSTER_MIN_ROW_BYTES = int(arg.split("=", 1)[1])
        sys.argv.remove(arg)
    try:
        cluster_sweep(seed=5)
    except v2.Violation as v:
        print(f"VIOLATION: {v}")
        return 1
    status = v2.main()
    if status == 0:
        shapes = sorted({(r, h, k) for r, h, k in clusters_seen})
        print(f"clusters: {len(clusters_seen)} launches checked, e.g. "
              + ", ".join(f"rows {r} hidden {h}: {k} CTAs a row" for r, h, k in shapes[:6]))
        if not clusters_seen:
            print("VIOLATION: no case took a cluster; the model checked nothing of v3")
            return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
