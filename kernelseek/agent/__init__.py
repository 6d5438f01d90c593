"""The question-driven loop's parts: state, configuration, prompts, tools, the two worker kinds, the
harness node, the questioner, decision points, budgets and the run folder. `graph.py` wires them into the
graph (its nodes reach the run through LangGraph's runtime context, `context.py`); `graphs/` builds the
three graphs from it."""
