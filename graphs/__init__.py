"""The graphs `langgraph.json` and `kernelseek run --graph NAME` load: each `graphs/<name>.py` builds one with
`kernelseek.agent.graph.build_graph` and exposes `build(checkpointer=None)` and a compiled `graph`."""

from kernelseek.agent.graph import GRAPHS, build_graph, load_graph

__all__ = ["GRAPHS", "build_graph", "load_graph"]
