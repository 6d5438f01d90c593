"""The no-question ablation: the worker and the harness gate alone — no questions, no extra tools.
At a decision point the worker is only told to continue (the `nudge` node). It isolates what the questions add."""

from typing import Any

from kernelseek.agent.graph import build_graph


def build(checkpointer: Any = None) -> Any:
    return build_graph("no_question", asks=False, checkpointer=checkpointer)


graph = build()
