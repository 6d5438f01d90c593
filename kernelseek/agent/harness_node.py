"""The harness node: snapshot the workspace's candidate, judge it, gate it, report back.

The gate. Every evaluation gets the quick judgement. A correct candidate gets the full judgement
unless its quick reading is *clearly slower* than the best's: below the best's quick speedup by more
than the measured noise of the two readings (`kernelseek.agent.gate`: the band is the sum of each
judgement's median scenario spread, (p90 - p10) / median of the candidate's and the baseline's times,
at least 10% and at most 50%). A real gain cannot hide in a noisy quick reading: a 3.6x candidate
that reads 2.98x quick beside a best that read 3.01x is fully judged. The best is chosen on the full
judgements alone: a candidate becomes the best only if its full judgement is correct and its suite
speedup beats the best's full suite speedup. An incorrect candidate never becomes the best. Results
are cached in `candidates/<n>.result.json`, so a step replayed after a crash reuses them instead of
re-timing.

Every full judgement also draws a hold-out sample (`Configuration.holdout_size()` scenarios) from the
task's scenario distribution with a fresh random seed. The seed and the sample's shapes stay outside the
workspace (the trace, the report JSONs): the worker is told the hold-out's count, correctness and
geomean only. Its shapes would turn the hold-out into a second suite to tune to, and with them the
worker could special-case what it is meant to generalize to; the aggregate still tells it when its
kernel is wrong or slow on shapes the suite lacks. A hold-out failure makes the candidate incorrect
(so it cannot become the best); the best is chosen on the suite's speedup.

The sanitizer gate. A candidate that would become the best (the starting kernel included) first runs
under compute-sanitizer on the task's sanitizer suite (`kernelseek.harness.sanitize`): on by default on
a GPU target where compute-sanitizer exists, `--sanitize`/`--no-sanitize` to force it. A finding, a
timeout or a failed run makes the candidate incorrect, so it cannot become the best; the worker is told
each tool's verdict with the first findings (file and line), the trace records a `sanitizer` event, and
the raw outputs stay in `candidates/<n>.sanitizer/`.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
from pathlib import Path
from typing import Any

from kernelseek.agent import gate, prompts, replay
from kernelseek.agent.run_store import Run
from kernelseek.agent.state import State


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _judge(run: Run, path: Path, n: int, quick: bool) -> dict[str, Any]:
    from kernelseek.harness import judge

    kind = "quick" if quick else "full"
    report = run.dir / "candidates" / f"{n}.{kind}.json"
    show = _progress_writer()
    seen = {"done": 0, "total": 0}

    def started(total: int) -> None:
        seen["total"] = total
        show({"judging": f"candidate {n}, {kind} judgement: 0/{total} scenarios"})

    def progress(result: dict) -> None:
        seen["done"] += 1
        mark = "ok" if result.get("correct") else "FAILED"
        speed = f" {result['speedup']:.2f}x" if result.get("speedup") else ""
        show({"judging": f"candidate {n}, {kind} judgement: {seen['done']}/{seen['total']} scenarios "
                         f"(last: {result.get('scenario')} {mark}{speed})"})

    holdout = 0 if quick else run.config.holdout_size()
    holdout_seed = secrets.randbelow(1 << 30) if holdout else None  # fresh each full judgement, never shown
    verdict = judge(run.task, path, arch=run.config.arch, quick=quick, out=report, progress=progress,
                    on_start=started, holdout=holdout, holdout_seed=holdout_seed)
    # The reason goes into the trace, which tools of other graphs show the worker: a hold-out failure is
    # counted there, not named (the report JSON keeps every detail).
    reason = (verdict.failure_reason(shapes=False) or verdict.reason) if verdict.scenarios else verdict.reason
    result = {"judgement": kind, "correct": bool(verdict.correct), "speedup": verdict.speedup,
              "reason": None if verdict.correct else reason, "summary": verdict.summary(holdout_shapes=False),
              "report": str(report.relative_to(run.dir)), "noise": gate.judgement_noise(verdict.suite_results())}
    if verdict.holdout:
        result["holdout"] = {key: verdict.holdout[key] for key in ("n", "seed", "correct", "speedup")}
    return result


def _progress_writer():  # noqa: ANN202
    """LangGraph's custom stream inside a graph (the CLI's live view shows it); a no-op elsewhere."""
    try:
        from langgraph.config import get_stream_writer

        return get_stream_writer()
    except RuntimeError:
        return lambda _: None


def sanitizer_wanted(config: Any, task: Any = None) -> bool:
    """The gate runs when asked (True), never when refused (False), else where it can: a GPU target on a
    machine with compute-sanitizer, for a task that names a sanitizer suite (`task`: the loaded Task, else
    the configuration's is loaded)."""
    if getattr(config, "sanitize", None) is not None:
        return bool(config.sanitize)
    from kernelseek.harness.sanitize import GPU_ARCHS, find_sanitizer, has_sanitizer_suite

    return (config.arch in GPU_ARCHS and find_sanitizer() is not None
            and has_sanitizer_suite(task or config.task, config.arch))


def _sanitize(run: Run, path: Path, n: int) -> dict[str, Any]:
    """The sanitizer gate's report for candidate n (sanitize.SanitizerReport.to_dict())."""
    from kernelseek.harness.sanitize import sanitize

    try:
        return sanitize(run.task, path, run.config.arch,
                        log_dir=run.dir / "candidates" / f"{n}.sanitizer").to_dict()
    except Exception as error:  # noqa: BLE001 - a gate that could not run has not shown the candidate safe
        return {"passed": False, "tools": {}, "scenarios": [], "wall_s": 0.0,
                "reason": f"the sanitizer gate could not run: {type(error).__name__}: {str(error)[:300]}"}


def judge_candidate(run: Run, n: int, best: dict | None, *, start: bool = False) -> dict[str, Any]:
    """Quick judgement, then full unless it is incorrect or clearly slower than the best (the module's
    docstring), then the sanitizer gate if it would become the best; cached by the candidate's content."""
    path = run.candidate_path(n)
    digest = sha256(path)

    def judged() -> dict[str, Any]:
        quick = _judge(run, path, n, quick=True)
        full = _judge(run, path, n, quick=False) if quick["correct"] and not gate.clearly_slower(quick, best) \
            else None
        result = {"sha256": digest, "quick": quick, "full": full}
        would_be_best = quick["correct"] if start else bool(full and full["correct"] and gate.beats_best(full, best))
        if would_be_best and sanitizer_wanted(run.config, run.task):
            result["sanitizer"] = _sanitize(run, path, n)
        return result

    return replay.once(run.dir / "candidates" / f"{n}.result.json", judged,
                       valid=lambda kept: kept.get("sha256") == digest)


def evaluate(state: State, run: Run, *, start: bool = False) -> dict[str, Any]:
    """Judge the workspace's candidate (or, with start=True, the starting kernel as candidate 0)."""
    step, best = state.get("step", 0), state.get("best")
    if start:
        n, parent = 0, None
    else:
        n, parent = state["n_candidates"], state.get("last_candidate")
        if not run.candidate_file.is_file():
            return _answer(state, f"evaluate: the candidate file {run.candidate_file.name} is missing from the "
                           "workspace; write it and call evaluate again.", {})
        if state.get("last_sha") and sha256(run.candidate_file) == state["last_sha"]:
            return _answer(state, f"evaluate: the candidate is unchanged since candidate {parent}, judged already "
                           "(no new evaluation):\n" + state.get("last_report", ""),
                           {"last_report": state.get("last_report", "")})
        shutil.copyfile(run.candidate_file, run.candidate_path(n))
    result = judge_candidate(run, n, None if start else best, start=start)
    quick, full = result["quick"], result["full"]
    sanitizer = result.get("sanitizer")
    safe = sanitizer is None or bool(sanitizer.get("passed"))

    new_best = None
    if not safe:
        pass  # a finding (or a gate that could not run) keeps it from becoming the best
    elif start and quick["correct"]:
        final = full or quick
        new_best = {"candidate": 0, "speedup": final["speedup"], "quick_speedup": quick["speedup"],
                    "quick_noise": quick.get("noise"), "judgement": final["judgement"], "path": str(run.candidate_path(0).relative_to(run.dir))}
    elif full and full["correct"] and gate.beats_best(full, best):
        new_best = {"candidate": n, "speedup": full["speedup"], "quick_speedup": quick["speedup"],
                    "quick_noise": quick.get("noise"), "judgement": "full", "path": str(run.candidate_path(n).relative_to(run.dir))}
    if new_best:
        _snapshot_best(run, n, new_best, full or quick)

    for verdict in filter(None, (quick, full)):
        run.trace.write("evaluation", step=step, key=f"{step}:harness:{n}:{verdict['judgement']}", candidate=n,
                        parent=parent, path=str(run.candidate_path(n).relative_to(run.dir)),
                        sha256=result["sha256"], judgement=verdict["judgement"], correct=verdict["correct"],
                        speedup=verdict["speedup"], reason=verdict["reason"],
                        best=bool(new_best) and verdict is (full or quick), report=verdict["report"],
                        **({"noise": verdict["noise"]} if verdict.get("noise") is not None else {}),
                        **({"holdout": verdict["holdout"]} if verdict.get("holdout") else {}))

    if sanitizer is not None:
        run.trace.write("sanitizer", step=step, key=f"{step}:harness:{n}:sanitizer", candidate=n,
                        passed=safe, reason=sanitizer.get("reason"), wall_s=sanitizer.get("wall_s"),
                        tools={tool: {"status": v.get("status"), "errors": v.get("errors"), "reason": v.get("reason"),
                                      "wall_s": v.get("wall_s")} for tool, v in (sanitizer.get("tools") or {}).items()},
                        logs=f"candidates/{n}.sanitizer")

    correct = quick["correct"] and (full is None or full["correct"]) and safe
    report = quick["summary"] + (("\n" + full["summary"]) if full else "")
    if sanitizer is not None:
        from kernelseek.harness.judge import sanitizer_lines

        report += "\n" + sanitizer_lines(sanitizer).strip()
        if not safe:
            report += ("\nThe sanitizer gate failed, so this candidate is incorrect and cannot become the best: "
                       f"{sanitizer.get('reason')}")
    if new_best and not start:
        report += f"\nThis candidate is the new best: {new_best['speedup']:.3f}x on the full suite."
    elif correct and not start and full is None:
        report += (f"\nClearly slower than the best's quick reading ({(best or {}).get('quick_speedup') or 0:.3f}x, "
                   "beyond the timing noise), so it was not judged on the full suite.")
    elif correct and not start:
        report += f"\nNot better than the best ({prompts.describe_best(best)})."
    report += f"\nBest so far: {prompts.describe_best(new_best or best)}. Target: " \
              f"{prompts.describe_target(run.config)}."
    update: dict[str, Any] = {
        "n_candidates": max(state.get("n_candidates", 1), n + 1), "last_candidate": n,
        "last_sha": result["sha256"], "best": new_best or best,
        "last_event": f"candidate {n}: " + ("correct" if correct else "INCORRECT") +
                      (f", {quick['speedup']:.3f}x quick" if quick["speedup"] else "") + (", new best" if new_best else ""),
    }
    if not start and run.config.mode == "auto" and state.get("asked"):
        _record_outcomes(run)  # keep the bank's statistics current: a crash later loses none of them
    if start:
        update["start_speedup"] = new_best["speedup"] if new_best else None
    else:
        update |= {"evals": state.get("evals", 0) + 1,
                   "evals_since_gain": 0 if new_best else state.get("evals_since_gain", 0) + 1,
                   "incorrect_streak": 0 if correct else state.get("incorrect_streak", 0) + 1}
    return _answer(state, report, update)


def _answer(state: State, report: str, update: dict[str, Any]) -> dict[str, Any]:
    """Give the report to the worker: as the evaluate call's result, or as a message for a CLI worker."""
    messages = list(state.get("messages") or [])
    pending = state.get("evaluate_call")
    if pending:
        messages.append({"role": "tool", "tool_call_id": pending, "content": report})
    elif messages:
        messages.append({"role": "user", "content": "The harness's report on your candidate:\n" + report})
    return {"messages": messages, "evaluate": False, "evaluate_call": None, "last_report": report, **update}


def _record_outcomes(run: Run) -> None:
    try:
        from kernelseek.bank import record_run_outcomes

        record_run_outcomes(run.dir)
    except Exception:  # noqa: BLE001, S110 - the run must go on; the run's end records them again and reports why
        pass


def _snapshot_best(run: Run, n: int, best: dict[str, Any], verdict: dict[str, Any]) -> None:
    folder = run.best_dir
    shutil.copyfile(run.candidate_path(n), folder / f"kernel{run.candidate_path(n).suffix}")
    shutil.copyfile(run.dir / verdict["report"], folder / "judgement.json")
    (folder / "best.json").write_text(json.dumps(best, indent=1))
