"""The loop as a LangGraph state machine: named nodes and routers, one builder for every graph.

    START ─▶ start ─▶ worker ─┬─(evaluate)─▶ harness ─┬─▶ worker
                        ▲  └─┼─(tools)──▶ worker       ├─(decision point)─▶ questioner ─▶ worker
                        │    └─(stops)───▶ questioner  └─(target / budget)─▶ finish ─▶ END

A node gets the state and LangGraph's runtime; the run (configuration, trace, folders) comes from the
runtime's context (`kernelseek.agent.context.RunContext`). The graphs differ only in what `build_graph` is
given: a graph that asks no questions has a `nudge` node where the others have `questioner` (at a decision
point the worker is only told to go on), and a graph may offer the built-in worker extra tools.
`graphs/<name>.py` builds each one in a few lines.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from kernelseek.agent import budgets, decision_points, sandbox
from kernelseek.agent import questioner as questioner_node
from kernelseek.agent.cli_worker import cli_step
from kernelseek.agent.context import RunContext, context_of
from kernelseek.agent.harness_node import evaluate
from kernelseek.agent.state import State, StudioInput, initial_state
from kernelseek.agent.tools import BASE_TOOLS, Tool
from kernelseek.agent.worker import model_step

GRAPHS = ("kernelseek", "tool_rich", "no_question")


def load_graph(name: str, checkpointer: Any = None) -> Any:
    """The compiled graph `graphs/<name>.py` builds: the project's file, else the package's (loaded from the
    file; no module `graphs` is installed)."""
    from kernelseek.project import load_graph as load

    return load(name, checkpointer=checkpointer)


def timed(node: Callable[..., dict]) -> Callable[..., dict]:
    """Add the time a node took to the state's working time (what the wall-time budget counts)."""

    @functools.wraps(node)
    def wrapped(state: State, runtime: Runtime[RunContext], **graph: Any) -> dict:
        began = time.monotonic()
        update = node(state, runtime, **graph)
        return {**update, "elapsed_s": update.get("elapsed_s", state.get("elapsed_s", 0.0)) + time.monotonic() - began}

    return wrapped


# --- nodes ------------------------------------------------------------------------------------------

@timed
def start(state: State, runtime: Runtime[RunContext], *, graph: str, asks: bool, config: RunnableConfig) -> dict:
    """Open the run (make it first when the graph was started with settings only, as from Studio), record
    its start and judge the starting kernel."""
    context = context_of(runtime)
    if not (state.get("run_dir") or context.run_dir or context.is_open):
        thread = (config.get("configurable") or {}).get("thread_id")
        state = initial_state(str(context.create_run(thread_id=str(thread) if thread else None).dir))
    run = context.run(state)
    if "step" not in state:
        state = initial_state(str(run.dir))
    cfg = run.config
    run.trace.write("run_start", step=0, key="run_start", task=cfg.task, kernel=cfg.kernel, arch=cfg.arch,
                    mode=cfg.mode if asks else "none", graph=graph, worker=cfg.model or cfg.worker_command,
                    target=cfg.target, target_gain=cfg.target_gain, budgets=cfg.budgets(), run_uuid=cfg.run_uuid,
                    sandbox=None if cfg.worker_command else sandbox.describe(cfg.unconfined))
    if cfg.judge_start and state.get("best") is None and not state.get("last_sha"):
        state = {**state, **evaluate(state, run, start=True)}
    return dict(state)


@timed
def worker(state: State, runtime: Runtime[RunContext], *, tools: Sequence[Tool]) -> dict:
    """One worker turn: a model call and its tools, or one turn of an external coding CLI."""
    run = context_of(runtime).run(state)
    update = cli_step(state, run) if run.config.worker_command else model_step(state, run, list(tools))
    merged = {**state, **update}
    if merged.get("evaluate"):  # the harness judges next; its node decides
        return {**update, "steps_since_eval": 0, "pending_decision": None}
    merged["steps_since_eval"] = state.get("steps_since_eval", 0) + 1
    return {**update, "steps_since_eval": merged["steps_since_eval"],
            "pending_decision": _decision(merged, run.config, after_eval=False)}


@timed
def harness(state: State, runtime: Runtime[RunContext]) -> dict:
    """Judge the workspace's candidate and answer the worker's `evaluate`."""
    run = context_of(runtime).run(state)
    update = evaluate(state, run)
    return {**update, "steps_since_eval": 0,
            "pending_decision": _decision({**state, **update}, run.config, after_eval=True)}


def _decision(state: State, cfg: Any, *, after_eval: bool) -> dict[str, str] | None:
    """The decision point reached now, detected once here: the router and the questioner read it."""
    found = decision_points.detect(state, cfg, after_eval=after_eval)
    return {"kind": found[0], "detail": found[1]} if found else None


@timed
def questioner(state: State, runtime: Runtime[RunContext]) -> dict:
    """At a decision point: one question, from a person (human mode) or the bank (auto)."""
    return questioner_node.ask(state, context_of(runtime).run(state), after_eval=not state.get("worker_stopped"))


@timed
def nudge(state: State, runtime: Runtime[RunContext]) -> dict:
    """At a decision point of a graph that asks nothing: the worker is only told to go on."""
    return questioner_node.ask(state, context_of(runtime).run(state), after_eval=not state.get("worker_stopped"),
                               mode="none")


@timed
def finish(state: State, runtime: Runtime[RunContext], *, asks: bool) -> dict:
    """Record the run's end (and, in auto mode, the bank's statistics of its questions)."""
    run = context_of(runtime).run(state)
    reason = budgets.exhausted(state, run.config) or "ended"
    best = state.get("best") or {}
    run.trace.write("run_end", step=state.get("step", 0), key="run_end", reason=reason,
                    best_speedup=best.get("speedup"), steps=state.get("step", 0), cost_usd=state.get("cost_usd", 0.0),
                    tokens=state.get("tokens", 0), evaluations=state.get("evals", 0))
    note = None
    if run.config.mode == "auto" and asks:
        try:
            from kernelseek.bank import record_run_outcomes

            record_run_outcomes(run.dir)
        except Exception as error:  # noqa: BLE001 - the run is over and recorded; say why the bank is not
            note = f"the bank's statistics were not updated: {error}"
    return {"end_reason": reason, "bank_note": note, "last_event": f"run ended: {reason}"}


# --- routers ----------------------------------------------------------------------------------------

def _over(state: State, runtime: Runtime[RunContext]) -> bool:
    return bool(budgets.exhausted(state, context_of(runtime).run(state).config))


def after_start(state: State, runtime: Runtime[RunContext]) -> str:
    return "finish" if _over(state, runtime) else "worker"


def after_worker(state: State, runtime: Runtime[RunContext], *, ask: str) -> str:
    if state.get("evaluate"):
        return "harness"
    if _over(state, runtime):
        return "finish"
    stopped = "pending_decision" not in state and state.get("worker_stopped")  # a checkpoint from before
    return ask if state.get("pending_decision") or stopped else "worker"


def after_harness(state: State, runtime: Runtime[RunContext], *, ask: str) -> str:
    if _over(state, runtime):
        return "finish"
    return ask if state.get("pending_decision") else "worker"


def after_question(state: State) -> str:
    # no runtime here: LangGraph's update_state (a fork's first checkpoint, kernelseek/forks) runs this router
    # without one, so it finds the run through the state's run folder (which every run's state holds)
    return "finish" if _over(state, None) else "worker"


# --- the builder ------------------------------------------------------------------------------------

def build_graph(name: str = "kernelseek", *, asks: bool = True, extra_tools: Sequence[Tool] = (),
                checkpointer: Any = None) -> Any:
    """The loop. `asks=False`: no questions (decision points only nudge the worker); `extra_tools`: offered
    to the built-in worker beside the generic ones."""
    ask = "questioner" if asks else "nudge"
    builder = StateGraph(State, context_schema=RunContext, input_schema=StudioInput)
    builder.add_node("start", functools.partial(start, graph=name, asks=asks))
    builder.add_node("worker", functools.partial(worker, tools=(*BASE_TOOLS, *extra_tools)))
    builder.add_node("harness", harness)
    builder.add_node(ask, questioner if asks else nudge)
    builder.add_node("finish", functools.partial(finish, asks=asks))
    builder.add_edge(START, "start")
    builder.add_conditional_edges("start", after_start, ["worker", "finish"])
    builder.add_conditional_edges("worker", functools.partial(after_worker, ask=ask), ["harness", ask, "worker", "finish"])
    builder.add_conditional_edges("harness", functools.partial(after_harness, ask=ask), [ask, "worker", "finish"])
    builder.add_conditional_edges(ask, after_question, ["worker", "finish"])
    builder.add_edge("finish", END)
    return builder.compile(checkpointer=checkpointer, name=name)
