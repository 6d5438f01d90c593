"""An experiment's runs as Ray tasks: each (graph, repeat) is one task that drives one ordinary, resumable run.

A task asks for one GPU on GPU targets (`num_gpus=1`: Ray sets its CUDA_VISIBLE_DEVICES, and no two runs share
a GPU) or one CPU core on the CPU task (so no two runs' timings share a core), and Ray places it on any node
that has one. The task drives the run in its worker process (`kernelseek.experiment.child.drive_locked`, the
same code as `kernelseek resume`), holding the run's lock. A worker process gets one task and then ends
(`max_calls=1`), so no run inherits another's state.

A worker process that dies (killed, out of memory, its node lost) makes Ray run the task again, up to
RETRIES times; the new attempt takes the run's lock (released by the OS with the dead process) and resumes
from the run's last checkpoint, so a step completed before the loss is never run again. The driver keeps at
most `parallel` runs submitted at once and shows each run's state: waiting (beyond --parallel), placed
(submitted, waiting for a worker with its resources), running (on which node), finished, failed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelseek.engine.board import drain, make_board, post, whereabouts
from kernelseek.engine.cluster import EngineError, connect
from kernelseek.experiment.runner import GPU_ARCHS, Job, result_of

RETRIES = 3  # attempts after a lost worker; each resumes from the run's last checkpoint
LOCK_BUSY = 4  # drive_locked's status when another process holds the run
LOCK_WAIT_S = 30


def drive_run(run_dir: str, label: str, board: Any) -> dict[str, Any]:
    """The Ray task: drive one run to its end (or resume it), posting its progress to the board."""
    from kernelseek.experiment.child import drive_locked

    where = whereabouts()
    folder = Path(run_dir)
    if not (folder / "config.json").is_file():
        return {"code": 5, "last": {"ks": "error", "message": (
            f"the run folder {run_dir} is not visible on node {where['node']}; put the experiment's folder "
            "(--out, or $KERNELSEEK_RUNS) on a filesystem every node mounts at the same path")}}
    post(board, label, "started", **where)
    last: dict[str, Any] = {}

    def emit(kind: str, **fields: Any) -> None:
        last.clear()
        last.update(ks=kind, **fields)
        post(board, label, kind, **fields)

    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        code = drive_locked(folder, emit)
        if code != LOCK_BUSY or time.monotonic() > deadline:
            return {"code": code, "last": last}
        time.sleep(1)  # the attempt before this one may still be ending (its node's processes go down in seconds)


def _result(job: Job, outcome: dict[str, Any]) -> str:
    last = outcome.get("last") or {}
    why = last.get("message") if last.get("ks") == "error" else f"exit status {outcome.get('code')}"
    return result_of(outcome.get("code"), job.run_dir, why)


def _failure(error: BaseException) -> str:
    from ray.exceptions import NodeDiedError, RayTaskError, WorkerCrashedError

    if isinstance(error, WorkerCrashedError | NodeDiedError):
        return (f"failed: its worker was lost {RETRIES + 1} times; the run keeps its last checkpoint, run the "
                "command again to resume it")
    if isinstance(error, RayTaskError):
        cause = error.cause if getattr(error, "cause", None) is not None else error
        text = str(cause).strip().splitlines()
        if isinstance(cause, ModuleNotFoundError):
            return (f"failed: {text[-1] if text else cause} on the worker; install kernelseek (with [ray]) on "
                    "every node of the cluster")
        return f"failed: {type(cause).__name__}: {text[-1] if text else ''}"
    return f"failed: {type(error).__name__}: {error}"


def run_jobs_on_ray(jobs: list[Job], *, parallel: int, arch: str, address: str | None = None,
                    on_update: Callable[[Job, dict[str, Any]], None] | None = None,
                    on_cluster: Callable[[str], None] | None = None) -> None:
    """Run the unfinished jobs on Ray, at most `parallel` at once; each job's `result` says how it went. On
    Ctrl-C (or any exception here) the running tasks are stopped (each run resumable from its last completed
    step), Ray is left, and the exception goes on."""
    import ray

    todo = [j for j in jobs if j.state != "finished"]
    cluster = connect(address)
    try:
        resources = cluster.resources()
        gpu = arch in GPU_ARCHS
        if gpu and not resources.get("GPU"):
            raise EngineError(f"{cluster.describe()}: no GPU, and runs on {arch} need one each; join a cluster "
                              "with GPUs (--ray-address) or run on a machine that has one.")
        need = {"num_cpus": 1, "num_gpus": 1} if gpu else {"num_cpus": 1}
        task = ray.remote(max_calls=1, max_retries=RETRIES, retry_exceptions=False)(drive_run).options(**need)
        board = make_board()
        by_label = {j.label: j for j in todo}
        states = {j.label: "waiting" for j in todo}
        starts: dict[str, int] = {}
        waiting, inflight = list(todo), {}
        say = on_update or (lambda job, message: None)

        described = [cluster.describe(), time.monotonic()]

        def summary() -> str:
            if time.monotonic() - described[1] > 10:  # nodes join and leave
                described[:] = [cluster.describe(), time.monotonic()]
            count = {s: sum(1 for v in states.values() if v == s) for s in ("placed", "running", "finished", "failed")}
            return (f"{described[0]} · placed {count['placed']} · running {count['running']} · "
                    f"finished {count['finished']} · failed {count['failed']} of {len(todo)}")

        last_line = ""
        try:
            while waiting or inflight:
                while waiting and len(inflight) < parallel:
                    job = waiting.pop(0)
                    inflight[task.remote(str(job.run_dir), job.label, board)] = job
                    states[job.label] = "placed"
                    say(job, {"ks": "placed"})
                ready, _ = ray.wait(list(inflight), num_returns=1, timeout=0.5)
                for message in drain(board):
                    job = by_label.get(message.get("label", ""))
                    if job is None or states[job.label] in ("finished", "failed"):
                        continue
                    if message["ks"] == "started":
                        starts[job.label] = starts.get(job.label, 0) + 1
                        states[job.label] = "running"
                        if starts[job.label] > 1:
                            message = {**message, "ks": "rescheduled", "attempt": starts[job.label]}
                    say(job, message)
                for ref in ready:
                    job = inflight.pop(ref)
                    try:
                        job.result = _result(job, ray.get(ref))
                    except Exception as error:  # noqa: BLE001 - a task's failure is that run's result
                        job.result = _failure(error)
                    states[job.label] = "finished" if job.result == "finished" else "failed"
                    say(job, {"ks": "done", "result": job.result})
                line = summary()
                if on_cluster and line != last_line:
                    on_cluster(line)
                    last_line = line
        except BaseException:
            for job in inflight.values():  # a run stopped mid-step resumes from its last completed one
                job.result = "stopped: interrupted (resumable)"
            cluster.stop(list(inflight))
            raise
    finally:
        cluster.shutdown()
