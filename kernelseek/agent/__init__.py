"""The question-driven loop's parts: state, configuration, prompts, tools, the two worker kinds, the
harness node, the questioner, decision points, budgets and the run folder. `graphs/` wires them."""
