"""The question-driven graph: worker, harness and questioner (DESIGN.md, "The shape").

`graph` is compiled without a checkpointer for `langgraph dev` / Studio (which bring their own);
`kernelseek run` calls `build(checkpointer=...)` with the run's SQLite checkpointer."""

from __future__ import annotations

from typing import Any

from graphs import build_graph


def build(checkpointer: Any = None) -> Any:
    return build_graph(questioner=True, checkpointer=checkpointer, name="kernelseek")


graph = build()
