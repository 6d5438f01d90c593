"""The tool-rich baseline (the prevailing style: equipped, not asked): the same worker and harness gate,
no questions, and extra tools — profiler summary, compiled-code digest, document retrieval, lessons store
(`kernelseek/toolrich/`)."""

from __future__ import annotations

from typing import Any

from graphs import build_graph
from kernelseek.toolrich import TOOLS


def build(checkpointer: Any = None) -> Any:
    return build_graph(questioner=False, extra_tools=TOOLS, checkpointer=checkpointer, name="tool_rich")


graph = build()
