"""Every GPU fault fixture judged in one process on the H200, as a table (the harness alive after all).

    python benchmarks/fault_table.py benchmarks/results/faults-sm90.json

Runtime faults (tests/faults.py CUDA_WRAPPERS) run on two small scenarios; guard fixtures
(GUARD_WRAPPERS) must be refused before anything runs; `comment_cutlass` and the seed under a planted
build-cache library must be judged correct. Each row: the fixture, the reason expected, the verdict and
its reasons, and whether the expected reason was given.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from faults import CUDA_WRAPPERS, GUARD_WRAPPERS, PASSING_WRAPPERS, fake_cutlass, write_fault  # noqa: E402

from kernelseek.harness import BuildError, build_kernel, judge, load_task  # noqa: E402

SMALL = "ragged_d64_113x203*"  # two small scenarios: causal and not
SEED = ROOT / "kernels/seeds/flash_attn_fwd.cu"


def row(kind: str, path: Path, expected: str | None) -> dict:
    verdict = judge("flash_attn_fwd", path, "sm90", scenarios=SMALL, timeout_s=20, beside=False)
    reasons = [verdict.reason or ""] + [s.get("reason") or "" for s in verdict.scenarios]
    caught = verdict.correct if expected is None else (not verdict.correct and any(expected in r for r in reasons))
    return {"fixture": kind, "expected": expected or "correct", "correct": verdict.correct, "caught": caught,
            "scenarios_run": len(verdict.scenarios), "reasons": [r for r in reasons if r][:3],
            "wall_s": verdict.wall_s}


def _build(path: Path):  # noqa: ANN202 - a BuildResult
    """As the judge builds for the task (its forbidden libraries are part of the cache key)."""
    return build_kernel(path, "sm90", forbidden_libraries=load_task("flash_attn_fwd").forbidden_libraries)


def _try_build(path: Path) -> None:
    try:
        _build(path)
    except BuildError:
        pass


def planted_cache_row(folder: Path) -> dict:
    """Plant another kernel's library under the seed's cache entry: the seed must be rebuilt and pass."""
    nan_fixture, _ = write_fault("nan", folder)
    library = Path(_build(SEED).library)
    shutil.copyfile(_build(nan_fixture).library, library)
    result = row("planted_cache_library", SEED, None)
    result["expected"] = "correct (rebuilt from the recorded source)"
    return result


def main(out: str) -> int:
    started = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CPATH"] = str(fake_cutlass(Path(tmp) / "include"))
        kinds = [*sorted(CUDA_WRAPPERS), *sorted(GUARD_WRAPPERS), *sorted(PASSING_WRAPPERS)]
        fixtures = {kind: write_fault(kind, Path(tmp)) for kind in kinds}
        with ThreadPoolExecutor(8) as pool:  # build them all at once (the guard's refusals are the rows' job)
            list(pool.map(lambda kind: _try_build(fixtures[kind][0]), kinds))
        for kind in kinds:
            path, expected = fixtures[kind]
            rows.append(row(kind, path, expected))
            print(f"{kind:22} {'ok ' if rows[-1]['caught'] else 'MISSED'} {rows[-1]['reasons'][:1]}", flush=True)
        rows.append(planted_cache_row(Path(tmp)))
        print(f"planted_cache_library  {'ok ' if rows[-1]['caught'] else 'MISSED'}", flush=True)
    report = {"command": "python " + " ".join(sys.argv), "rows": rows, "all_caught": all(r["caught"] for r in rows),
              "wall_s": round(time.perf_counter() - started, 1)}
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(report, indent=1))
    print("\n| fixture | expected | verdict | caught |\n|---|---|---|---|")
    for r in rows:
        verdict = "correct" if r["correct"] else (r["reasons"][-1] if r["reasons"] else "incorrect")[:90]
        print(f"| {r['fixture']} | {r['expected']} | {verdict} | {'yes' if r['caught'] else 'NO'} |")
    return 0 if report["all_caught"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/faults-sm90.json"))
