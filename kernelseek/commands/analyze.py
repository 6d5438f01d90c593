"""`kernelseek trace analyze RUNS...` and `kernelseek report RUN`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.console import Console
from rich.progress import Progress
from rich.table import Table
from rich.text import Text

from kernelseek.bank.outcomes import DEFAULT_K, DEFAULT_LARGE, DEFAULT_SUCCESS
from kernelseek.commands.bank import fail, resolve_run
from kernelseek.commands.output import print_json, print_rows
from kernelseek.trace import TraceError

console = Console()
errors = Console(stderr=True)

Threshold = Annotated[float, typer.Option(help="A new best at least this many times the best before it is a "
                                          "large gain.")]
K = Annotated[int, typer.Option("-k", help="Evaluations after a question that count as what followed it.")]


def _fmt(value) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _print_table(title: str, rows: list[dict]) -> None:
    """A table on a terminal; in a pipe a `# title` line, a header line, one tab-separated line per row
    and a blank line."""
    if not console.is_terminal:
        print(f"# {title}")
    if not rows:
        if console.is_terminal:
            console.print(Text(f"{title}: none"))
        else:
            print()
        return
    if not console.is_terminal:
        print_rows(console, title, list(rows[0]), [[_fmt(v) for v in row.values()] for row in rows],
                   titled=False)
        print()
        return
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    for column in rows[0]:
        wide = column == "question"
        width = max(len(_fmt(row[column])) for row in rows)
        # a value is never cropped: its column is at least as wide as its widest value (a header may wrap)
        table.add_column(column.replace("_", " "), overflow="fold", ratio=1 if wide else None,
                         min_width=None if wide else width)
    for row in rows:
        table.add_row(*(Text(_fmt(v)) for v in row.values()))  # question texts are not markup
    console.print(table)


def _line(text: str) -> None:
    """A line of prose among the tables, whole (never wrapped)."""
    if console.is_terminal:
        console.print(Text(text), soft_wrap=True)
    else:
        print(text)


def collect_runs(refs: list[str]) -> tuple[list[Path], list[str]]:
    """The runs that `refs` name: a run folder or trace file as given, a run id under the runs folder, and
    every run found (recursively) in a folder that is not a run itself; with one line for each thing that
    was skipped because it is not a run."""
    runs: list[Path] = []
    skipped: list[str] = []
    for ref in refs:
        path = Path(ref)
        if path.is_file() and path.suffix != ".jsonl":
            skipped.append(f"skipped {path}: not a run (a run is a folder with a trace.jsonl, or the trace itself)")
            continue
        if path.is_file() or (path.is_dir() and (path / "trace.jsonl").is_file()) or not path.exists():
            runs.append(resolve_run(ref))  # raises TraceError for a name that is nothing
            continue
        found = []
        for folder, subfolders, files in os.walk(path):
            if "trace.jsonl" in files:
                found.append(Path(folder))
                subfolders.clear()  # a run's own folders hold no runs
            else:
                subfolders.sort()
        if found:
            runs.extend(found)
        else:
            skipped.append(f"skipped {path}: not a run (no trace.jsonl in it or below it)")
    return list(dict.fromkeys(runs)), skipped


def analyze_command(
    runs: Annotated[list[str], typer.Argument(help="Run folders, trace files, run ids, or folders that hold "
                                              "runs (searched recursively, e.g. runs/ or an experiment's).")],
    threshold: Threshold = DEFAULT_LARGE,
    k: K = DEFAULT_K,
    success: Annotated[float, typer.Option(help="A gain ratio that counts as a success.")] = DEFAULT_SUCCESS,
    as_json: Annotated[bool, typer.Option("--json", help="Print the tables as JSON.")] = False,
    graph: Annotated[Path | None, typer.Option(help="Also write each run's graph as GraphML into this folder.")] = None,
    model: Annotated[str | None, typer.Option(help="A litellm model that classifies the questions whose trace "
                                              "records no kind (default: $KERNELSEEK_BANK_MODEL; none: the "
                                              "documented rules).")] = None,
) -> None:
    """Which questions preceded which gains, and whether the method's claim holds.

    A folder that is not a run is searched for runs below it; what holds no run is skipped with one line
    (on stderr), and so is a run whose trace cannot be read when it was found by that search. On a
    terminal tables; in a pipe tab-separated rows under a `# title` line, each table ended by a blank
    line; --json for scripts.

    Prints the totals (human messages, questions by source, tool calls, evaluations, wrong candidates),
    the per-kind table, the runs with their plateau step (the last step that improved the best by at least
    the threshold), each large gain with its question, and one verdict line: "every large gain followed a
    layer-shift or reject-limit question: holds" (or "fails", naming the gains that break it).

        kernelseek trace analyze ~/.local/share/kernelseek/runs | cat
        kernelseek trace analyze RUN_A RUN_B --json | jq .verdict
    """
    from kernelseek.analysis.claim import totals, verdict
    from kernelseek.analysis.graph import analyze_run, chooser_table, gains_table, kind_table, run_table
    from kernelseek.bank.classify import configured_model

    model = model or configured_model()
    analyses = []
    try:
        paths, skipped = collect_runs(runs)
        named = {resolve_run(r).resolve() for r in runs if Path(r).is_file() or (Path(r) / "trace.jsonl").is_file()
                 or not Path(r).exists()}
        with Progress(console=errors, transient=True) as progress:
            task = progress.add_task("analysing runs", total=len(paths))
            for path in paths:
                try:
                    analyses.append(analyze_run(path, threshold=threshold, k=k, success=success, model=model))
                except TraceError as error:
                    if path.resolve() in named:
                        raise
                    skipped.append(f"skipped {path}: {error}")
                progress.advance(task)
    except TraceError as error:
        raise fail(str(error)) from None
    for line in skipped:
        errors.print(Text(line), soft_wrap=True)
    if not analyses:
        raise fail(f"no run to analyse in {', '.join(runs)}; pass run folders, trace files, run ids or folders "
                   "that hold runs.")
    kinds, per_run, gains = kind_table(analyses), run_table(analyses), gains_table(analyses)
    counted, judged, choosers = totals(analyses), verdict(analyses), chooser_table(analyses)
    if graph is not None:
        import networkx as nx

        graph.mkdir(parents=True, exist_ok=True)
        for analysis in analyses:
            g = analysis.graph.copy()
            for _, data in g.nodes(data=True):  # GraphML takes scalars only
                for key, value in list(data.items()):
                    if value is None:
                        del data[key]
                    elif not isinstance(value, str | int | float | bool):
                        data[key] = json.dumps(value)
            nx.write_graphml(g, graph / f"{analysis.run_id}.graphml")
    if as_json:
        print_json({"threshold": threshold, "k": k, "classifier": f"model:{model}" if model else "rules",
                    "totals": counted, "kinds": kinds, "choosers": choosers, "runs": per_run,
                    "large_gains": gains, "verdict": judged.to_dict(), "skipped": skipped})
        return
    by_source = ", ".join(f"{n} {source}" for source, n in counted["questions_by_source"].items()) or "none"
    _line(f"totals over {counted['runs']} run(s): {counted['human_messages']} human messages, "
          f"{counted['questions']} questions ({by_source}), {counted['tool_calls']} tool calls, "
          f"{counted['evaluations']} evaluations, {counted['wrong_candidates']} wrong candidates, "
          f"{counted['large_gains']} large gains")
    _print_table(f"questions by kind (large gain: x{threshold:g} within {k} evaluations)", kinds)
    if any(row["chooser"] != "human" for row in choosers):
        _print_table("questions by chooser", choosers)
    short = {"run": "run", "evaluations": "evals", "wrong": "wrong", "tool_calls": "tools", "questions": "asked",
             "large_gains": "large", "plateau_step": "plateau", "best_speedup": "best", "cost_usd": "usd"}
    # (the JSON has every column: steps, model calls, attributed gains ...)
    _print_table("runs (plateau: the last step with a large gain)", per_run if not console.is_terminal else
                 [{short[k]: v for k, v in row.items() if k in short} for row in per_run])  # a pipe gets all
    _print_table("large gains and the question before them", gains)
    _line(f"verdict: {judged.line}")


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
    by_source = ", ".join(f"{n} {source}" for source, n in counted["questions_by_source"].items()) or "none"
    plateau = analysis.plateau_step if analysis.plateau_step is not None else "-"
    console.print(f"{counted['human_messages']} human messages, {counted['questions']} questions ({by_source}), "
                  f"{counted['tool_calls']} tool calls, {counted['evaluations']} evaluations, "
                  f"{counted['wrong_candidates']} wrong; plateau step {plateau}", highlight=False)
    console.print(f"verdict: {judged.line}", highlight=False, soft_wrap=True)
    if held:
        console.print(f"best kernel's hold-out: {describe_holdout(held)}")


def register(app: typer.Typer, *, bank_app: typer.Typer, trace_app: typer.Typer) -> None:
    trace_app.command("analyze")(analyze_command)
    app.command("report")(report_command)
