"""`kernelseek demo`: the main job of a fresh install — judge the shipped kernel on the GPU here."""

from __future__ import annotations

import statistics
from pathlib import Path

import typer

from kernelseek import project
from kernelseek.commands.errors import fail
from kernelseek.commands.judgement_view import console, print_judgement
from kernelseek.harness.build import BuildError, build_kernel
from kernelseek.harness.device import gpu_problem
from kernelseek.harness.judge import Judgement, judge
from kernelseek.harness.task import load_task, seed_kernel

SHIPPED = {"sm90": "kernels/hopper/flash_attn_fwd/flash_attn_fwd.cu",
           "sm100": "kernels/blackwell/flash_attn_fwd.cu"}
SEED = "kernels/seeds/flash_attn_fwd.cu"


def _kernel_for(arch: str) -> Path:
    """The shipped kernel for the arch (the project's or the package's), else the seed."""
    return project.find(SHIPPED[arch]) or project.find(SEED) or Path(SEED)


def demo_command(full: bool = typer.Option(False, "--full", help="The full suite instead of the quick subset."),
         out: Path = typer.Option(None, help="Write the JSON report here.")) -> None:
    """Judge the shipped FlashAttention kernel against FA3 (Hopper) or FA4 (Blackwell) on this GPU.

    Without a suitable GPU it says so, builds the kernels for sm_90a and sm_100a (compile-only),
    and judges the CPU task's seed kernel against torch instead, so the whole judge still runs.
    """
    arch = next((a for a in ("sm90", "sm100") if gpu_problem(a) is None), None)
    if arch:
        kernel = _kernel_for(arch)
        console.print(f"judging {kernel} on {arch} ({'full' if full else 'quick'} suite)")
        verdict = judge("flash_attn_fwd", kernel, arch, quick=not full, out=out)
        if not verdict.scenarios:
            fail(verdict.reason or "nothing was judged")
        print_judgement(verdict)
        raise typer.Exit(0 if verdict.correct else 1)
    console.print(f"[yellow]No Hopper or Blackwell GPU here[/] ({gpu_problem('sm90')}). Doing what runs "
                  "without one: building the kernels for both targets, then judging the CPU task's seed.")
    forbidden = load_task("flash_attn_fwd").forbidden_libraries
    for target, kernel in (("sm90", _kernel_for("sm90")), ("sm100", _kernel_for("sm100"))):
        try:
            built = build_kernel(kernel, target, forbidden_libraries=forbidden)
            console.print(f"  built {kernel.name} for {target}: {len(built.resources)} kernels, "
                          f"max {max((r['registers'] or 0) for r in built.resources)} registers, "
                          f"{built.spills} bytes spilled — compiled, not run")
        except BuildError as error:
            console.print(f"  [yellow]{kernel} could not be built for {target}[/]: {str(error)[:300]}")
    cpu_task = load_task("rmsnorm_cpu")
    verdict = judge(cpu_task.folder, seed_kernel(cpu_task), "cpu", quick=not full, out=out)
    print_judgement(verdict)
    noise = noise_line(verdict)
    if noise:
        console.print(noise)
    raise typer.Exit(0 if verdict.correct else 1)


def register(app: typer.Typer, **_: typer.Typer) -> None:
    app.command("demo")(demo_command)


def noise_line(verdict: Judgement) -> str | None:
    """How far this reading can be trusted, from the judge's own trials: per scenario the spread of the
    speedup is the candidate's (p90 - p10) / median plus the baseline's (as `kernelseek compare` bands it).
    A CPU shared with other work swings far more than a GPU's graph replays, so its headline says so."""
    bands = [sum(float(s["spread"].get(k) or 0) for k in ("candidate", verdict.baseline))
             for s in verdict.suite_results() if isinstance(s.get("spread"), dict)]
    if not bands:
        return None
    return (f"noise: each scenario's speedup spread over its trials by {statistics.median(bands):.0%} (median; "
            f"up to {max(bands):.0%}; (p90 - p10) / median, the kernel's plus {verdict.baseline}'s), so this "
            "headline is a rough reading: on a busy CPU the same command can read far from it.")
