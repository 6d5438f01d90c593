"""The profiler's summary of the candidate: Nsight Compute on one scenario of the task.

The harness builds the candidate (cached by content, as the judge builds it); `ncu` then runs
`kernelseek.toolrich.profile_driver` in a child process with a time limit, profiling only the
candidate's own kernels (their names come from the build's ptxas report), and the CSV it prints is
condensed into a few lines per kernel: launch shape, the headline metrics of each section, and the
rules' advice. Without a GPU, without ncu, or when ncu cannot read the counters, the answer is one line
"unavailable: <why>".
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sys
import tempfile
from pathlib import Path

from kernelseek.toolrich.common import Timeout, find_tool, last_lines, run_limited

SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis",
            "WarpStateStats", "SchedulerStats")
# the metrics shown first, per section, when present (others follow up to a limit)
HEADLINE = ("Duration", "Compute (SM) Throughput", "Memory Throughput", "DRAM Throughput", "L1/TEX Hit Rate",
            "L2 Hit Rate", "Achieved Occupancy", "Theoretical Occupancy", "Registers Per Thread",
            "Dynamic Shared Memory Per Block", "Static Shared Memory Per Block", "Block Limit Registers",
            "Block Limit Shared Mem", "Executed Ipc Active", "Issue Slots Busy",
            "Warp Cycles Per Issued Instruction", "Eligible Warps Per Scheduler", "No Eligible",
            "Mem Busy", "Max Bandwidth", "SM Busy", "Waves Per SM", "Local Memory Spilling Requests")
GPU_ARCHS = ("sm90", "sm100")


def gpu_unavailable(arch: str) -> str | None:
    """Why the candidate cannot be profiled here, or None."""
    if arch not in GPU_ARCHS:
        return f"the profiler needs a GPU target and this run's target is {arch}"
    if not find_tool("ncu"):
        return ("Nsight Compute (ncu) was not found; install it, put it on PATH or set KERNELSEEK_NCU")
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "this machine has no usable CUDA GPU"
    return None


def _kernel_filter(resources: list[dict]) -> list[str]:
    names = sorted({r["kernel"] for r in resources if r.get("kernel")})
    if not names:
        return []
    return ["--kernel-name-base", "mangled", "--kernel-name",
            "regex:^(" + "|".join(re.escape(n) for n in names) + ")$"]


def parse_ncu_csv(text: str) -> list[dict]:
    """The rows of `ncu --csv --page details` (lines before the header, e.g. ==PROF== notes, are skipped)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    body = "\n".join(line for line in lines[start:] if line.startswith('"'))
    return list(csv.DictReader(io.StringIO(body)))


def summarize(rows: list[dict], per_section: int = 6) -> list[str]:
    """A few lines per kernel: launch shape, the headline metrics of each section, the rules' advice.
    A kernel launched several times is shown once (its last launch)."""
    launches: dict[str, list[dict]] = {}
    for row in rows:
        launches.setdefault(row.get("ID", "?"), []).append(row)
    kernels: dict[str, tuple[list[dict], int]] = {}
    for krows in launches.values():
        name = krows[0].get("Kernel Name", "?")
        kernels[name] = (krows, kernels.get(name, ([], 0))[1] + 1)
    order = {m: i for i, m in enumerate(HEADLINE)}
    lines: list[str] = []
    for name, (krows, count) in kernels.items():
        first = krows[0]
        times = f" ({count} launches profiled, the last shown)" if count > 1 else ""
        lines.append(f"kernel {name[:120]}: grid {first.get('Grid Size', '?')}, block {first.get('Block Size', '?')}{times}")
        sections: dict[str, list[dict]] = {}
        rules: list[str] = []
        for row in krows:
            if row.get("Metric Name"):
                sections.setdefault(row.get("Section Name", "?"), []).append(row)
            if row.get("Rule Description"):
                speedup = row.get("Estimated Speedup") or ""
                rules.append(f"[{row.get('Rule Name', '')}{', est. ' + speedup + '%' if speedup else ''}] "
                             f"{row['Rule Description'].strip()[:300]}")
        for section, srows in sections.items():
            headline = sorted((r for r in srows if r["Metric Name"] in order), key=lambda r: order[r["Metric Name"]])
            others = [r for r in srows if r["Metric Name"] not in order]
            chosen = (headline + others[:max(0, 3 - len(headline))])[:per_section]
            metrics = "; ".join(f"{r['Metric Name']} {r.get('Metric Value', '')}"
                                f"{(' ' + r['Metric Unit']) if r.get('Metric Unit') else ''}" for r in chosen)
            lines.append(f"  {section}: {metrics}")
        for rule in dict.fromkeys(rules):
            lines.append(f"  advice {rule}")
    return lines


def profile_summary(source: str | Path, arch: str, task: str | Path, *, scenario: str | None = None,
                    timeout_s: float = 180.0, sections: tuple[str, ...] = SECTIONS,
                    forbidden_libraries: dict[str, str] | None = None) -> str:
    """Nsight Compute's summary of `source` built for `arch`, run on one scenario of `task` (the first quick
    one unless named). Never raises for an unusable machine or kernel: the answer says why."""
    problem = gpu_unavailable(arch)
    if problem:
        return f"unavailable: {problem}."
    from kernelseek.harness import BuildError, build_kernel

    try:
        build = build_kernel(source, arch, forbidden_libraries=forbidden_libraries)
    except BuildError as error:
        return f"unavailable: the candidate does not build, so it cannot be profiled: {error}"
    ncu = find_tool("ncu")
    assert ncu
    with tempfile.TemporaryDirectory(prefix="kernelseek-profile-") as tmp:
        spec = Path(tmp) / "spec.json"
        spec.write_text(json.dumps({"task": str(Path(task).resolve()), "library": build.library, "arch": arch,
                                    "scenario": scenario, "seed": 0}))
        command = [ncu, "--csv", "--page", "details", "--target-processes", "all", "--launch-count", "4",
                   *[a for s in sections for a in ("--section", s)], *_kernel_filter(build.resources),
                   sys.executable, "-m", "kernelseek.toolrich.profile_driver", str(spec)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_repo()), os.environ.get("PYTHONPATH")]))}
        try:
            proc = run_limited(command, timeout_s, cwd=tmp, env=env)
        except Timeout as error:
            return f"unavailable: {error}; the candidate may hang (judge it with evaluate)."
    output = proc.stdout + "\n" + proc.stderr
    rows = parse_ncu_csv(proc.stdout)
    if not rows:
        if "ERR_NVGPUCTRPERM" in output:
            return "unavailable: ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM)."
        if "No kernels were profiled" in output:
            return ("unavailable: ncu profiled no kernel of the candidate (did it launch one? driver said: "
                    f"{last_lines(_driver_line(proc.stdout) or output, 2)}).")
        return f"unavailable: ncu produced no profile (exit status {proc.returncode}): {last_lines(output)}"
    driver = _driver_line(proc.stdout)
    head = f"Nsight Compute on {Path(source).name} ({arch})"
    if driver:
        head += f", scenario {driver.get('scenario')} {driver.get('params')}"
        if any(driver.get("statuses") or []):
            head += f" (the entry point returned {driver['statuses']}: the kernel may not have run)"
    return "\n".join([head + ":", *summarize(rows)])


def _driver_line(stdout: str) -> dict | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith('{"scenario"'):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def _repo() -> Path:
    return Path(__file__).resolve().parent.parent.parent
