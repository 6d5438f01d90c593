"""The runs `kernelseek trace analyze` reads: found under the folders it is given, each analysed
(kernelseek/analysis/graph.py), what is not a run skipped with one line, and their graphs as GraphML."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

from kernelseek.commands.bank import resolve_run
from kernelseek.trace import TraceError

errors = Console(stderr=True)


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


def analyse_runs(runs: list[str], **options: Any) -> tuple[list[Any], list[str]]:
    """Each run's analysis (analyze_run's `options`), and a line for each thing skipped. A run named
    itself whose trace cannot be read is a TraceError; one found by searching a folder is skipped."""
    from kernelseek.analysis.graph import analyze_run

    analyses = []
    paths, skipped = collect_runs(runs)
    named = {resolve_run(r).resolve() for r in runs if Path(r).is_file() or (Path(r) / "trace.jsonl").is_file()
             or not Path(r).exists()}
    with Progress(console=errors, transient=True) as progress:
        task = progress.add_task("analysing runs", total=len(paths))
        for path in paths:
            try:
                analyses.append(analyze_run(path, **options))
            except TraceError as error:
                if path.resolve() in named:
                    raise
                skipped.append(f"skipped {path}: {error}")
            progress.advance(task)
    return analyses, skipped


def write_graphml(analyses: list[Any], folder: Path) -> None:
    """Each run's graph as <folder>/<run>.graphml (GraphML holds scalars only: the rest as JSON text)."""
    import networkx as nx

    folder.mkdir(parents=True, exist_ok=True)
    for analysis in analyses:
        g = analysis.graph.copy()
        for _, data in g.nodes(data=True):
            for key, value in list(data.items()):
                if value is None:
                    del data[key]
                elif not isinstance(value, str | int | float | bool):
                    data[key] = json.dumps(value)
        nx.write_graphml(g, folder / f"{analysis.run_id}.graphml")
