"""One run of an experiment, in its own process: `python -m kernelseek.experiment.child RUN_FOLDER`.

Starts the run from its configuration, or resumes it from its last checkpoint (the same as
`kernelseek resume`), and prints one JSON line per graph update ({"ks": "update", ...}) for the parent's
progress display, then {"ks": "end", ...} or {"ks": "error", "message": ...}. The run's lock
(`Run.lock`, the one `kernelseek run/resume` take) keeps two processes from driving the same run.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

Emit = Callable[..., None]  # emit(kind, **fields)


def emit(kind: str, **fields: Any) -> None:
    print(json.dumps({"ks": kind, **fields}, default=str), flush=True)


def drive(run_dir: Path, emit: Emit = emit) -> int:
    from kernelseek.agent.graph import load_graph
    from kernelseek.agent.run_store import Run
    from kernelseek.agent.worker import WorkerError

    run = Run(run_dir)
    try:
        with run.checkpointer() as saver:
            return _stream(run, load_graph(run.config.graph, checkpointer=saver), emit)
    except (WorkerError, ValueError) as error:
        emit("error", message=str(error))
        return 1


def _stream(run: Any, graph: Any, emit: Emit) -> int:
    """Drive `run` through `graph` to its end (or a question it cannot ask), emitting each update."""
    from kernelseek.agent.context import RunContext
    from kernelseek.agent.state import initial_state
    from kernelseek.checkpoints import has_ended, pending_nodes

    config = run.thread()
    snapshot = graph.get_state(config)
    if has_ended(snapshot):
        emit("end", reason=snapshot.values.get("end_reason"), already=True)
        return 0
    payload = None if snapshot.values else initial_state(str(run.dir))
    values = dict(snapshot.values or {})
    for chunk in graph.stream(payload, config, context=RunContext.of(run), stream_mode="updates",
                              durability="sync"):
        for node, update in chunk.items():
            if node == "__interrupt__":
                emit("error", message=f"run {run.id} stopped at a question for a person; an experiment runs "
                     "unattended (mode auto or none)")
                return 3
            if isinstance(update, dict):
                values.update(update)
                emit("update", node=node, step=values.get("step", 0), event=update.get("last_event"),
                     best=(values.get("best") or {}).get("speedup"), evals=values.get("evals", 0))
    final = graph.get_state(config)
    if not has_ended(final):
        emit("error", message=f"run {run.id} stopped before its end (at {', '.join(pending_nodes(final))})")
        return 3
    emit("end", reason=final.values.get("end_reason"), best=(final.values.get("best") or {}).get("speedup"),
         step=final.values.get("step", 0))
    return 0


def drive_locked(run_dir: Path, emit: Emit = emit) -> int:
    """Take the run's lock and drive it (also what a Ray task of `kernelseek.engine.experiment` does)."""
    from kernelseek.agent.run_store import Run
    from kernelseek.settings import ConfigError

    run = Run(Path(run_dir).resolve())
    try:
        with run.lock():
            return drive(run.dir, emit)
    except ConfigError as error:  # another process drives it
        emit("error", message=str(error))
        return 4


def main(argv: list[str]) -> int:
    return drive_locked(Path(argv[0]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
