"""The memory-safety gate: the candidate under compute-sanitizer, on the task's sanitizer suite.

A kernel can be right on every checked element and still read out of bounds, race on shared memory or
read memory nobody wrote: right today, wrong on another GPU, driver or input. `sanitize()` builds the
candidate (with `-lineinfo`, as every build, so findings name file and line), then runs one child per
tool under `compute-sanitizer --tool T` with a time limit: memcheck (out-of-bounds and misaligned
accesses, API errors), racecheck (shared-memory hazards), initcheck (reads of uninitialised global
memory) and synccheck (barrier misuse, wgmma sequences on sm_90a). The child
(`kernelseek.harness.sanitize_child`) calls the candidate once per scenario of the task's
`sanitizer_scenarios(arch)`: small shapes of every feature, because the tools slow a kernel 10-1000x.

Each tool's verdict is `clean`, `findings` (its first reports, with file:line), `timeout` or `failed`
(the tool or the child ended without the tool's summary, or the child saw a bad status or unwritten
outputs). The gate passes only when every tool is clean. memcheck, racecheck and synccheck check the
candidate's own kernels only (`--kernel-name kne=` per kernel the build reported), so torch's kernels
are neither slowed nor judged; initcheck checks every kernel, because a write made by an unchecked
kernel would not count as initialising memory, and reports that name only other code (no candidate
kernel, not the candidate's file) are counted apart, not against the candidate. Allocations are not
cached by torch in the child, so each tensor is its own allocation and memcheck sees an overrun at the
tensor's end.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernelseek.harness import runner
from kernelseek.harness.build import TARGETS, build_kernel
from kernelseek.harness.device import gpu_problem
from kernelseek.harness.sanitizer_log import Finding, demangle, parse
from kernelseek.harness.task import Task, TaskError, load_task
from kernelseek.procs import kill_group

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
GPU_ARCHS = ("sm90", "sm100")
UNFILTERED = ("initcheck",)  # sees every kernel: see the module docstring
DEFAULT_TIMEOUT_S = 300.0
PRINT_LIMIT = 20  # reports each tool prints (its summary still counts them all)
KEEP_FINDINGS = 5  # reports kept per tool in the verdict
FINDINGS_EXIT = 86  # compute-sanitizer's exit status when the program succeeded but the tool found errors
_STAGED = re.compile(r"\bkernel\.\d+\.(?:cu|cpp)\b")  # the name build.py compiles the candidate under


class SanitizerUnavailable(ValueError):
    """The sanitizer gate cannot run here; the message says why in one sentence."""


def find_sanitizer(env: dict[str, str] | None = None) -> str | None:
    """compute-sanitizer on PATH, else in the CUDA toolkit ($CUDA_HOME, nvcc's folder, /usr/local/cuda)."""
    env = os.environ if env is None else env
    found = shutil.which("compute-sanitizer", path=env.get("PATH", ""))
    if found:
        return found
    homes = [env.get("CUDA_HOME", ""), env.get("CUDA_PATH", "")]
    nvcc = shutil.which("nvcc", path=env.get("PATH", ""))
    if nvcc:
        homes.append(str(Path(os.path.realpath(nvcc)).parent.parent))
    homes.append("/usr/local/cuda")
    for home in filter(None, homes):
        for candidate in (Path(home) / "bin" / "compute-sanitizer", Path(home) / "compute-sanitizer" / "compute-sanitizer"):
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def sanitize_problem(arch: str) -> str | None:
    """Why the gate cannot run for `arch` on this machine (one sentence), or None."""
    if arch not in GPU_ARCHS:
        return (f"compute-sanitizer checks GPU kernels and the {arch} target has none; the sanitizer gate applies to "
                f"{' and '.join(GPU_ARCHS)}")
    if find_sanitizer() is None:
        return ("compute-sanitizer was not found on PATH, in $CUDA_HOME/bin or in /usr/local/cuda/bin, so the "
                "sanitizer gate cannot run here; install the CUDA toolkit's compute-sanitizer or leave out --sanitize")
    problem = gpu_problem(arch)
    return f"{problem.split(';')[0]}; compute-sanitizer needs the GPU the kernel is for" if problem else None


def has_sanitizer_suite(task: str | Path | Task, arch: str) -> bool:
    """Whether the task names sanitizer scenarios for `arch` (Task.sanitizer_scenarios)."""
    try:
        loaded = task if isinstance(task, Task) else load_task(task)
        return bool(loaded.sanitizer_scenarios(arch))
    except TaskError:
        return False


@dataclass
class ToolVerdict:
    tool: str
    status: str  # "clean" | "findings" | "timeout" | "failed"
    reason: str | None = None  # None when clean
    errors: int | None = None  # the tool's own count (racecheck: errors + warnings), None without a summary
    findings: list[dict] = field(default_factory=list)  # the first reports against the candidate
    outside: int = 0  # reports that name only other code (initcheck, torch's kernels): not counted
    scenarios_run: int = 0
    wall_s: float = 0.0
    log: str | None = None  # where its raw output was kept, if it was

    @property
    def passed(self) -> bool:
        return self.status == "clean"

    def line(self) -> str:
        if self.passed:
            extra = f"; {self.outside} reports in other code not counted" if self.outside else ""
            return f"{self.tool}: clean ({self.scenarios_run} scenarios, {self.wall_s:.0f} s{extra})"
        return f"{self.tool}: {self.status.upper()} ({self.wall_s:.0f} s): {self.reason}"


@dataclass
class SanitizerReport:
    kernel: str
    arch: str
    scenarios: list[str]
    tools: dict[str, ToolVerdict]
    sanitizer: str | None = None  # the tool's path and version
    wall_s: float = 0.0

    @property
    def passed(self) -> bool:
        return bool(self.tools) and all(v.passed for v in self.tools.values())

    @property
    def reason(self) -> str | None:
        """The first failing tool's reason, or None when every tool is clean."""
        failing = [v for v in self.tools.values() if not v.passed]
        if not failing:
            return None
        first = failing[0]
        others = f" (also {', '.join(v.tool for v in failing[1:])})" if failing[1:] else ""
        return f"compute-sanitizer {first.tool}: {first.reason}{others}"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(passed=self.passed, reason=self.reason)
        return data

    def summary(self) -> str:
        head = "sanitizer gate: " + ("passed" if self.passed else "FAILED")
        head += f" on {len(self.scenarios)} scenarios in {self.wall_s:.0f} s"
        return "\n".join([head, *("  " + v.line() for v in self.tools.values())])


def tools_for(arch: str, wanted: list[str] | None = None) -> list[str]:
    """The tools to run (all of TOOLS unless `wanted` names some); an unknown name is a ValueError."""
    if not wanted:
        return list(TOOLS)
    unknown = [t for t in wanted if t not in TOOLS]
    if unknown:
        raise ValueError(f"--sanitize-tools: unknown tool {', '.join(unknown)}; use some of {', '.join(TOOLS)}.")
    return [t for t in TOOLS if t in wanted]


def sanitizer_command(sanitizer: str, tool: str, log_path: Path, kernels: list[str], child: list[str]) -> list[str]:
    """The compute-sanitizer command line for one tool (see the module docstring for the filters)."""
    command = [sanitizer, "--tool", tool, "--log-file", str(log_path), "--error-exitcode", str(FINDINGS_EXIT),
               "--print-limit", str(PRINT_LIMIT), "--show-backtrace", "device", "--demangle", "no",
               "--target-processes", "application-only"]
    if tool in ("memcheck", "synccheck"):
        command += ["--destroy-on-device-error", "kernel"]  # a finding ends the kernel, not the process
    if tool not in UNFILTERED:
        for name in kernels:
            command += ["--kernel-name", f"kne={name}"]
    return [*command, "--", *child]


@dataclass
class Completed:
    returncode: int | None
    timed_out: bool


class ProcessSource:
    """Runs the sanitizer for real: the command in its own session, killed (with the child it started)
    past the time limit, when the judge is stopped, or when the judge dies."""

    def run(self, tool: str, command: list[str], log_path: Path, timeout_s: float, env: dict[str, str]) -> Completed:
        with open(log_path.with_suffix(".out"), "wb") as out:
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True, env=env, preexec_fn=runner._child_setup)
        with runner._live_lock:
            runner._live.add(proc)
        deadline = time.monotonic() + timeout_s
        try:
            while proc.poll() is None:
                if runner._stop.is_set():
                    raise runner.JudgementInterrupted("the judgement was stopped")
                if time.monotonic() > deadline:
                    return Completed(None, True)
                time.sleep(0.1)
            return Completed(proc.returncode, False)
        finally:
            kill_group(proc)
            proc.wait()
            with runner._live_lock:
                runner._live.discard(proc)


def _rename(text: str, display: str) -> str:
    return _STAGED.sub(display, text)


def _belongs(finding: Finding, kernels: set[str], display: str) -> bool:
    """False only for a report that names functions, none of them the candidate's, and no line of its file."""
    names = finding.functions()
    if not names or any(n in kernels for n in names):
        return True
    return bool(finding.where and finding.where.split(":")[0] == display)


def _read_results(path: Path) -> list[dict]:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def _child_problem(results: list[dict], expected: list[str]) -> str | None:
    """What went wrong in the child itself (not a tool's report), or None."""
    by_name = {r.get("scenario"): r for r in results}
    for name in expected:
        record = by_name.get(name)
        if record is None:
            return f"the child stopped before scenario {name} ({len(results)} of {len(expected)} run)"
        if record.get("error"):
            return f"{name}: {str(record['error'])[:300]}"
        if record.get("status") != 0:
            return f"{name}: the entry point returned {record.get('status')} under the sanitizer"
        if record.get("unwritten"):
            return f"{name}: {record['unwritten']} output elements were left unwritten under the sanitizer"
    return None


def verdict(tool: str, text: str, *, kernels: list[str], display: str, completed: Completed, results: list[dict],
            expected: list[str], timeout_s: float, wall_s: float = 0.0, tail: str = "") -> ToolVerdict:
    """One tool's verdict from what it printed (`text`, its log), how it ended and what the child recorded."""
    log = parse(text)
    known = set(kernels)
    for finding in log.findings:
        finding.where = _rename(finding.where, display) if finding.where else None
        finding.lines = [_rename(line, display) for line in finding.lines]
        finding.others = [_rename(other, display) for other in finding.others]
    own = [f for f in log.findings if _belongs(f, known, display)]
    outside = len(log.findings) - len(own)
    readable = demangle([name for f in own for name in ([f.kernel] if f.kernel else [])])
    for finding in own:
        if finding.kernel in readable:
            finding.kernel = readable[finding.kernel]
    done = len({r.get("scenario") for r in results} & set(expected))
    v = ToolVerdict(tool=tool, status="clean", errors=log.errors, outside=outside, scenarios_run=done,
                    wall_s=round(wall_s, 1), findings=[f.to_dict() for f in own[:KEEP_FINDINGS]])
    if own:
        count = log.errors if log.errors is not None else len(own)
        more = f" ({count} reported in all)" if count and count > 1 else ""
        v.status, v.reason = "findings", own[0].line() + more
    elif completed.timed_out:
        v.status = "timeout"
        v.reason = (f"did not finish within {timeout_s:.0f} s ({done} of {len(expected)} scenarios run); the child "
                    "was killed, so the kernel is not shown to be safe")
    elif log.errors is None:
        words = f": {tail}" if tail else ""
        v.status = "failed"
        v.reason = f"compute-sanitizer ended without its summary (exit status {completed.returncode}){words}"
    elif log.errors > outside:
        v.status, v.reason = "findings", f"the tool counted {log.errors} errors ({log.summary})"
    elif problem := _child_problem(results, expected):
        v.status, v.reason = "failed", problem
    return v


def _version(sanitizer: str) -> str:
    try:
        out = subprocess.run([sanitizer, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return sanitizer
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    return f"{sanitizer} ({lines[-1]})" if lines else sanitizer


def _tail(path: Path, limit: int = 400) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-3:])[-limit:]


def sanitize(task: str | Path | Task, kernel: str | Path, arch: str, *, tools: list[str] | None = None,
             timeout_s: float = DEFAULT_TIMEOUT_S, scenarios: str | None = None, log_dir: str | Path | None = None,
             source: Any = None, progress: Callable[[str], None] | None = None) -> SanitizerReport:
    """Run the gate; see the module docstring. `scenarios`: a glob over the sanitizer suite's names and
    groups; `log_dir`: keep each tool's raw output there (`<tool>.log`, and the child's `<tool>.out`);
    `source`: what runs the tool (ProcessSource unless given). Raises SanitizerUnavailable when the gate
    cannot run here, TaskError when the task names no sanitizer suite, BuildError when the build fails."""
    started = time.perf_counter()
    chosen_tools = tools_for(arch, tools)
    if source is None:
        problem = sanitize_problem(arch)
        if problem:
            raise SanitizerUnavailable(problem)
        source, sanitizer = ProcessSource(), find_sanitizer() or "compute-sanitizer"
        version = _version(sanitizer)
    else:
        sanitizer, version = "compute-sanitizer", getattr(source, "version", "a recorded source")
    task = task if isinstance(task, Task) else load_task(task)
    suite = task.sanitizer_scenarios(arch)
    if scenarios:
        suite = [s for s in suite if fnmatch.fnmatch(s.name, scenarios) or fnmatch.fnmatch(s.group, scenarios)]
    if not suite:
        raise TaskError(f"{task.folder}: no sanitizer scenario for {arch} matches '{scenarios}'.")
    assert "-lineinfo" in TARGETS[arch]["flags"], "findings name file and line only with -lineinfo"
    build = build_kernel(kernel, arch, entry_point=task.entry_point or None,
                         forbidden_libraries=task.forbidden_libraries)
    kernels = [r["kernel"] for r in build.resources if r.get("kernel")]
    display = Path(kernel).name
    expected = [s.name for s in suite]
    report = SanitizerReport(kernel=str(kernel), arch=arch, scenarios=expected, tools={}, sanitizer=version)
    keep = Path(log_dir) if log_dir else None
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "PYTHONUNBUFFERED": "1"}
    with tempfile.TemporaryDirectory(prefix="kernelseek-sanitize-") as tmp:
        for tool in chosen_tools:
            folder = keep or Path(tmp)
            log_path, results_path = folder / f"{tool}.log", Path(tmp) / f"{tool}.results.jsonl"
            log_path.unlink(missing_ok=True)
            spec_path = Path(tmp) / f"{tool}.spec.json"
            spec_path.write_text(json.dumps({"task": str(task.folder), "library": build.library, "arch": arch,
                                             "seed": 7, "results": str(results_path),
                                             "scenarios": [s.to_dict() for s in suite]}))
            child = [sys.executable, "-m", "kernelseek.harness.sanitize_child", str(spec_path)]
            command = sanitizer_command(sanitizer, tool, log_path, kernels, child)
            if progress:
                progress(f"{tool} on {len(suite)} scenarios")
            t0 = time.perf_counter()
            completed = source.run(tool, command, log_path, timeout_s, env)
            text = log_path.read_text(errors="replace") if log_path.is_file() else ""
            report.tools[tool] = verdict(tool, text, kernels=kernels, display=display, completed=completed,
                                         results=_read_results(results_path), expected=expected,
                                         timeout_s=timeout_s, wall_s=time.perf_counter() - t0,
                                         tail=_tail(log_path.with_suffix(".out")))
            if keep:
                report.tools[tool].log = str(log_path)
    report.wall_s = round(time.perf_counter() - started, 1)
    return report
