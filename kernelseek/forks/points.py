"""A run's decision points, read from its trace, and the LangGraph checkpoint of each.

A decision point of step N is the moment the graph was about to run the questioner with the state of
step N: the checkpoint whose next node is the questioner and whose state's `step` is N. It is found
on the run's own lineage (from its latest checkpoint back through the parents): a fork's checkpoint
database also holds its parent's later history, the branch the fork did not take.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernelseek.trace import read_trace

QUESTIONER = "questioner"


class ForkError(ValueError):
    """A fork that cannot be made; the message is one sentence naming the run, the step and the fix."""


@dataclass
class DecisionPoint:
    step: int
    kind: str  # done | claimed_limit | plateau | failing
    detail: str
    worker_words: str
    asked: dict[str, Any] | None  # what was asked there: {text, source, bank_id, question_kind}; None: nothing

    def describe_asked(self) -> str:
        if not self.asked:
            return "no question (the worker was told to continue)"
        origin = "typed" if self.asked["source"] == "human" else \
            f"bank {self.asked['bank_id']}, {self.asked['question_kind']}"
        return f"“{self.asked['text']}” ({origin})"


def decision_points(trace_file: Any) -> list[DecisionPoint]:
    """The decision points a run's trace records, in order."""
    events = read_trace(trace_file)
    asked = {e["step"]: e for e in events if e["type"] == "question"}
    points = []
    for event in events:
        if event["type"] != "decision_point":
            continue
        question = asked.get(event["step"])
        points.append(DecisionPoint(
            step=event["step"], kind=event["kind"], detail=event["detail"], worker_words=event.get("worker_words", ""),
            asked={k: question[k] for k in ("text", "source", "bank_id", "question_kind")} if question else None))
    return points


def find_point(points: list[DecisionPoint], step: int, run_id: str) -> DecisionPoint:
    for point in points:
        if point.step == step:
            return point
    steps = ", ".join(str(p.step) for p in points) or "none"
    raise ForkError(f"run {run_id} has no decision point at step {step}; its decision points are at steps {steps} "
                    f"(`kernelseek fork {run_id} --list` shows them).")


def checkpoint_at(graph: Any, thread: dict, step: int) -> Any:
    """The StateSnapshot of the checkpoint before the questioner of `step`, on the thread's latest lineage;
    None when there is none."""
    history = list(graph.get_state_history(thread))
    if not history:
        return None
    by_id = {snap.config["configurable"]["checkpoint_id"]: snap for snap in history}
    snap = graph.get_state(thread)
    snap = by_id.get(snap.config["configurable"]["checkpoint_id"], snap)
    while snap is not None:
        if tuple(snap.next) == (QUESTIONER,) and (snap.values or {}).get("step") == step:
            return snap
        parent = snap.parent_config
        snap = by_id.get(parent["configurable"]["checkpoint_id"]) if parent else None
    return None
