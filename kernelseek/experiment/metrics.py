"""The figures of one run, read from its trace alone (`kernelseek/trace.py`), and their summary per graph.

Per run:
    best_speedup    the best kernel's speedup at the end (full judgement; the starting kernel's if nothing beat it)
    start_speedup   the starting kernel's speedup (candidate 0)
    curve           best speedup over steps: [(step, best)], from step 0 (the start) to the last step
    reach           per level: the first step at which the best reached it, the dollars and tokens spent by then
    steps           worker turns; cost_usd and tokens over all model calls (unpriced calls count $0 and are counted)
    evaluations     candidates the harness judged (the starting kernel not counted)
    wrong           of those, the incorrect ones
    tool_calls      tool calls the model asked for (evaluate included), with a count per tool; an external
                    coding CLI's own tool calls are not visible (its turns are `worker_command` tool_call events)
    questions       questions asked (question_steps: the steps they were asked at); decision_points reached
    hardware        what its judgements ran on, as the first judgement's report records it (not in the trace)
    plateau_step    the last step whose candidate improved the best by the large-gain threshold (None: none did)
    worker          the run's worker as its trace records it; `scripted` marks one that replays fixed replies
A level is a speedup (level_basis "baseline") or a multiple of the run's starting speedup ("start").
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernelseek.trace import read_trace


@dataclass
class RunMetrics:
    run_id: str
    graph: str
    repeat: int
    seed: int
    finished: bool
    end_reason: str | None
    start_speedup: float | None
    best_speedup: float | None
    steps: int
    cost_usd: float
    tokens: int
    unpriced_calls: int
    evaluations: int
    wrong: int
    tool_calls: int
    tool_counts: dict[str, int]
    questions: int
    decision_points: int
    curve: list[tuple[int, float]]
    question_steps: list[int] = field(default_factory=list)
    reach: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    hardware: str | None = None
    plateau_step: int | None = None
    worker: str = ""

    @property
    def scripted(self) -> bool:
        return self.worker.startswith("scripted/")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def level_key(level: float) -> str:
    return f"{level:g}"


def run_metrics(run_dir: str | Path, *, graph: str, repeat: int, seed: int, levels: list[float],
                basis: str = "baseline") -> RunMetrics:
    run_dir = Path(run_dir)
    events = read_trace(run_dir / "trace.jsonl") if (run_dir / "trace.jsonl").is_file() else []
    end = next((e for e in reversed(events) if e["type"] == "run_end"), None)
    calls = [e for e in events if e["type"] == "model_call"]
    evaluations = [e for e in events if e["type"] == "evaluation"]

    start = next((e["speedup"] for e in reversed(evaluations) if e["candidate"] == 0 and e["best"]), None)
    curve: list[tuple[int, float]] = [(0, start)] if start else []
    best = start
    for e in evaluations:
        if e["best"] and e["candidate"] != 0 and e["speedup"]:
            best = e["speedup"]
            if curve and curve[-1][0] == e["step"]:
                curve[-1] = (e["step"], best)
            else:
                curve.append((e["step"], best))
    steps = end["steps"] if end else max([e["step"] for e in calls], default=0)
    if end and end.get("best_speedup") is not None:
        best = end["best_speedup"]
    if curve and curve[-1][0] < steps:
        curve.append((steps, curve[-1][1]))

    judged = {e["candidate"] for e in evaluations if e["candidate"] != 0}
    wrong = {e["candidate"] for e in evaluations if e["candidate"] != 0 and not e["correct"]}
    tools: Counter = Counter()
    for e in calls:
        for call in e.get("tool_calls") or []:
            tools[call.get("name", "?")] += 1

    def spent(step: int) -> tuple[float, int]:
        upto = [e for e in calls if e["step"] <= step]
        return (round(sum(float(e["cost_usd"] or 0) for e in upto), 6),
                sum(int(e["prompt_tokens"] or 0) + int(e["completion_tokens"] or 0) for e in upto))

    reach: dict[str, dict[str, Any] | None] = {}
    for level in levels:
        threshold = level * start if basis == "start" and start else level if basis == "baseline" else None
        hit = next((s for s, b in curve if threshold is not None and b >= threshold - 1e-12), None)
        if hit is None:
            reach[level_key(level)] = None
        else:
            dollars, tokens = spent(hit)
            reach[level_key(level)] = {"step": hit, "cost_usd": dollars, "tokens": tokens}
    cost, tokens = spent(10**9)
    return RunMetrics(
        run_id=run_dir.name, graph=graph, repeat=repeat, seed=seed, finished=end is not None,
        end_reason=end["reason"] if end else None, start_speedup=start, best_speedup=best, steps=steps,
        cost_usd=cost, tokens=tokens, unpriced_calls=sum(1 for e in calls if e["cost_usd"] is None),
        evaluations=len(judged), wrong=len(wrong), tool_calls=sum(tools.values()), tool_counts=dict(tools),
        questions=sum(1 for e in events if e["type"] == "question"),
        decision_points=sum(1 for e in events if e["type"] == "decision_point"), curve=curve,
        question_steps=[e["step"] for e in events if e["type"] == "question"], reach=reach,
        hardware=judged_on(run_dir),
        plateau_step=_plateau(events, run_dir.name),
        worker=str(next((e.get("worker") for e in events if e["type"] == "run_start"), "") or ""))


def judged_on(run_dir: Path) -> str | None:
    """The hardware the run's first judgement recorded (its starting kernel's report), in one phrase."""
    import json

    from kernelseek.harness.gpu_info import describe_device

    for report in sorted((run_dir / "candidates").glob("*.quick.json")):
        try:
            device = json.loads(report.read_text()).get("device")
        except (OSError, ValueError, AttributeError):
            continue
        if device:
            return describe_device(device)
    return None


def _plateau(events: list[dict[str, Any]], run_id: str) -> int | None:
    from kernelseek.analysis.graph import analyze_events

    return analyze_events(events, run_id=run_id).plateau_step if events else None


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def graph_summary(graph: str, runs: list[RunMetrics], levels: list[float]) -> dict[str, Any]:
    """The row of the comparison table for one graph: medians and spreads over its finished repeats."""
    done = [r for r in runs if r.finished]
    best = [r.best_speedup for r in done if r.best_speedup is not None]
    reach = {}
    for level in levels:
        hits = [r.reach.get(level_key(level)) for r in done]
        hits = [h for h in hits if h]
        reach[level_key(level)] = {
            "reached": len(hits), "of": len(done),
            "median_steps": _median([h["step"] for h in hits]),
            "median_cost_usd": _median([h["cost_usd"] for h in hits]),
            "median_tokens": _median([h["tokens"] for h in hits])}
    return {
        "graph": graph, "runs": len(runs), "finished": len(done),
        "best_speedup_median": _median(best), "best_speedup_min": min(best) if best else None,
        "best_speedup_max": max(best) if best else None,
        "reach": reach,
        "evaluations_median": _median([r.evaluations for r in done]),
        "wrong_median": _median([r.wrong for r in done]),
        "tool_calls_median": _median([r.tool_calls for r in done]),
        "questions_median": _median([r.questions for r in done]),
        "steps_median": _median([r.steps for r in done]),
        "cost_usd_median": _median([r.cost_usd for r in done]),
        "tokens_median": _median([r.tokens for r in done]),
        "unpriced_calls": sum(r.unpriced_calls for r in done),
        "evaluations_total": sum(r.evaluations for r in done), "wrong_total": sum(r.wrong for r in done),
        "tool_calls_total": sum(r.tool_calls for r in done),
        "plateau_median": _median([r.plateau_step for r in done if r.plateau_step is not None]),
        # who worked, from the traces ("scripted" for replayed replies); the report adds `worker`, the provenance
        "workers": ", ".join(sorted({"scripted" if r.scripted else (r.worker or "unknown") for r in runs})) or "—",
    }
