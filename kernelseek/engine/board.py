"""The progress board: one small Ray actor that tasks post their progress to, and the driver reads.

A task posts {"label", "ks": kind, ...} messages (`started` with its node, worker pid and GPUs; then the work's
own updates); the driver drains them every half second for its live view. The board is pinned to the driver's
node and takes no CPU, so it neither occupies a run's slot nor goes down with a worker node. Posting never
waits: a board that is gone costs the live view its updates, never a run its result.
"""

from __future__ import annotations

from typing import Any


def make_board() -> Any:
    """Start the board actor on this (the driver's) node; returns its handle."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    @ray.remote(num_cpus=0)
    class Board:
        def __init__(self) -> None:
            self.messages: list[dict[str, Any]] = []

        def post(self, message: dict[str, Any]) -> None:
            self.messages.append(message)

        def drain(self) -> list[dict[str, Any]]:
            out, self.messages = self.messages, []
            return out

    here = ray.get_runtime_context().get_node_id()
    return Board.options(scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False)).remote()


def drain(board: Any, timeout_s: float = 5.0) -> list[dict[str, Any]]:
    import ray
    from ray.exceptions import GetTimeoutError, RayActorError

    try:
        return ray.get(board.drain.remote(), timeout=timeout_s)
    except (GetTimeoutError, RayActorError):
        return []


def post(board: Any, label: str, kind: str, **fields: Any) -> None:
    try:
        board.post.remote({"label": label, "ks": kind, **fields})
    except Exception:  # noqa: BLE001 - the board is only the live view's; a run goes on without it
        pass


def whereabouts() -> dict[str, Any]:
    """Where the calling task runs: node address, worker pid, the GPUs Ray gave it."""
    import os

    import ray

    return {"node": ray.util.get_node_ip_address(), "pid": os.getpid(),
            "gpus": [str(g) for g in ray.get_gpu_ids()]}
