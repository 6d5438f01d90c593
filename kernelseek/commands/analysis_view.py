"""`kernelseek trace analyze`'s tables and lines: a rich table on a terminal; in a pipe a `# title` line, a
header line, one tab-separated line per row and a blank line (kernelseek/commands/output.py)."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kernelseek.commands.output import print_rows

console = Console()


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def print_table(title: str, rows: list[dict]) -> None:
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
        print_rows(console, title, list(rows[0]), [[fmt(v) for v in row.values()] for row in rows],
                   titled=False)
        print()
        return
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    for column in rows[0]:
        wide = column == "question"
        width = max(len(fmt(row[column])) for row in rows)
        # a value is never cropped: its column is at least as wide as its widest value (a header may wrap)
        table.add_column(column.replace("_", " "), overflow="fold", ratio=1 if wide else None,
                         min_width=None if wide else width)
    for row in rows:
        table.add_row(*(Text(fmt(v)) for v in row.values()))  # question texts are not markup
    console.print(table)


def line(text: str) -> None:
    """A line of prose among the tables, whole (never wrapped)."""
    if console.is_terminal:
        console.print(Text(text), soft_wrap=True)
    else:
        print(text)


def print_analysis(counted: dict[str, Any], kinds: list[dict], choosers: list[dict], per_run: list[dict],
                   gains: list[dict], verdict_line: str, threshold: float, k: int) -> None:
    """The totals, the tables by kind, chooser and run, the large gains, and the claim's verdict."""
    by_source = ", ".join(f"{n} {source}" for source, n in counted["questions_by_source"].items()) or "none"
    line(f"totals over {counted['runs']} run(s): {counted['human_messages']} human messages, "
         f"{counted['questions']} questions ({by_source}), {counted['tool_calls']} tool calls, "
         f"{counted['evaluations']} evaluations, {counted['wrong_candidates']} wrong candidates, "
         f"{counted['large_gains']} large gains")
    print_table(f"questions by kind (large gain: x{threshold:g} within {k} evaluations)", kinds)
    if any(row["chooser"] != "human" for row in choosers):
        print_table("questions by chooser", choosers)
    short = {"run": "run", "evaluations": "evals", "wrong": "wrong", "tool_calls": "tools", "questions": "asked",
             "large_gains": "large", "plateau_step": "plateau", "best_speedup": "best", "cost_usd": "usd"}
    # (the JSON has every column: steps, model calls, attributed gains ...)
    print_table("runs (plateau: the last step with a large gain)", per_run if not console.is_terminal else
                [{short[k]: v for k, v in row.items() if k in short} for row in per_run])  # a pipe gets all
    print_table("large gains and the question before them", gains)
    line(f"verdict: {verdict_line}")
