"""Analysis of run traces: a networkx graph per run, attribution of large gains to the question that
preceded them, the per-kind table, and the HTML report (`report.py`, which needs matplotlib)."""

from kernelseek.analysis.graph import RunAnalysis, analyze_run, build_graph, kind_table, run_table

__all__ = ["RunAnalysis", "analyze_run", "build_graph", "kind_table", "run_table"]
