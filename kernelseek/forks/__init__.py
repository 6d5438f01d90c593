"""Counterfactual forks: a new run from a past decision point of a run, with another question.

    points.py    the decision points of a run (from its trace) and the checkpoint each one has
    question.py  the question a fork asks instead: typed, a bank id, or drawn from a question kind
    create.py    the fork's folder and its first checkpoint (LangGraph's update_state on the past one)
    family.py    forks.json / forks.jsonl: a run's parent and children, the family tree
"""

from kernelseek.forks.create import create_fork
from kernelseek.forks.points import DecisionPoint, ForkError, decision_points

__all__ = ["DecisionPoint", "ForkError", "create_fork", "decision_points"]
