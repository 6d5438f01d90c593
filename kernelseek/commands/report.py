"""`kernelseek report RUN`: a run's HTML page with its plots, and its totals, plateau and verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress

from kernelseek.bank.outcomes import DEFAULT_K, DEFAULT_LARGE
from kernelseek.commands.analyze import K, Threshold
from kernelseek.commands.bank import fail, resolve_run
from kernelseek.commands.output import print_json
from kernelseek.provenance import SCRIPTED_LABEL
from kernelseek.trace import TraceError

console = Console()
errors = Console(stderr=True)


def report_command(
    run: Annotated[str, typer.Argument(help="A run folder, trace file or run id.")],
    out: Annotated[Path | None, typer.Option(help="Output folder (default: <run>/report/).")] = None,
    threshold: Threshold = DEFAULT_LARGE,
    k: K = DEFAULT_K,
    as_json: Annotated[bool, typer.Option("--json", help="Print the page's path, the totals, the plateau step, "
                                          "the verdict and the best's hold-out as JSON.")] = False,
) -> None:
    """Write an HTML report with plots: best speedup over steps, per-scenario speedups, cost over time;
    then print the run's totals, plateau step, the claim's verdict and the best kernel's hold-out.

    Example:  kernelseek report RUN_ID --json | jq .verdict
    """
    from kernelseek.analysis.claim import totals, verdict
    from kernelseek.analysis.graph import analyze_run
    from kernelseek.analysis.report import describe_holdout, holdout_of_best, write_report

    try:
        with Progress(console=errors, transient=True) as progress:
            task = progress.add_task("writing the report", total=None)
            page = write_report(resolve_run(run), out, threshold=threshold, k=k)
            progress.update(task, completed=1, total=1)
        analysis = analyze_run(resolve_run(run), threshold=threshold, k=k)
    except TraceError as error:
        raise fail(str(error)) from None
    except OSError as error:
        raise fail(f"{error.filename or 'the output folder'}: {error.strerror or error}; "
                   "pick another --out.") from None
    counted = totals([analysis])
    judged = verdict([analysis])
    held = holdout_of_best(analysis)
    if as_json:
        print_json({"page": str(page), "totals": counted, "plateau_step": analysis.plateau_step,
                    "verdict": judged.line, "holdout": held})
        return
    console.print(f"wrote {page} and its plots")
    if analysis.scripted:
        console.print(f"[bold yellow]{SCRIPTED_LABEL}[/]: this run shows the machinery, not a model's work")
    by_source = ", ".join(f"{n} {source}" for source, n in counted["questions_by_source"].items()) or "none"
    plateau = analysis.plateau_step if analysis.plateau_step is not None else "-"
    console.print(f"{counted['human_messages']} human messages, {counted['questions']} questions ({by_source}), "
                  f"{counted['tool_calls']} tool calls, {counted['evaluations']} evaluations, "
                  f"{counted['wrong_candidates']} wrong; plateau step {plateau}", highlight=False)
    console.print(f"verdict: {judged.line}", highlight=False, soft_wrap=True)
    if held:
        console.print(f"best kernel's hold-out: {describe_holdout(held)}")


def register(app: typer.Typer, **_: typer.Typer) -> None:
    app.command("report")(report_command)
