"""The tool-rich baseline (the prevailing style: equipped, not asked): the same worker and harness gate,
no questions, and extra tools — profiler summary, compiled-code digest, document retrieval, lessons store
(`kernelseek/toolrich/`)."""

from typing import Any

from kernelseek.agent.graph import build_graph
from kernelseek.toolrich import TOOLS


def build(checkpointer: Any = None) -> Any:
    return build_graph("tool_rich", asks=False, extra_tools=TOOLS, checkpointer=checkpointer)


graph = build()
