"""`kernelseek eval KERNEL...`: judge kernel files (kernelseek/commands/verdicts.py), or only build them or
only run the sanitizer gate on them (kernelseek/commands/judging.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kernelseek.commands.errors import fail
from kernelseek.commands.judgement_view import console
from kernelseek.commands.judging import (
    compile_report,
    first_arch,
    report_paths,
    resolve_tasks,
    sanitize_only,
    sanitize_options,
)
from kernelseek.commands.output import aside, print_json
from kernelseek.commands.verdicts import judge_arguments, judge_kernels
from kernelseek.harness.build import TARGETS

Kernels = Annotated[list[Path], typer.Argument(help="The kernel file(s): a .cu for sm90/sm100, a .cpp for cpu. "
                                               "Several are judged one after another, or N at once with --parallel.")]
Arch = Annotated[str | None, typer.Option(help="Target: sm90 (Hopper), sm100 (Blackwell) or cpu (default: the "
                                          "task's first: sm90 for flash_attn_fwd, cpu for rmsnorm_cpu); the "
                                          "speedup is against the task's headline baseline there (flash_attn_fwd: "
                                          "FA3, FA4).")]
Task = Annotated[str | None, typer.Option(help="Task folder or name under evals/tasks (default: the task whose "
                                          "entry point the kernel defines).")]
Quick = Annotated[bool, typer.Option("--quick", help="Judge a fixed representative subset only.")]
CompileOnly = Annotated[bool, typer.Option("--compile-only", help="Build and guard only; print the resource "
                                           "report (works without a GPU).")]
Out = Annotated[Path | None, typer.Option(help="Write the full JSON report here (e.g. benchmarks/results/NAME.json); "
                                          "with several kernels, a folder that gets one <kernel name>.json each.")]
Scenarios = Annotated[str | None, typer.Option(help="Only scenarios whose name or group matches this glob.")]
Seed = Annotated[int | None, typer.Option(help="Seed for the random inputs, and for the hold-out sample when "
                                          "--holdout-seed is not given (default: a fresh one each time).")]
Beside = Annotated[bool, typer.Option("--beside", help="Also time the other baselines (cuDNN, FA2) beside the "
                                      "headline one, for the table only: the verdict is against the headline "
                                      "baseline; each adds ~0.2 s a scenario (flash_attn_fwd: ~40 s a full "
                                      "judgement on an H100).")]
Holdout = Annotated[int, typer.Option("--holdout", metavar="N", help="Also judge N hold-out scenarios drawn from "
                                      "the task's scenario distribution (shapes the suite does not have), reported "
                                      "apart from the suite's speedup; works with --quick too.")]
HoldoutSeed = Annotated[int | None, typer.Option("--holdout-seed", metavar="S", help="Seed of the hold-out sample "
                                                 "(default: --seed when given, so `--holdout 24 --seed 1` draws the "
                                                 "same 24 scenarios every time; else a fresh one, recorded in the "
                                                 "JSON).")]
Parallel = Annotated[int | None, typer.Option("--parallel", metavar="N", help="Judge N kernels at once as Ray "
                                              "tasks (the kernelseek\\[ray] extra), one GPU each (one CPU core each "
                                              "for cpu), exactly as one kernel is judged alone; on Ray's local "
                                              "cluster or --ray-address's.")]
RayAddress = Annotated[str | None, typer.Option("--ray-address", help="Join this Ray cluster (HEAD:6379, or auto "
                                                "on a node of it); default $RAY_ADDRESS, else a local cluster. "
                                                "Implies Ray.")]
Sanitize = Annotated[bool, typer.Option("--sanitize", help="Also run compute-sanitizer (memcheck, racecheck, "
                                        "initcheck, synccheck) on the task's sanitizer suite; a finding makes the "
                                        "kernel incorrect. Refused where compute-sanitizer or the GPU is missing.")]
SanitizeOnly = Annotated[bool, typer.Option("--sanitize-only", help="Only the sanitizer gate: no timing, no "
                                            "baseline (--scenarios then picks from the sanitizer suite).")]
SanitizeTools = Annotated[str | None, typer.Option("--sanitize-tools", metavar="T,T", help="Only these tools "
                                                   "(default: memcheck,racecheck,initcheck,synccheck).")]
SanitizeTimeout = Annotated[float, typer.Option("--sanitize-timeout", metavar="S", help="Seconds each tool may run "
                                                "over the sanitizer suite before it is killed (a timeout fails the "
                                                "gate).")]
SanitizeLogs = Annotated[Path | None, typer.Option("--sanitize-logs", metavar="DIR", help="Keep each tool's raw "
                                                   "output in DIR (<tool>.log; the program's own output in "
                                                   "<tool>.out).")]
AsJson = Annotated[bool, typer.Option("--json", help="Print a JSON list on stdout, one report per kernel (the "
                                      "JSON --out writes; {kernel, error} for one not judged); the tables and "
                                      "progress go to stderr.")]


def eval_command(kernels: Kernels, arch: Arch = None, task: Task = None, quick: Quick = False,
                 compile_only: CompileOnly = False, out: Out = None, scenarios: Scenarios = None, seed: Seed = None,
                 beside: Beside = False, holdout: Holdout = 0, holdout_seed: HoldoutSeed = None,
                 parallel: Parallel = None, ray_address: RayAddress = None, sanitize: Sanitize = False,
                 sanitize_only_: SanitizeOnly = False, sanitize_tools: SanitizeTools = None,
                 sanitize_timeout: SanitizeTimeout = 300.0, sanitize_logs: SanitizeLogs = None,
                 as_json: AsJson = False) -> None:
    """Judge a kernel: build it, check it on every scenario, time it against the baseline.

    A kernel counts only if it is correct on every scenario; its score is the geometric mean of
    baseline time / kernel time, each call timed as a CUDA graph replay, interleaved with the
    baseline in one process. With --holdout N it is also judged on N scenarios drawn from the task's
    scenario distribution, reported apart (the suite is a yardstick, not the target); the JSON
    records the hold-out's seed, so `--holdout N --holdout-seed S` (or `--seed S`) judges the same
    sample again. Several kernels are judged one after another, or with --parallel N as Ray tasks,
    N at once, each on a GPU of its own (no two judgements share a GPU while timing). Exit status 0
    when every kernel is correct. Examples:

        kernelseek eval kernels/seeds/flash_attn_fwd.cu --arch sm90 --out benchmarks/results/seed-sm90.json
        kernelseek eval kernels/hopper/flash_attn_fwd/flash_attn_fwd.cu --holdout 24 --seed 1
        kernelseek eval a.cu b.cu c.cu d.cu --arch sm90 --parallel 4 --out benchmarks/results/batch/
        kernelseek eval kernels/hopper/flash_attn_fwd/flash_attn_fwd.cu --quick --sanitize
        kernelseek eval kernels/seeds/flash_attn_fwd.cu --sanitize-only --sanitize-logs /tmp/san
    """
    check_options(kernels, arch, holdout, holdout_seed, parallel)
    outs = report_paths(kernels, out)
    tasks = resolve_tasks(kernels, task)
    arch = arch or first_arch(tasks[kernels[0]])
    if (sanitize or sanitize_only_) and compile_only:
        fail("--sanitize runs the kernel, --compile-only does not: choose one.")
    sanitizing = sanitize_options(sanitize_tools, sanitize_timeout, sanitize_logs, arch) \
        if sanitize or sanitize_only_ else None
    with aside(console, as_json):
        if sanitize_only_:
            reports = [sanitize_only(tasks[k], k, arch, scenarios, sanitizing, outs[k], len(kernels) > 1)
                       for k in kernels]
            status = 0 if all(r["passed"] for r in reports) else 1
        elif compile_only:
            reports, status = [compile_report(k, arch, tasks[k], outs[k]) for k in kernels], 0
        else:
            arguments = judge_arguments(tasks, arch, sanitizing, quick=quick, scenarios=scenarios, seed=seed,
                                        beside=beside, holdout=holdout,
                                        holdout_seed=holdout_seed if holdout_seed is not None else seed)
            status, reports = judge_kernels(kernels, arguments, outs, arch, parallel, ray_address)
    if as_json:
        print_json(reports)
    raise typer.Exit(status)


def check_options(kernels: list[Path], arch: str | None, holdout: int, holdout_seed: int | None,
                  parallel: int | None) -> None:
    """Refuse (one sentence) what no judgement can be made of."""
    for kernel in kernels:
        if not kernel.is_file():
            fail(f"{kernel}: no such kernel file; pass the path of a .cu or .cpp file.")
    if len({k.resolve() for k in kernels}) != len(kernels):
        fail("the same kernel file is named twice; name each kernel once.")
    if arch is not None and arch not in TARGETS:
        fail(f"--arch {arch} is not a target; use one of {', '.join(TARGETS)}.")
    if holdout < 0:
        fail(f"--holdout {holdout} must be 0 or more: the number of hold-out scenarios to judge (e.g. 24).")
    if holdout_seed is not None and holdout_seed < 0:
        fail(f"--holdout-seed {holdout_seed} must be 0 or more.")
    if parallel is not None and parallel < 1:
        fail(f"--parallel {parallel} must be at least 1: the number of kernels judged at once.")


def register(app: typer.Typer, **_: typer.Typer) -> None:
    app.command("eval")(eval_command)
