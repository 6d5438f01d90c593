"""`kernelseek eval`'s judgements of one or several kernels, here one after another or as Ray tasks, each
verdict printed and the exit status they make together (0: every kernel correct; 1: one is not; 2: one could
not be judged or its report not written)."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from kernelseek.commands.errors import fail
from kernelseek.commands.judgement_view import (
    console,
    print_judgement,
    print_sanitizer,
    print_verdicts,
    progress_console,
)
from kernelseek.commands.judging import judge_here
from kernelseek.harness.judge import Judgement, check_out_path
from kernelseek.harness.task import Task, TaskError

errors = Console(stderr=True, highlight=False, soft_wrap=True)


def judge_arguments(tasks: dict[Path, Task], arch: str, sanitizing: dict | None,
                    **options: Any) -> Callable[[Path], dict[str, Any]]:
    """judge()'s arguments for each kernel; with several kernels each keeps its sanitizer logs apart."""
    command = "kernelseek " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    logs = (sanitizing or {}).get("log_dir")

    def arguments(kernel: Path) -> dict[str, Any]:
        sanitize = None if sanitizing is None else {
            **sanitizing, "log_dir": str(Path(logs) / kernel.stem) if logs and len(tasks) > 1 else logs}
        return dict(task=tasks[kernel], kernel=kernel, arch=arch, command=command, sanitize=sanitize, **options)

    return arguments


def judge_kernels(kernels: list[Path], arguments: Callable[[Path], dict[str, Any]], outs: dict[Path, Path | None],
                  arch: str, parallel: int | None, ray_address: str | None) -> tuple[int, list[dict[str, Any]]]:
    """Judge every kernel (as Ray tasks where --parallel or --ray-address asks and Ray is installed), print
    each verdict, and return the exit status and each kernel's report (for --json)."""
    from kernelseek.engine import EngineError, no_ray_line, ray_available

    use_ray = (parallel is not None or ray_address is not None) and ray_available()
    if (parallel or 1) > 1 and len(kernels) > 1 and not ray_available():
        progress_console.print(no_ray_line('judgements', parallel), style="yellow", markup=False)
    if not use_ray:
        return report_verdicts(kernels, {k: judge_here(arguments(k), outs[k]) for k in kernels}, outs)
    from kernelseek.commands.judge_ray import judge_parallel

    for path in filter(None, outs.values()):
        try:
            check_out_path(path)
        except (TaskError, ValueError) as error:
            fail(str(error))
    try:
        verdicts = judge_parallel(kernels, arguments, parallel or 1, arch, ray_address)
    except EngineError as error:
        fail(str(error))
    except KeyboardInterrupt:
        progress_console.print("[red]interrupted:[/] every judgement was stopped and its process killed; nothing "
                      "was recorded.")
        raise typer.Exit(130) from None
    for kernel, verdict in verdicts.items():  # a Ray task's report is written here, where --out was named
        if isinstance(verdict, Judgement) and outs[kernel]:
            try:
                verdict.write(outs[kernel])
            except OSError as error:
                verdict.write_error = f"the report could not be written to {outs[kernel]}: {error.strerror or error}"
    return report_verdicts(kernels, verdicts, outs)


def report_verdicts(kernels: list[Path], verdicts: dict[Path, Judgement | str],
                    outs: dict[Path, Path | None]) -> tuple[int, list[dict[str, Any]]]:
    """Each kernel's judgement (or why it has none), the table of verdicts for several, the exit status and
    each kernel's report (the JSON --out writes; `{kernel, error}` for a kernel not judged)."""
    results: list[tuple[Path, Judgement | None]] = []
    for kernel in kernels:
        verdict = verdicts[kernel]
        which = f"{kernel}: " if len(kernels) > 1 else ""
        if len(kernels) > 1:
            console.rule(str(kernel))
        if isinstance(verdict, str) or not verdict.scenarios:
            reason = _reason(verdict)
            errors.print(f"[red]error:[/] {escape(which + reason)}")
            results.append((kernel, None))
            continue
        print_judgement(verdict)
        if verdict.sanitizer:
            print_sanitizer(verdict.sanitizer)
        if verdict.write_error:
            errors.print(f"[red]error:[/] {escape(verdict.write_error)}")
        elif outs[kernel]:
            console.print(f"report: {outs[kernel]}")
        results.append((kernel, verdict))
    if len(kernels) > 1:
        print_verdicts(results)
    reports = [verdict.to_dict() if verdict else {"kernel": str(kernel), "error": _reason(verdicts[kernel])}
               for kernel, verdict in results]
    if any(v is None or v.write_error for _, v in results):
        return 2, reports
    return (0 if all(v.correct for _, v in results) else 1), reports


def _reason(verdict: Judgement | str) -> str:
    return verdict if isinstance(verdict, str) else verdict.reason or "nothing was judged"
