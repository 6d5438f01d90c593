"""`kernelseek run`, `kernelseek resume` and `kernelseek trace show`: drive the question-driven loop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from kernelseek.commands.errors import fail

console = Console()
RunsDir = Annotated[Path | None, typer.Option(help="Where runs live (default: $KERNELSEEK_RUNS, else "
                                              "$XDG_DATA_HOME/kernelseek/runs or ~/.local/share/kernelseek/runs).")]


# --- the live view --------------------------------------------------------------------------------

def _view(run_id: str, values: dict[str, Any]) -> Panel:
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
    return Panel(table, title=f"kernelseek run {run_id}", expand=False)


def drive(run: Any, graph: Any, payload: Any) -> dict[str, Any]:
    """Stream the graph to its end, showing progress, and answer human-mode questions from stdin."""
    from langgraph.types import Command

    from kernelseek.agent.context import RunContext

    config, context = run.thread(), RunContext.of(run)
    values = dict(graph.get_state(config).values or {}) or (dict(payload) if isinstance(payload, dict) else {})
    while True:
        with Live(_view(run.id, values), console=console, refresh_per_second=4, transient=console.is_terminal) as live:
            for mode, chunk in graph.stream(payload, config, context=context, stream_mode=["updates", "custom"],
                                            durability="sync"):
                if mode == "custom":  # the harness's progress while it judges
                    live.update(_view(run.id, {**values, "last_event": chunk.get("judging", "")}))
                    continue
                for node, update in chunk.items():
                    if node == "__interrupt__" or not isinstance(update, dict):
                        continue
                    values.update(update)
                    if update.get("last_event"):
                        live.console.print(f"[dim]{node:>10}[/] {escape(update['last_event'])}")
                    live.update(_view(run.id, values))
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


def _finish(run: Any, values: dict[str, Any]) -> None:
    console.print()
    best = values.get("best") or {}
    speed = f"{best['speedup']:.3f}x (candidate {best['candidate']}, {run.dir / 'best'})" if best.get("speedup") else "none"
    console.print(f"[bold]run {run.id} ended:[/] {escape(str(values.get('end_reason')))} · best {escape(speed)} · "
                  f"{values.get('step', 0)} steps · {values.get('evals', 0)} evaluations · ${values.get('cost_usd', 0):.4f}")
    if values.get("bank_note"):
        console.print(f"[yellow]warning:[/] {escape(values['bank_note'])}")
    console.print(f"trace: kernelseek trace show {run.id}")


def _execute(run: Any, payload: Any) -> None:
    from kernelseek.agent.worker import WorkerError
    from kernelseek.project import load_graph

    try:
        with run.lock():
            with run.checkpointer() as saver:
                values = drive(run, load_graph(run.config.graph, checkpointer=saver), payload)
    except KeyboardInterrupt:
        from kernelseek.harness.runner import stop_all

        stop_all()  # a judgement running in one of the graph's threads stops now, its child killed
        fail(f"interrupted; nothing completed is lost — `kernelseek resume {run.id}` continues the run.", 130)
    except (WorkerError, ValueError) as error:
        fail(f"{error} (run {run.id}: `kernelseek resume {run.id}` continues it)", 1)
    _finish(run, values)


def _check_sandbox(config: Any) -> None:
    """Refuse a run whose worker could not be confined, unless --unconfined says so; say which it is."""
    from kernelseek.agent import sandbox
    from kernelseek.agent.configuration import ConfigError

    if config.worker_command:  # an external coding CLI keeps its own environment and confinement
        return
    problem = None if config.unconfined else sandbox.unavailable()
    if problem:
        raise ConfigError(problem)
    style = "[yellow]warning:[/] " if config.unconfined else ""
    console.print(f"{style}worker's shell sandbox: {escape(sandbox.describe(config.unconfined))}")


def _model_args(pairs: list[str]) -> dict[str, Any]:
    from kernelseek.agent.configuration import ConfigError

    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--model-arg '{pair}' is not KEY=VALUE; write e.g. --model-arg temperature=0.2.")
        try:
            kwargs[key] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key] = value
    return kwargs


# --- the commands ---------------------------------------------------------------------------------

def register(app: typer.Typer, *, trace_app: typer.Typer, **_: typer.Typer) -> None:
    @app.command("run")
    def run_command(
        task: str = typer.Argument(..., help="Task folder, or a task's name: the project's here, else the package's (e.g. rmsnorm_cpu)."),
        kernel: Annotated[Path | None, typer.Option(help="The kernel the run starts from (default: the task's seed).")] = None,
        arch: str = typer.Option(None, help="Target: sm90, sm100 or cpu (default: the task's first)."),
        model: str = typer.Option(None, help="Built-in worker: a litellm model, e.g. anthropic/claude-sonnet-4-5, "
                                  "or scripted/PATH for a scripted model (tests)."),
        worker_command: str = typer.Option(None, help="External worker: a coding CLI command run in the workspace "
                                           "each turn; {prompt} or {prompt_file} is replaced, else the prompt is on stdin."),
        mode: str = typer.Option("auto", help="Who asks at decision points: human (you, at the prompt), auto (the "
                                 "question bank), none (nobody)."),
        target: float = typer.Option(None, help="End the run when the best speedup reaches this, e.g. 1.16."),
        target_gain: float = typer.Option(None, help="Or end it when the best is this many times the starting "
                                          "kernel's speedup, e.g. 1.3."),
        max_steps: int = typer.Option(60, help="Budget: worker turns."),
        max_dollars: float = typer.Option(20.0, help="Budget: model dollars (litellm's prices)."),
        max_tokens: int = typer.Option(None, help="Budget: model tokens (counts models litellm has no price for)."),
        max_wall: float = typer.Option(None, help="Budget: seconds of work (waiting for you does not count)."),
        max_evals: int = typer.Option(None, help="Budget: evaluations."),
        plateau: int = typer.Option(4, help="Decision point after this many evaluations without a gain."),
        failing: int = typer.Option(3, help="Decision point after this many incorrect candidates in a row."),
        judge_start: bool = typer.Option(True, "--judge-start/--no-judge-start",
                                         help="Judge the starting kernel first, so the best starts there."),
        graph: str = typer.Option("kernelseek", help="The graph under graphs/ to run."),
        seed: int = typer.Option(0, help="Seed of the question bank's policy."),
        model_arg: Annotated[list[str] | None, typer.Option(
            help="An argument for litellm.completion as KEY=VALUE (VALUE read as JSON when it parses), "
                 "e.g. temperature=0.2 or api_base=http://localhost:8000; repeatable.")] = None,
        limit_detector_model: str = typer.Option(None, help="Also ask this model whether the worker claims a "
                                                 "limit when the rules find none."),
        chooser_model: str = typer.Option(None, help="Auto mode: the model that picks the question for the "
                                          "situation among the ones offered (default: the worker's own model when "
                                          "it is a real one; 'policy': the contextual policy picks)."),
        chooser_offer: int = typer.Option(4, help="Auto mode: how many fitting questions are offered to the chooser."),
        no_eval_steps: int = typer.Option(8, help="A decision point after this many worker steps without an "
                                          "evaluation."),
        run_id: str = typer.Option(None, help="Name the run (default: the time and a random suffix)."),
        runs_dir: RunsDir = None,
        bank_stats: Annotated[Path | None, typer.Option(help="The bank statistics file this run reads and records "
                              "into (default: ~/.local/share/kernelseek/stats.json; a scripted model records "
                              "only into one named here).")] = None,
        context_tokens: int = typer.Option(None, help="The model's input window in tokens, where litellm does "
                                           "not know it (the conversation is trimmed to fit)."),
        checkpointer: str = typer.Option("sqlite", help="Where the run's checkpoints live: sqlite (a file in the "
                                         "run folder) or a PostgreSQL URL, e.g. postgresql://me@db:5432/kernelseek "
                                         "(shared by a team or a cluster; password via $PGPASSWORD or ~/.pgpass)."),
        unconfined: bool = typer.Option(False, "--unconfined", help="Run the worker's shell without the sandbox, "
                                        "with your full rights (only where bubblewrap is missing)."),
        sanitize: bool = typer.Option(None, "--sanitize/--no-sanitize", help="Run compute-sanitizer (memcheck, "
                                      "racecheck, initcheck, synccheck) on a candidate before it becomes the best "
                                      "(default: on for a GPU target where compute-sanitizer is installed)."),
    ) -> None:
        """Make a kernel faster: a worker edits it, the harness judges it, a questioner asks at decision points.

        The worker (a model through litellm with shell/file tools, or an external coding CLI) works in
        runs/<id>/workspace/ on a copy of the kernel. Every `evaluate` is judged by the harness; only a correct
        candidate that beats the best on the full suite becomes the best (runs/<id>/best/). When the worker says
        it is done, claims a limit, stalls (--plateau) or keeps failing (--failing), one question is asked: by you
        at the prompt (--mode human), by the question bank (auto), or by nobody (none). The run ends at the
        target or when a budget is spent. Ctrl-C, a crash or a kill lose nothing completed:
        `kernelseek resume <id>` continues, and `kernelseek trace show <id>` tells what happened. Examples:

            kernelseek run rmsnorm_cpu --model anthropic/claude-sonnet-4-5 --mode human --target-gain 1.3

            kernelseek run flash_attn_fwd --arch sm90 --worker-command 'claude -p {prompt}' --target 1.16

            kernelseek run rmsnorm_cpu --model scripted/tests/script.yaml --max-steps 5   (a scripted model)
        """
        from kernelseek.agent.configuration import ConfigError, Configuration
        from kernelseek.agent.run_store import Run
        from kernelseek.agent.state import initial_state
        from kernelseek.harness import TaskError, load_task
        from kernelseek.harness.task import seed_kernel
        from kernelseek.models.scripted import ScriptError, load_script

        try:
            loaded = load_task(task)
        except TaskError as error:
            fail(str(error))
        arch = arch or loaded.archs[0]
        if arch not in loaded.archs:
            fail(f"--arch {arch}: the task {loaded.name} has no {arch} suite; use one of {', '.join(loaded.archs)}.")
        if sanitize:
            from kernelseek.harness.sanitize import sanitize_problem

            problem = sanitize_problem(arch)
            if problem:
                fail(problem + ".")
            try:
                loaded.sanitizer_scenarios(arch)
            except TaskError as error:
                fail(str(error))
        start = kernel or seed_kernel(loaded)
        if model and model.startswith("scripted/"):
            try:
                load_script(model.removeprefix("scripted/"))
            except ScriptError as error:
                fail(str(error))
        try:
            config = Configuration(
                task=str(loaded.folder), kernel=str(Path(start).resolve()), arch=arch, model=model,
                worker_command=worker_command, mode=mode, graph=graph, target=target, target_gain=target_gain, max_steps=max_steps,
                max_dollars=max_dollars, max_tokens=max_tokens, max_wall_s=max_wall, max_evals=max_evals,
                plateau_evals=plateau, failing_evals=failing, judge_start=judge_start, seed=seed,
                limit_detector_model=limit_detector_model, unconfined=unconfined, context_tokens=context_tokens,
                chooser_model=chooser_model, chooser_offer=chooser_offer, no_eval_steps=no_eval_steps,
                sanitize=sanitize,
                bank_stats=str(bank_stats.expanduser().resolve()) if bank_stats else None,
                model_kwargs=_model_args(model_arg or [])).validate()
            from kernelseek import preflight

            problem = preflight.check(config.arch, [(config.model, config.model_kwargs)])
            if problem:  # before anything is judged or any model called
                raise ConfigError(problem + ".")
            _check_sandbox(config)
            if mode == "auto":
                from kernelseek.bank import load_bank

                load_bank()  # a malformed bank file is reported now, not at the first question
            from kernelseek.checkpoints import check_ref, is_url

            if is_url(check_ref(checkpointer)):
                from kernelseek.checkpoints import open_saver

                with open_saver(checkpointer):  # reachable, with its tables, before the run is made
                    pass
            shared = is_url(checkpointer)  # a shared database: the thread is the run's UUID, unique across folders
            run = Run.create(config, runs_dir, run_id, thread_id=config.run_uuid if shared else None,
                             checkpoints=checkpointer if shared else None)
        except (ConfigError, ValueError) as error:
            fail(str(error))
        console.print(f"run [bold]{run.id}[/] in {run.dir}")
        _execute(run, initial_state(str(run.dir)))

    @app.command("resume")
    def resume_command(
        run_id: str = typer.Argument(..., help="The run's id (its folder name under the runs folder) or its folder."),
        runs_dir: RunsDir = None,
    ) -> None:
        """Continue a run after Ctrl-C, a crash or a kill, from its last completed step.

        A step that was cut off is run again; its trace events are keyed, so none appears twice. A human-mode
        run waiting at a question asks it again. Example: kernelseek resume 20261202-141500-ab12
        """
        from kernelseek.agent.configuration import ConfigError
        from kernelseek.agent.run_store import Run

        try:
            run = Run.open(run_id, runs_dir)
        except ConfigError as error:
            fail(str(error))
        from kernelseek.checkpoints import has_ended, pending_nodes
        from kernelseek.project import load_graph

        try:
            _check_sandbox(run.config)
            with run.checkpointer() as saver:
                snapshot = load_graph(run.config.graph, checkpointer=saver).get_state(run.thread())
        except ConfigError as error:
            fail(str(error))
        if not snapshot.values:
            fail(f"run {run.id} has no checkpoint yet; start a new run instead.")
        if has_ended(snapshot):
            _finish(run, dict(snapshot.values))
            console.print("(the run had already ended; nothing to resume)")
            return
        console.print(f"resuming run [bold]{run.id}[/] at step {snapshot.values.get('step', 0)} "
                      f"({', '.join(pending_nodes(snapshot))})")
        _execute(run, None)  # a run waiting at a question asks it again

    @trace_app.command("show")
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
        return forked + escape(f"{Path(e['task']).name} from {Path(e['kernel']).name} on {e['arch']}, {e['mode']} mode, "
                      f"worker {e['worker']}" + (f" (shell sandbox: {str(e['sandbox']).split(':')[0]})"
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
