"""The lessons store: what worked and what failed, carried across the attempts of a run.

A JSON file in the run folder (`runs/<id>/lessons.json`): a list of lessons the worker recorded, each
{"time", "step", "outcome": "worked" | "failed" | "note", "lesson"}. Recalling also lists the harness's
verdict on every candidate of the run (from its trace), so the record of what was tried never depends on
the worker remembering to write it down. Written atomically: a crash never leaves half a file.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from kernelseek.files import atomic_write_json

OUTCOMES = ("worked", "failed", "note")


class LessonStore:
    def __init__(self, path: str | Path):
        self.path = Path(path)

    def load(self) -> list[dict]:
        if not self.path.is_file():
            return []
        try:
            data = json.loads(self.path.read_text())
        except json.JSONDecodeError:
            return []
        return [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []

    def record(self, lesson: str, outcome: str = "note", step: int | None = None) -> dict:
        lesson = lesson.strip()
        if not lesson:
            raise ValueError("the lesson is empty; say what worked or failed and why")
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome '{outcome}' is unknown; use one of {', '.join(OUTCOMES)}")
        entry = {"time": datetime.now(UTC).isoformat(timespec="seconds"), "step": step, "outcome": outcome,
                 "lesson": lesson[:2000]}
        lessons = self.load()
        for old in lessons:  # a step replayed after a crash records its lesson once
            if (old.get("step"), old.get("outcome"), old.get("lesson")) == (step, outcome, entry["lesson"]):
                return old
        lessons.append(entry)
        atomic_write_json(self.path, lessons)
        return entry

    def recall(self, trace: Path | None = None) -> str:
        lines = []
        lessons = self.load()
        if lessons:
            lines.append(f"lessons recorded ({len(lessons)}):")
            lines += [f"  [{e['outcome']}] {e['lesson']}" for e in lessons]
        else:
            lines.append("no lessons recorded yet.")
        verdicts = candidate_history(trace) if trace else []
        if verdicts:
            lines.append("the harness's verdicts on this run's candidates:")
            lines += [f"  {v}" for v in verdicts]
        return "\n".join(lines)


def candidate_history(trace: Path) -> list[str]:
    """One line per judged candidate of a run, from its trace (its last judgement)."""
    from kernelseek.trace import TraceError, read_trace

    try:
        events = read_trace(trace) if trace.is_file() else []
    except TraceError:
        return []
    last: dict[int, dict] = {}
    for e in events:
        if e["type"] == "evaluation":
            last[e["candidate"]] = e
    out = []
    for n, e in sorted(last.items()):
        verdict = f"correct, {e['speedup']:.3f}x ({e['judgement']})" if e["correct"] and e["speedup"] else \
            "correct" if e["correct"] else f"INCORRECT: {(e.get('reason') or '')[:160]}"
        origin = "the starting kernel" if e["parent"] is None else f"from {e['parent']}"
        out.append(f"candidate {n} ({origin}): {verdict}" + (" — became the best" if e["best"] else ""))
    return out
