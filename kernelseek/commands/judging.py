"""The steps of `kernelseek eval`: which task and report file each kernel has, and each way of judging it
(built and guarded only, the sanitizer gate only, or judged here with a progress bar)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kernelseek import project
from kernelseek.commands.errors import fail
from kernelseek.commands.judgement_view import console, print_sanitizer, progress_console
from kernelseek.harness.build import BuildError, build_kernel
from kernelseek.harness.judge import Judgement, check_out_path, judge
from kernelseek.harness.task import Task, TaskError, load_task


def resolve_tasks(kernels: list[Path], task: str | None) -> dict[Path, Task]:
    """Each kernel's task, loaded once and handed down: --task for all, else the task whose entry point
    the kernel defines."""
    if task is not None:
        try:
            named = load_task(task)
        except TaskError as error:
            fail(str(error))
        return {kernel: named for kernel in kernels}
    candidates = [load_task(folder) for folder in project.task_folders()]
    return {kernel: infer_task(kernel, candidates) for kernel in kernels}


def infer_task(kernel: Path, candidates: list[Task]) -> Task:
    """The one task among `candidates` whose entry point the kernel defines."""
    text = kernel.read_text(errors="replace")
    matches = [t for t in candidates if t.entry_point and t.entry_point in text]
    if len(matches) != 1:
        found = "none" if not matches else ", ".join(t.folder.name for t in matches)
        fail(f"{kernel}: cannot tell which task this kernel is for (tasks whose entry point it names: {found}); "
             "pass --task NAME.")
    return matches[0]


def first_arch(task: Task) -> str:
    """The arch a command defaults to: the task's first (sm90 for the GPU tasks, cpu for rmsnorm_cpu)."""
    if not task.archs:
        fail(f"{task.folder}: the task names no arch in its archs.")
    return task.archs[0]


def report_paths(kernels: list[Path], out: Path | None) -> dict[Path, Path | None]:
    """Where each kernel's JSON goes: --out itself for one kernel; <--out>/<kernel name>.json for several."""
    if out is None:
        return {k: None for k in kernels}
    if len(kernels) == 1:
        return {kernels[0]: out}
    if out.suffix == ".json" or out.is_file():
        fail(f"--out {out}: with {len(kernels)} kernels --out names a folder (each gets <kernel name>.json); "
             "pass a folder.")
    names = [k.stem for k in kernels]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        fail(f"--out {out}: two kernels are both named {twice[0]}, so their reports would overwrite each "
             "other; rename one, or judge them apart.")
    return {k: out / f"{k.stem}.json" for k in kernels}


def compile_report(kernel: Path, arch: str, loaded: Task, out: Path | None) -> dict:
    """Build and guard one kernel; print its resources, write --out; return the build report."""
    if arch not in loaded.archs:
        fail(f"{loaded.folder}: the task has no {arch} suite, so there is nothing to build for; "
             f"use --arch {' or '.join(loaded.archs)}.")
    try:
        built = build_kernel(kernel, arch, entry_point=loaded.entry_point or None,
                             forbidden_libraries=loaded.forbidden_libraries)
    except BuildError as error:
        fail(str(error))
    table = Table(title=f"{kernel} for {arch}: {'cached' if built.cached else 'built'} → {built.library}")
    for column in ("kernel", "registers", "smem bytes", "stack", "spill st/ld"):
        table.add_column(column, overflow="fold")
    for r in built.resources:
        table.add_row(r["kernel"][:70], str(r["registers"]), str(r["smem_bytes"]), str(r["stack_frame"]),
                      f"{r['spill_stores']}/{r['spill_loads']}")
    console.print(table)
    console.print(f"guard passed · {len(built.resources)} kernels · spills: {built.spills} bytes")
    for note in built.advisories:
        console.print(f"[yellow]ptxas: potential performance loss[/] in {escape(note)}")
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(built.to_dict(), indent=1))
    return built.to_dict()


def sanitize_options(tools: str | None, timeout: float, logs: Path | None, arch: str) -> dict:
    """The sanitize= argument of judge() from the options; refuses (one sentence) where the gate cannot run."""
    from kernelseek.harness.sanitize import sanitize_problem, tools_for

    wanted = [t.strip() for t in tools.split(",") if t.strip()] if tools else None
    try:
        tools_for(arch, wanted)
    except ValueError as error:
        fail(str(error))
    if timeout <= 0:
        fail(f"--sanitize-timeout {timeout:g} must be above 0 (seconds each tool may run).")
    problem = sanitize_problem(arch)
    if problem:
        fail(problem + ".")
    return {"tools": wanted, "timeout_s": timeout, "log_dir": str(logs) if logs else None}


def sanitize_only(task: Task, kernel: Path, arch: str, scenarios: str | None, options: dict,
                  out: Path | None, logs_per_kernel: bool) -> dict:
    """The sanitizer gate alone on one kernel; prints its table, writes --out; returns its report."""
    from kernelseek.harness.sanitize import sanitize as run_sanitizer

    if out:
        try:
            check_out_path(out)
        except TaskError as error:
            fail(str(error))
    if logs_per_kernel and options.get("log_dir"):
        options = {**options, "log_dir": str(Path(options["log_dir"]) / kernel.stem)}
    with progress_console.status(f"compute-sanitizer on {kernel}"):
        try:
            report = run_sanitizer(task, kernel, arch, scenarios=scenarios, **options)
        except (TaskError, BuildError, ValueError) as error:
            fail(str(error))
        except KeyboardInterrupt:
            progress_console.print("[red]interrupted:[/] the sanitizer was stopped and its process killed.")
            raise typer.Exit(130) from None
    data = report.to_dict()
    print_sanitizer(data)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=1))
        console.print(f"report: {out}")
    return data


def judge_here(arguments: dict, out: Path | None) -> Judgement | str:
    """One judgement in this process, with a progress bar; a bad task or argument is returned as its sentence."""
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}"), console=progress_console, transient=True) as progress:
        bar = progress.add_task("building", total=None, last="")

        def started(total: int) -> None:
            progress.update(bar, total=total, description="judging")

        def done(result: dict) -> None:
            mark = "[green]✓" if result.get("correct") else "[red]✗"
            speed = f" {result['speedup']:.2f}x" if result.get("speedup") else ""
            progress.update(bar, advance=1, last=f"{mark}[/] {result['scenario']}{speed}")

        try:
            return judge(**arguments, out=out, progress=done, on_start=started)
        except (TaskError, ValueError) as error:
            return str(error)
        except KeyboardInterrupt:
            progress_console.print("[red]interrupted:[/] the judgement was stopped and its process killed; nothing was recorded.")
            raise typer.Exit(130) from None
