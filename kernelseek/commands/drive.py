"""A run driven in this terminal: the graph streamed to its end with a live view of its progress, a
human-mode question asked at the prompt, and the line that ends it (`kernelseek run`, `resume` and `fork`)."""

from __future__ import annotations

import signal
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from kernelseek.commands.errors import fail
from kernelseek.commands.output import print_json

# The run's live view, its questions and its notes go to stderr, and only the line that ends it (or its JSON)
# to stdout: in a pipe stdout carries the result alone; on a terminal both show.
console = Console(stderr=True)
result = Console(soft_wrap=True)  # a line for scripts is never broken at the terminal's width


def _view(run_id: str, values: dict[str, Any], scripted: str | None = None) -> Panel:
    best = values.get("best") or {}
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    dollars = f"${values.get('cost_usd', 0.0):.4f}"
    if values.get("unpriced_calls"):
        dollars += f" (+{values['unpriced_calls']} unpriced calls)"
    rows = [("step", str(values.get("step", 0))),
            ("best speedup", f"{best['speedup']:.3f}x (candidate {best['candidate']})" if best.get("speedup") else "-"),
            ("dollars", dollars), ("tokens", f"{values.get('tokens', 0):,}"),
            ("evaluations", str(values.get("evals", 0))),
            ("last question", values.get("last_question") or "-"), ("now", values.get("last_event", ""))]
    for name, value in rows:
        table.add_row(name, escape(value))
    return Panel(table, title=f"kernelseek run {escape(run_id)}" + (f" · {escape(scripted)}" if scripted else ""),
                 expand=False)


def drive(run: Any, graph: Any, payload: Any) -> dict[str, Any]:
    """Stream the graph to its end, showing progress, and answer human-mode questions from stdin."""
    from langgraph.types import Command

    from kernelseek.agent.context import RunContext
    from kernelseek.agent.run_summary import label

    config, context, scripted = run.thread(), RunContext.of(run), label(run.config)
    values = dict(graph.get_state(config).values or {}) or (dict(payload) if isinstance(payload, dict) else {})
    while True:
        try:
            with Live(_view(run.id, values, scripted), console=console, refresh_per_second=4,
                      transient=console.is_terminal) as live:
                for mode, chunk in graph.stream(payload, config, context=context, stream_mode=["updates", "custom"],
                                                durability="sync"):
                    if mode == "custom":  # the harness's progress while it judges
                        live.update(_view(run.id, {**values, "last_event": chunk.get("judging", "")}, scripted))
                        continue
                    for node, update in chunk.items():
                        if node == "__interrupt__" or not isinstance(update, dict):
                            continue
                        values.update(update)
                        if update.get("last_event"):
                            live.console.print(f"[dim]{node:>10}[/] {escape(update['last_event'])}")
                        live.update(_view(run.id, values, scripted))
        finally:  # in a pipe the view's last frame ends without a newline; what follows starts a line of its own
            if not console.is_terminal:
                console.print()
        snapshot = graph.get_state(config)
        values = dict(snapshot.values)
        if not snapshot.interrupts:
            return values
        payload = Command(resume=_ask_person(run, snapshot.interrupts[0].value))


def _ask_person(run: Any, context: dict[str, Any]) -> str:
    from kernelseek.trace import MAX_MESSAGE_CHARS

    console.print(Panel(Group(
        f"[bold]decision point:[/] {context['decision_point']} — {escape(context['detail'])}",
        f"[bold]best so far:[/] {escape(context['best'])}",
        "[bold]last harness report:[/]\n" + escape(context.get("last_report") or "-"),
        "[bold]the worker's last words:[/]\n" + escape(context.get("worker_words") or "-"),
        "[dim]Type one short question for the worker (Enter: continue without one; /stop ends the run).[/]",
    ), title=f"step {context['step']}: your question", expand=False))
    try:
        answer = console.input("[bold]question>[/] ")
        if not console.is_terminal:
            console.print()
        if len(answer.strip()) > MAX_MESSAGE_CHARS:
            console.print(f"[yellow]warning:[/] the question has {len(answer.strip())} characters; only the first "
                          f"{MAX_MESSAGE_CHARS} are asked (a question is short).")
        return answer
    except EOFError:
        fail(f"no answer came on stdin; the run waits at its question — `kernelseek resume {run.id}` to answer it.", 3)
    raise AssertionError("unreachable")


def finish(run: Any, values: dict[str, Any], as_json: bool = False) -> None:
    """The line that ends a run (stdout), or with --json its summary as JSON."""
    from kernelseek.agent.run_summary import ended

    if as_json:
        return print_json(summary(run, values))
    head, body = ended(run.id, values, run.dir / "best", run.config)
    result.print(f"[bold]{escape(head)}:[/] {escape(body)}")
    if values.get("bank_note"):
        console.print(f"[yellow]warning:[/] {escape(values['bank_note'])}")
    result.print(f"trace: kernelseek trace show {run.id}")


def summary(run: Any, values: dict[str, Any]) -> dict[str, Any]:
    """A run's end for scripts: where it is, why it ended, its best, what it spent, and whether its worker
    was scripted (its SCRIPTED label, else null)."""
    from kernelseek.agent.run_summary import label

    best = values.get("best") or {}
    return {"run_id": run.id, "dir": str(run.dir), "end_reason": values.get("end_reason"),
            "best_speedup": best.get("speedup"), "best_candidate": best.get("candidate"),
            "best_dir": str(run.dir / "best") if best.get("speedup") else None, "steps": values.get("step", 0),
            "evaluations": values.get("evals", 0), "cost_usd": values.get("cost_usd", 0.0),
            "unpriced_calls": values.get("unpriced_calls", 0), "bank_note": values.get("bank_note"),
            "scripted": label(run.config)}


def execute(run: Any, payload: Any, as_json: bool = False) -> None:
    from kernelseek.agent.run_summary import label
    from kernelseek.agent.worker import WorkerError
    from kernelseek.harness.runner import stop_all
    from kernelseek.procs import kill_all
    from kernelseek.project import load_graph

    def interrupted(signum: int, frame: Any) -> None:  # noqa: ARG001 - a signal handler's signature
        # Ctrl-C reaches the main thread only, while a judgement's child or a worker's shell command runs in a
        # thread of the graph, in a session of its own; LangGraph waits for that thread before the interrupt
        # goes on, so they are killed here, at once, instead of when they would have ended.
        stop_all()
        kill_all()
        raise KeyboardInterrupt

    if label(run.config):  # said before the run's first line, and again in its panel and its last line
        console.print(f"[bold yellow]{escape(label(run.config))}[/]")
    previous = signal.signal(signal.SIGINT, interrupted)
    try:
        with run.lock():
            with run.checkpointer() as saver:
                values = drive(run, load_graph(run.config.graph, checkpointer=saver), payload)
    except KeyboardInterrupt:
        fail(f"interrupted; nothing completed is lost — `kernelseek resume {run.id}` continues the run.", 130)
    except (WorkerError, ValueError) as error:
        fail(f"{error} (run {run.id}: `kernelseek resume {run.id}` continues it)", 1)
    finally:
        signal.signal(signal.SIGINT, previous)
    console.print()
    finish(run, values, as_json)


def check_sandbox(config: Any) -> None:
    """Refuse a run whose worker could not be confined, unless --unconfined says so; say which it is."""
    from kernelseek.agent.make_run import sandbox_problem
    from kernelseek.settings import ConfigError

    problem = sandbox_problem(config)
    if problem:
        raise ConfigError(problem)
    show_sandbox(config)


def show_sandbox(config: Any) -> None:
    from kernelseek.agent import sandbox

    if config.worker_command:  # an external coding CLI keeps its own environment and confinement
        return
    style = "[yellow]warning:[/] " if config.unconfined else ""
    console.print(f"{style}worker's shell sandbox: {escape(sandbox.describe(config.unconfined))}")


# --- the commands ---------------------------------------------------------------------------------
