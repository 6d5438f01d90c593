"""Parallel work on Ray: an experiment's runs and several judgements at once, from a laptop to a cluster.

Ray is an optional extra (`pip install 'kernelseek[ray]'`); without it, `--parallel N` runs the work one item
after another and says so. With it, `ray.init(address="local")` starts a Ray cluster of the command's own on
this machine, or `--ray-address` / `RAY_ADDRESS` joins an existing one.

    cluster.py     is Ray here, connect to (or start) a cluster, what it holds, its dashboard
    auth.py        Ray's token authentication: the token found where Ray looks, sent when a head asks for it
    board.py       the progress board: tasks report to it, the driver's live view reads it
    experiment.py  each (graph, repeat) of an experiment as a Ray task driving one resumable run
    judge.py       each candidate of `kernelseek eval A B ...` as a Ray task, one GPU each

Run folders and reports are written where the task runs, so the experiment's folder must be a path every node
reads and writes at the same place (on one machine it always is; on a cluster, a shared filesystem). That is
what makes a lost worker or a lost node harmless: the rescheduled task finds the run's checkpoints and trace
where the lost one left them and resumes from its last completed step. Copying folders back from the task
would lose exactly those checkpoints with the node.
"""

from kernelseek.engine.cluster import Cluster, EngineError, connect, no_ray_line, ray_available

__all__ = ["Cluster", "EngineError", "connect", "no_ray_line", "ray_available"]
