"""`kernelseek experiment CONFIG`: the method's comparison — the question-driven graph beside the graphs it is
compared with (`graphs/tool_rich.py`, `graphs/no_question.py`) on the same task, harness and budget.

    config.py   the YAML file: pydantic models of its fields, each mistake one sentence
    runner.py   every (graph, repeat) as an ordinary, resumable run, one child process each, one after another
                (N at once on Ray: kernelseek/engine/experiment.py)
    child.py    the child: start or resume one run
    metrics.py  a run's figures from its trace; the per-graph summary
    report.py   table.md, results.json, curves.png, index.html
"""

from kernelseek.experiment.config import Experiment, ExperimentConfigError, GraphSpec, load_experiment
from kernelseek.experiment.metrics import RunMetrics, graph_summary, run_metrics

__all__ = ["Experiment", "ExperimentConfigError", "GraphSpec", "RunMetrics", "graph_summary", "load_experiment",
           "run_metrics"]
