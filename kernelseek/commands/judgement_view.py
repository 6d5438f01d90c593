"""A judgement on the terminal: its groups, hold-out and memory floor, its slowest scenarios, its sanitizer
gate, and the verdicts of several kernels side by side (`kernelseek eval` and `kernelseek demo`)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelseek.harness.judge import Judgement

console = Console()  # the judgement: the command's output
progress_console = Console(stderr=True)  # progress and notes: stderr, so stdout holds the judgement alone


def fmt(value: float | None, spec: str = ".3f", suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def print_judgement(verdict: Judgement) -> None:
    table = Table(title=f"{verdict.task} · {verdict.kernel} · {verdict.arch} · {verdict.judgement} judgement")
    floor = verdict.floor is not None
    columns = ("group", "scenarios", "correct", f"speedup vs {verdict.baseline}") + (("of memory floor",) if floor else ())
    for column in columns:
        table.add_column(column, overflow="fold", justify="right" if column != "group" else "left")

    def row(name: str, group: dict, speedup: float | None, fraction: float | None) -> None:
        cells = [name, str(group["n"]), str(group["correct"]), fmt(speedup, suffix="x")]
        table.add_row(*cells, *([fmt(fraction, ".2f")] if floor else []))

    for name, group in verdict.groups.items():
        row(name, group, group["speedup"], group.get("floor_fraction"))
    suite = verdict.suite_results()
    row("[bold]all", {"n": len(suite), "correct": sum(bool(s.get("correct")) for s in suite)}, verdict.speedup,
        (verdict.floor or {}).get("fraction"))
    if verdict.holdout:
        for name, group in verdict.holdout.get("groups", {}).items():
            row(f"[dim]{name}", group, group["speedup"], group.get("floor_fraction"))
        h = verdict.holdout
        row(f"[bold]hold-out (seed {h['seed']})", h, h["speedup"], (verdict.floor or {}).get("holdout_fraction"))
    console.print(table)
    print_slowest(verdict, verdict.slowest(5), "slowest scenarios")
    for s in verdict.failures()[:10]:
        console.print(f"[red]✗[/] {s['scenario']}: {s.get('reason')}")
    held = verdict.holdout_line()
    if held:
        print_slowest(verdict, verdict.slowest(5, holdout=True), "slowest hold-out scenarios")
        for s in verdict.failures(holdout=True)[:10]:
            console.print(f"[red]✗[/] {s['scenario']} (hold-out): {s.get('reason')}")
        console.print(held + " · not part of the suite's speedup")
    if verdict.floor_line():
        console.print(verdict.floor_line())
    verdict_text = "[green]CORRECT[/]" if verdict.correct else f"[red]INCORRECT[/]: {verdict.reason}"
    console.print(f"{verdict_text} · geomean speedup {fmt(verdict.speedup, suffix='x')} · {verdict.wall_s:.1f} s")


def print_slowest(verdict: Judgement, rows: list[dict], title: str) -> None:
    if not rows:
        return
    slow = Table(title=title)
    floor = verdict.floor is not None
    rate = "of memory floor" if floor else "TFLOP/s"
    for column in ("scenario", "candidate µs", "baseline µs", "eager µs (cand/base)", rate, "speedup"):
        slow.add_column(column, overflow="fold")  # a value wraps, never cut
    base = verdict.baseline
    for s in rows:
        t, e = s["time_s"], s.get("eager_s", {})
        reached = fmt(s.get("floor_fraction", {}).get("candidate"), ".2f") if floor else f"{s['tflops']['candidate']:.3g}"
        slow.add_row(s["scenario"], f"{t['candidate'] * 1e6:.1f}", f"{t[base] * 1e6:.1f}",
                     f"{e.get('candidate', 0) * 1e6:.0f}/{e.get(base, 0) * 1e6:.0f}", reached, f"{s['speedup']:.3f}x")
    console.print(slow)


def print_sanitizer(report: dict) -> None:
    """Each tool's verdict, its time and its first findings (file:line)."""
    table = Table(title=f"compute-sanitizer · {len(report.get('scenarios') or [])} scenarios · {report.get('sanitizer')}")
    for column in ("tool", "verdict", "errors", "seconds", "first findings"):
        table.add_column(column, overflow="fold")
    for tool, v in (report.get("tools") or {}).items():
        mark = "[green]clean[/]" if v["status"] == "clean" else f"[red]{v['status'].upper()}[/]"
        firsts = [f"{f['what']}" + (f" at {f['where']}" if f.get("where") else "") + "".join(
            f" and {o}" for o in (f.get("others") or [])[:2]) for f in v.get("findings", [])[:3]]
        if not firsts and v["status"] != "clean":
            firsts = [v.get("reason") or ""]
        elif v.get("outside"):
            firsts.append(f"({v['outside']} reports in other code, not counted)")
        table.add_row(tool, mark, "-" if v.get("errors") is None else str(v["errors"]), f"{v.get('wall_s', 0):.0f}",
                      escape("\n".join(firsts)))
    console.print(table)
    verdict = "[green]passed[/]" if report.get("passed") else f"[red]FAILED[/]: {escape(str(report.get('reason')))}"
    console.print(f"sanitizer gate {verdict} · {report.get('wall_s', 0):.0f} s")


def print_verdicts(results: list[tuple[Path, Judgement | None]]) -> None:
    table = Table(title="verdicts")
    for column in ("kernel", "verdict", "speedup", "judged in"):
        table.add_column(column, overflow="fold")
    for kernel, verdict in results:
        if verdict is None:
            table.add_row(str(kernel), "[red]not judged", "-", "-")
            continue
        text = "[green]CORRECT" if verdict.correct else f"[red]INCORRECT[/]: {(verdict.reason or '')[:80]}"
        table.add_row(str(kernel), text, fmt(verdict.speedup, suffix="x"), f"{verdict.wall_s:.1f} s")
    console.print(table)
