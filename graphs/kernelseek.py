"""The question-driven graph: worker, harness and questioner (docs/design.md, "The shape").

`graph` is compiled without a checkpointer for `langgraph dev` / Studio (which bring their own);
`kernelseek run` calls `build(checkpointer=...)` with the run's SQLite checkpointer."""

from typing import Any

from kernelseek.agent.graph import build_graph


def build(checkpointer: Any = None) -> Any:
    return build_graph("kernelseek", asks=True, checkpointer=checkpointer)


graph = build()
