"""`kernelseek trace show RUN`: a run's trace as a readable timeline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelseek.commands.errors import fail
from kernelseek.commands.run import RunsDir
from kernelseek.provenance import scripted_label

console = Console()


def trace_show(
    run: str = typer.Argument(..., help="A run id, a run folder or a trace.jsonl file."),
    runs_dir: RunsDir = None,
    types: str = typer.Option(None, help="Only these event types, comma-separated (e.g. evaluation,question)."),
    as_json: bool = typer.Option(False, "--json", help="Print the events as JSON lines."),
) -> None:
    """A run as a readable timeline: model calls, tool calls, evaluations, decision points, questions."""
    from kernelseek.agent.run_store import default_runs_dir
    from kernelseek.trace import EVENT_FIELDS, TraceError, read_trace, trace_path

    path = trace_path(run)
    if not path.exists():
        path = trace_path(Path(runs_dir or default_runs_dir()) / run)
    wanted = set(types.split(",")) if types else None
    if wanted and wanted - set(EVENT_FIELDS):
        fail(f"--types: unknown event type {', '.join(sorted(wanted - set(EVENT_FIELDS)))}; "
             f"use {', '.join(EVENT_FIELDS)}.")
    try:
        events = read_trace(path)
    except Exception as error:  # noqa: BLE001 - TraceError, or a file that is not text
        fail(str(error) if isinstance(error, TraceError) else f"{path}: cannot be read as a trace ({error}).")
    events = [e for e in events if not wanted or e["type"] in wanted]
    if as_json:
        for event in events:
            print(json.dumps(event))
        return
    if not console.is_terminal:  # complete plain rows: step, time, event, what
        from rich.text import Text

        from kernelseek.commands.output import print_rows

        print_rows(console, str(path), ("step", "time", "event", "what"),
                   [(e["step"], e["time"], e["type"], Text.from_markup(describe(e)).plain) for e in events])
        return
    table = Table(title=escape(str(path)), show_lines=False)
    for column in ("step", "time", "event", "what"):
        table.add_column(column, overflow="fold")
    for event in events:
        table.add_row(str(event["step"]), event["time"][11:19], event["type"], describe(event))  # escaped there
    console.print(table)


def describe(e: dict[str, Any]) -> str:
    """One line for a trace event."""
    t = e["type"]
    if t == "run_start":
        goals = ([f"target {e['target']:g}x"] if e.get("target") else []) + \
            ([f"target gain {e['target_gain']:g}x"] if e.get("target_gain") else [])
        fork = e.get("fork")
        forked = ""
        if isinstance(fork, dict):  # a counterfactual fork (kernelseek/forks): where it branched and what it replaced
            replaced = (fork.get("replaced") or {}).get("text")
            forked = (f"[bold yellow]FORK[/] of run {escape(str(fork.get('parent_run')))} at step {fork.get('step')}, "
                      "replacing " + (escape(f"“{replaced}”") if replaced else "no question") + " · ")
        scripted = f" ({scripted_label(e['worker'])})" if scripted_label(e["worker"]) else ""
        return forked + escape(f"{Path(e['task']).name} from {Path(e['kernel']).name} on {e['arch']}, {e['mode']} mode, "
                      f"worker {e['worker']}{scripted}" + (f" (shell sandbox: {str(e['sandbox']).split(':')[0]})"
                                                 if e.get("sandbox") else "") + ", " + (" or ".join(goals) or "no target"))
    if t == "model_call":
        calls = ", ".join(c["name"] for c in e["tool_calls"]) or "no tool call"
        cost = f"${e['cost_usd']:.4f}" if e["cost_usd"] is not None else "unpriced"
        text = (e["content"] or "").strip().replace("\n", " ")
        return f"[cyan]{calls}[/] · {e['prompt_tokens']}+{e['completion_tokens']} tok · {cost}" + \
            (f" · “{escape(text[:160])}”" if text else "")
    if t == "tool_call":
        args = e["arguments"].get("command") or e["arguments"].get("path") or json.dumps(e["arguments"])[:80]
        result = (e["result"] or "").strip().replace("\n", " ")
        return f"{e['name']}({escape(str(args)[:80])}) → " + ("" if e["ok"] else "[red]") + escape(result[:120])
    if t == "evaluation":
        verdict = "[green]correct[/]" if e["correct"] else f"[red]INCORRECT[/]: {escape(str(e['reason']))}"
        speed = f" {e['speedup']:.3f}x" if e["speedup"] else ""
        origin = "the starting kernel" if e["parent"] is None else f"from {e['parent']}"
        return f"candidate {e['candidate']} ({origin}) {e['judgement']}: {verdict}{speed}" + \
            (" [bold green]→ best[/]" if e["best"] else "")
    if t == "decision_point":
        return f"[yellow]{e['kind']}[/]: {escape(e['detail'])}"
    if t == "question":
        origin = "human" if e["source"] == "human" else f"bank {e['bank_id']} ({e['question_kind']})"
        if e.get("chooser") and e["source"] != "human":
            origin += f", chosen by {e['chooser']} of {len(e.get('offered') or [])}"
        line = f"[magenta]asked[/] ({escape(origin)}, at {e['decision_point']}" + \
            (", [bold yellow]in the fork's place[/]" if e.get("fork") else "") + f"): {escape(e['text'])}"
        return line + (f"\n      why: {escape(str(e['reason']))}" if e.get("reason") else "")
    if t == "human_message":
        return f"[magenta]typed[/] at {e['decision_point']}: {escape(repr(e['text']))}"
    if t == "sanitizer":
        tools = ", ".join(f"{tool} {v.get('status')}" for tool, v in e["tools"].items())
        verdict = "[green]passed[/]" if e["passed"] else f"[red]FAILED[/]: {escape(str(e['reason']))}"
        return f"candidate {e['candidate']} sanitizer gate {verdict} ({escape(tools)})"
    if t == "run_end":
        best = f"{e['best_speedup']:.3f}x" if e["best_speedup"] else "none"
        return f"[bold]{escape(e['reason'])}[/] · best {best} · {e['steps']} steps · ${e['cost_usd']:.4f}"
    return escape(json.dumps({k: v for k, v in e.items() if k not in ("seq", "time", "type", "step", "key")})[:200])


def register(app: typer.Typer, *, trace_app: typer.Typer, **_: typer.Typer) -> None:
    trace_app.command("show")(trace_show)
