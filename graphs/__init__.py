"""The LangGraph state machines. `build_graph` wires the nodes of `kernelseek.agent`; each graph module
here is a few lines on top of it and exposes `build(checkpointer=None)` and a compiled `graph`:

    kernelseek   the question-driven loop (worker, harness, questioner)
    (issue 6)    tool_rich: build_graph(extra_tools=[...]); no_question: build_graph(questioner=False)

    START ─▶ start ─▶ worker ─┬─(evaluate)─▶ harness ─┬─▶ worker
                        ▲  └─┼─(tools)──▶ worker       ├─(decision point)─▶ questioner ─▶ worker
                        │    └─(stops)───▶ questioner  └─(target / budget)─▶ finish ─▶ END
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from kernelseek.agent import budgets, sandbox
from kernelseek.agent import questioner as questioner_node
from kernelseek.agent.cli_worker import cli_step
from kernelseek.agent.configuration import Configuration
from kernelseek.agent.decision_points import detect
from kernelseek.agent.harness_node import evaluate
from kernelseek.agent.run_store import Run
from kernelseek.agent.state import State, initial_state
from kernelseek.agent.tools import BASE_TOOLS, Tool
from kernelseek.agent.worker import model_step

GRAPHS = ("kernelseek", "tool_rich", "no_question")


def load_graph(name: str, checkpointer: Any = None) -> Any:
    """The compiled graph `graphs/<name>.py` builds."""
    try:
        module = importlib.import_module(f"graphs.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"graphs.{name}":
            raise
        raise ValueError(f"--graph '{name}': there is no graphs/{name}.py; use one of the graphs in graphs/.") from None
    return module.build(checkpointer=checkpointer)


def _timed(node: Callable[[State, Run], dict]) -> Callable[[State, RunnableConfig], dict]:
    """Run a node on its run, adding the time it took to the state's working time."""

    def wrapped(state: State, config: RunnableConfig) -> dict:
        run = Run.get(state["run_dir"])
        began = time.monotonic()
        update = node(state, run)
        update["elapsed_s"] = state.get("elapsed_s", 0.0) + (time.monotonic() - began)
        return update

    wrapped.__name__ = node.__name__
    return wrapped


def build_graph(*, questioner: bool = True, extra_tools: Sequence[Tool] = (), checkpointer: Any = None,
                name: str = "kernelseek") -> Any:
    """The loop. `questioner=False` never asks a question (decision points only nudge the worker);
    `extra_tools` are offered to the built-in worker beside the generic ones."""
    tools = [*BASE_TOOLS, *extra_tools]

    def start(state: State, config: RunnableConfig) -> dict:
        if not state.get("run_dir"):  # opened from LangGraph Studio: make the run from the configurable
            fields = Configuration.__dataclass_fields__
            cfg = Configuration.from_dict({k: v for k, v in config.get("configurable", {}).items() if k in fields})
            state = initial_state(str(Run.create(cfg.validate()).dir))
        elif "step" not in state:
            state = initial_state(state["run_dir"])
        run = Run.get(state["run_dir"])
        cfg = run.config
        run.trace.write("run_start", step=0, key="run_start", task=cfg.task, kernel=cfg.kernel, arch=cfg.arch,
                        mode=cfg.mode if questioner else "none", graph=name,
                        worker=cfg.model or cfg.worker_command, target=cfg.target,
                        target_gain=cfg.target_gain, budgets=cfg.budgets(), run_uuid=cfg.run_uuid,
                        sandbox=None if cfg.worker_command else sandbox.describe(cfg.unconfined))
        began = time.monotonic()
        if cfg.judge_start and state.get("best") is None and not state.get("last_sha"):
            state = {**state, **evaluate(state, run, start=True)}
        return {**state, "elapsed_s": state.get("elapsed_s", 0.0) + time.monotonic() - began}

    def worker(state: State, run: Run) -> dict:
        return cli_step(state, run) if run.config.worker_command else model_step(state, run, tools)

    def harness(state: State, run: Run) -> dict:
        return evaluate(state, run)

    def ask(state: State, run: Run) -> dict:
        return questioner_node.ask(state, run, after_eval=not state.get("worker_stopped"),
                                   mode=None if questioner else "none")

    def finish(state: State, run: Run) -> dict:
        reason = budgets.exhausted(state, run.config) or "ended"
        best = state.get("best") or {}
        run.trace.write("run_end", step=state.get("step", 0), key="run_end", reason=reason,
                        best_speedup=best.get("speedup"), steps=state.get("step", 0),
                        cost_usd=state.get("cost_usd", 0.0), tokens=state.get("tokens", 0),
                        evaluations=state.get("evals", 0))
        note = None
        if run.config.mode == "auto" and questioner:
            try:
                from kernelseek.bank import record_run_outcomes

                record_run_outcomes(run.dir)
            except Exception as error:  # noqa: BLE001 - the run is over and recorded; say why the bank is not
                note = f"the bank's statistics were not updated: {error}"
        return {"end_reason": reason, "bank_note": note, "last_event": f"run ended: {reason}"}

    def cfg_of(state: State) -> Configuration:
        return Run.get(state["run_dir"]).config

    def after_start(state: State) -> str:
        return "finish" if budgets.exhausted(state, cfg_of(state)) else "worker"

    def after_worker(state: State) -> str:
        if state.get("pending_eval") is not None:
            return "harness"
        if budgets.exhausted(state, cfg_of(state)):
            return "finish"
        return "questioner" if state.get("worker_stopped") else "worker"

    def after_harness(state: State) -> str:
        cfg = cfg_of(state)
        if budgets.exhausted(state, cfg):
            return "finish"
        return "questioner" if detect(state, cfg, after_eval=True) else "worker"

    def after_questioner(state: State) -> str:
        return "finish" if budgets.exhausted(state, cfg_of(state)) else "worker"

    builder = StateGraph(State)
    builder.add_node("start", start)
    builder.add_node("worker", _timed(worker))
    builder.add_node("harness", _timed(harness))
    builder.add_node("questioner", _timed(ask))
    builder.add_node("finish", _timed(finish))
    builder.add_edge(START, "start")
    builder.add_conditional_edges("start", after_start, ["worker", "finish"])
    builder.add_conditional_edges("worker", after_worker, ["harness", "questioner", "worker", "finish"])
    builder.add_conditional_edges("harness", after_harness, ["questioner", "worker", "finish"])
    builder.add_conditional_edges("questioner", after_questioner, ["worker", "finish"])
    builder.add_edge("finish", END)
    return builder.compile(checkpointer=checkpointer, name=name)

