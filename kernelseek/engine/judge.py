"""Several judgements at once: each candidate of `kernelseek eval A B ... --parallel N` is one Ray task.

A task on a GPU target asks for one GPU (`num_gpus=1`): Ray gives each running task a GPU of its own and sets
its CUDA_VISIBLE_DEVICES, so no two judgements ever share a GPU while timing; on the CPU task it asks for one
core. Inside, the task calls the same `kernelseek.harness.judge.judge` that `kernelseek eval` calls with one
kernel, with the same arguments, in a worker process of its own (`max_calls=1`: a fresh process per
judgement, as a fresh `kernelseek eval` is). The report is written by the driver from the returned verdict.
A judgement keeps no checkpoint: one whose worker is lost is judged again from the start (RETRIES times).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernelseek.engine.board import drain, make_board, post, whereabouts
from kernelseek.engine.cluster import EngineError, connect

RETRIES = 1
GPU_ARCHS = ("sm90", "sm100")


def judge_task(label: str, arguments: dict[str, Any], board: Any) -> Any:
    """The Ray task: one judgement, reporting each scenario to the board."""
    from kernelseek.harness.judge import judge

    post(board, label, "started", **whereabouts())

    def started(total: int) -> None:
        post(board, label, "total", total=total)

    def done(result: dict) -> None:
        post(board, label, "scenario", scenario=result.get("scenario"), correct=bool(result.get("correct")),
             speedup=result.get("speedup"))

    return judge(**arguments, progress=done, on_start=started)


def _why(error: BaseException) -> str:
    from ray.exceptions import RayTaskError

    cause = error.cause if isinstance(error, RayTaskError) and getattr(error, "cause", None) is not None else error
    lines = str(cause).strip().splitlines()
    return lines[-1] if lines else type(cause).__name__


def judge_on_ray(items: list[tuple[str, dict[str, Any]]], *, parallel: int, arch: str, address: str | None = None,
                 on_update: Callable[[str, dict[str, Any]], None] | None = None,
                 on_cluster: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Judge every (label, judge() arguments) on Ray, at most `parallel` at once. Returns label -> Judgement,
    or label -> str (one sentence: why it could not be judged). Ctrl-C stops every judgement at once."""
    import ray

    cluster = connect(address)
    try:
        gpu = arch in GPU_ARCHS
        if gpu and not cluster.resources().get("GPU"):
            raise EngineError(f"{cluster.describe()}: no GPU, and judging for {arch} needs one per candidate; "
                              "join a cluster with GPUs (--ray-address) or judge on a machine that has one.")
        need = {"num_cpus": 1, "num_gpus": 1} if gpu else {"num_cpus": 1}
        task = ray.remote(max_calls=1, max_retries=RETRIES, retry_exceptions=False)(judge_task).options(**need)
        board = make_board()
        say = on_update or (lambda label, message: None)
        description = cluster.describe()
        if on_cluster:
            on_cluster(description)
        waiting, inflight, results = list(items), {}, {}
        try:
            while waiting or inflight:
                while waiting and len(inflight) < parallel:
                    label, arguments = waiting.pop(0)
                    inflight[task.remote(label, arguments, board)] = label
                    say(label, {"ks": "placed"})
                ready, _ = ray.wait(list(inflight), num_returns=1, timeout=0.5)
                for message in drain(board):
                    if message.get("label") in inflight.values():
                        say(message["label"], message)
                for ref in ready:
                    label = inflight.pop(ref)
                    try:
                        results[label] = ray.get(ref)
                    except Exception as error:  # noqa: BLE001 - a task's failure is that candidate's result
                        results[label] = _why(error)
                    say(label, {"ks": "done"})
        except BaseException:
            cluster.stop(list(inflight))
            raise
        return results
    finally:
        cluster.shutdown()
