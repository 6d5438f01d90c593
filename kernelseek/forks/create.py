"""Make a fork: a new run folder whose first checkpoint is the parent's decision point of step N with
another question put to the worker. Nothing before step N runs again.

1. The parent's checkpoint database is copied (SQLite's backup, consistent while the parent runs) and
   the fork keeps the parent's thread id in it. The checkpoint of the decision point (the one before
   the questioner of step N, `points.checkpoint_at`) gets LangGraph's own fork: `update_state(that
   checkpoint, the questioner's update with the new question, as_node="questioner")` writes a new
   checkpoint branching from it; driving the thread then continues at the worker of step N+1.
2. The workspace is the parent's at that decision point (`decisions/N/workspace/`, saved by the
   questioner). A run recorded before those snapshots gets its judged candidate of that moment instead
   (the state's last candidate), and fork.json says so.
3. candidates/ gets the parent's candidates judged by then (the lineage and the ids go on), best/ the
   best of that moment; replies/, prompts/ and the inbox start empty.
4. The trace starts at step N: run_start (with `fork`: parent, step, the replaced question), the
   decision point, and the new question.

The database appears last, under its name only once the fork's checkpoint is in it: a fork cut off
while being made has no checkpoint (`kernelseek resume` says so) and is made again under another id.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

from kernelseek.agent import snapshots
from kernelseek.agent.run_store import Run, check_run_id, default_runs_dir
from kernelseek.forks import family
from kernelseek.forks.points import QUESTIONER, DecisionPoint, ForkError, checkpoint_at
from kernelseek.settings import ConfigError, Configuration


def parent_state(parent: Run, step: int) -> Any:
    """The StateSnapshot of the parent's decision point of `step`."""
    from kernelseek.agent.graph import load_graph

    if not parent.checkpoints.is_file():
        raise ForkError(f"run {parent.id} has no checkpoints; only a run driven by `kernelseek run` can be forked.")
    with parent.checkpointer() as saver:
        graph = load_graph(parent.config.graph, checkpointer=saver)
        if QUESTIONER not in graph.nodes:
            raise ForkError(f"run {parent.id} ran the graph {parent.config.graph}, which has no questioner node to "
                            "fork at; fork a run of a graph that asks questions.")
        snapshot = checkpoint_at(graph, parent.thread(), step)
    if snapshot is None:
        raise ForkError(f"run {parent.id}: the checkpoints hold no state before the questioner of step {step} "
                        "(the database may come from another run); it cannot be forked there.")
    return snapshot


def _config(parent: Run, values: dict[str, Any], *, mode: str | None, seed: int | None, steps: int | None,
            evals: int | None, dollars: float | None) -> Configuration:
    import uuid

    data = parent.config.to_dict()
    data["run_uuid"] = str(uuid.uuid4())
    if mode is not None:
        data["mode"] = mode
    if seed is not None:
        data["seed"] = seed
    if steps is not None:
        data["max_steps"] = int(values.get("step", 0)) + steps
    if evals is not None:
        data["max_evals"] = int(values.get("evals", 0)) + evals
    if dollars is not None:
        data["max_dollars"] = float(values.get("cost_usd", 0.0)) + dollars
    if parent.config.worker_command and "{session_id}" in parent.config.worker_command:
        raise ForkError(f"run {parent.id}'s worker is an external CLI that keeps its own conversation "
                        "({session_id}), which cannot be rewound to a past step; fork a run of the built-in worker "
                        "or of a CLI template without {session_id}.")
    for name, value in (("--steps", steps), ("--evals", evals), ("--dollars", dollars)):
        if value is not None and value <= 0:
            raise ForkError(f"{name} {value}: the fork's budget after the fork point must be above 0.")
    return Configuration.from_dict(data).validate()


def _restore_workspace(parent: Run, fork_dir: Path, step: int, values: dict[str, Any]) -> str:
    workspace = fork_dir / "workspace"
    saved = snapshots.saved_workspace(parent.dir, step)
    if saved is not None:
        snapshots.copy_tree(saved, workspace)
        return f"the parent's workspace at step {step} (decisions/{step}/workspace)"
    header = getattr(parent.task, "header", "")
    if header and (parent.task.folder / header).is_file():
        shutil.copyfile(parent.task.folder / header, workspace / header)
    last = values.get("last_candidate")
    source = parent.candidate_path(last) if last is not None else Path(parent.config.kernel)
    if not source.is_file():
        source = Path(parent.config.kernel)
    shutil.copyfile(source, workspace / parent.candidate_file.name)
    return (f"no workspace was saved at step {step} (a run recorded before decision-point snapshots): the "
            f"workspace holds {source.name}, the last candidate judged by then, and the task's files only")


def _copy_candidates(parent: Run, fork_dir: Path, values: dict[str, Any]) -> None:
    count = int(values.get("n_candidates", 1))
    for path in sorted((parent.dir / "candidates").iterdir()):
        number = path.name.split(".", 1)[0]
        if number.isdigit() and int(number) < count and path.is_file() and not path.name.endswith(".partial"):
            shutil.copy2(path, fork_dir / "candidates" / path.name)
    best = values.get("best")
    if best and best.get("path"):
        kernel = fork_dir / best["path"]
        report = fork_dir / "candidates" / f"{best['candidate']}.{best.get('judgement', 'full')}.json"
        if kernel.is_file():
            shutil.copyfile(kernel, fork_dir / "best" / f"kernel{kernel.suffix}")
        if report.is_file():
            shutil.copyfile(report, fork_dir / "best" / "judgement.json")
        (fork_dir / "best" / "best.json").write_text(json.dumps(best, indent=1))


def _copy_checkpoints(parent: Run, dest: Path) -> None:
    source = sqlite3.connect(parent.checkpoints)  # the run's own file, or the Studio server's it was made in
    target = sqlite3.connect(dest)
    try:
        source.backup(target)
    finally:
        target.close()
        source.close()


def create_fork(parent: Run, point: DecisionPoint, question: dict[str, Any], *, runs_dir: Path | None = None,
                run_id: str | None = None, mode: str | None = None, seed: int | None = None,
                steps: int | None = None, evals: int | None = None, dollars: float | None = None) -> Run:
    """Make the fork of `parent` at `point` asking `question` ({text, source, bank_id, question_kind}); it is
    not driven here (`kernelseek resume` or the caller drives it)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from kernelseek.agent import questioner, sandbox
    from kernelseek.agent.graph import load_graph

    snapshot = parent_state(parent, point.step)
    values = dict(snapshot.values)
    try:
        config = _config(parent, values, mode=mode, seed=seed, steps=steps, evals=evals, dollars=dollars)
    except ConfigError as error:
        raise ForkError(f"the fork of run {parent.id}: {error}") from None
    runs = Path(runs_dir) if runs_dir else default_runs_dir()
    run_id = check_run_id(run_id) if run_id else f"{parent.id}-at{point.step}-{time.strftime('%H%M%S')}"
    folder = runs / run_id
    runs.mkdir(parents=True, exist_ok=True)
    try:
        folder.mkdir()
    except FileExistsError:
        raise ForkError(f"{folder}: a run with this id exists; pick another --run-id.") from None
    for sub in ("workspace", "candidates", "best", "prompts"):
        (folder / sub).mkdir()
    config.save(folder / "config.json", thread_id=parent.thread_id)
    workspace_from = _restore_workspace(parent, folder, point.step, values)
    snapshots.save(folder, folder / "workspace", point.step)  # a fork of this fork at the same step starts here too
    _copy_candidates(parent, folder, values)

    run = Run(folder)
    info = {"parent_run": parent.id, "parent_dir": str(parent.dir), "parent_uuid": parent.config.run_uuid,
            "step": point.step, "checkpoint_id": snapshot.config["configurable"]["checkpoint_id"],
            "decision_point": {"kind": point.kind, "detail": point.detail}, "replaced": point.asked,
            "question": question if question["text"] else None, "workspace_from": workspace_from,
            "best_speedup": (values.get("best") or {}).get("speedup"), "evals": values.get("evals", 0),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    step = point.step
    run.trace.write("run_start", step=step, key="run_start", task=config.task, kernel=config.kernel, arch=config.arch,
                    mode=config.mode, graph=config.graph, worker=config.model or config.worker_command,
                    target=config.target, target_gain=config.target_gain, budgets=config.budgets(),
                    run_uuid=config.run_uuid, fork=info,
                    sandbox=None if config.worker_command else sandbox.describe(config.unconfined))
    run.trace.write("decision_point", step=step, key=f"{step}:questioner:decision", kind=point.kind,
                    detail=point.detail, worker_words=point.worker_words)
    if question["source"] == "human":
        best = values.get("best") or {}
        from kernelseek.agent import prompts

        run.trace.write("human_message", step=step, key=f"{step}:questioner:human", text=question["text"],
                        decision_point=point.kind,
                        context={"best_speedup": best.get("speedup"), "best": prompts.describe_best(values.get("best")),
                                 "last_report": values.get("last_report", ""),
                                 "worker_words": (values.get("worker_words") or "")[-2000:]})
    if question["text"]:
        run.trace.write("question", step=step, key=f"{step}:questioner:question", text=question["text"],
                        source=question["source"], bank_id=question["bank_id"],
                        question_kind=question["question_kind"], decision_point=point.kind, fork=True,
                        chooser=question.get("chooser") or "human")

    update = questioner.question_update(values, config, point.kind, point.detail, question["text"], question["bank_id"])
    update |= {"run_dir": str(run.dir), "inbox_seen": 0, "cli_session": None, "end_reason": None,
               "bank_note": None}
    partial = folder / "checkpoints.sqlite.partial"
    _copy_checkpoints(parent, partial)
    connection = sqlite3.connect(partial, check_same_thread=False)
    try:
        graph = load_graph(config.graph, checkpointer=SqliteSaver(connection))
        forked = graph.update_state(snapshot.config, update, as_node=QUESTIONER)
    finally:
        connection.close()
    info["fork_checkpoint_id"] = forked["configurable"]["checkpoint_id"]
    (folder / family.FORK_FILE).write_text(json.dumps(info, indent=1))
    os.replace(partial, folder / "checkpoints.sqlite")
    family.note_child(parent.dir, {"run": run.id, "dir": str(run.dir), "step": step, "created": info["created"]})
    return run
