"""The harness: the one judge. Importable with torch alone — no agent stack.

    from kernelseek.harness import judge, build_kernel, load_task
    verdict = judge("evals/tasks/<task>", "kernels/seeds/<seed>.cu", arch="sm90", quick=True)
    verdict.correct, verdict.speedup, verdict.reason, verdict.to_dict()

`judge` guards the source, builds it (cached by content), runs every scenario of the suite in a child
process with a time limit (check, time against the baseline, check again), and returns a `Judgement`.
"""

from kernelseek.harness.build import BuildError, BuildResult, build_kernel
from kernelseek.harness.judge import Judgement, judge
from kernelseek.harness.task import Baseline, Scenario, Task, TaskError, load_task

__all__ = ["Baseline", "BuildError", "BuildResult", "Judgement", "Scenario", "Task", "TaskError",
           "build_kernel", "judge", "load_task"]
