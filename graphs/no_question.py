"""The no-question ablation: the worker and the harness gate alone — no questions, no extra tools.
At a decision point the worker is only told to continue. It isolates what the questions add."""

from __future__ import annotations

from typing import Any

from graphs import build_graph


def build(checkpointer: Any = None) -> Any:
    return build_graph(questioner=False, checkpointer=checkpointer, name="no_question")


graph = build()
