"""The method's claim, stated from traces: totals, the plateau step of each run, and one verdict line.

    totals(analyses)        human messages, questions by source, tool calls, evaluations, wrong candidates
                            (summed over the runs)
    plateau_step(analysis)  the last step whose candidate improved the best by at least the large-gain
                            threshold (None when no gain was large): after it the run made no large gain
    verdict(analyses)       "every large gain followed a layer-shift or reject-limit question: holds" when
                            each large gain of every run is attributed (`kernelseek.bank.outcomes`: the
                            latest question before it, with the gain among the K candidates evaluated
                            after that question) to a question of kind layer_shift or reject_limit;
                            "fails", naming each gain that breaks it (attributed to another kind, or to no
                            question); "cannot be judged" when no run made a large gain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelseek.analysis.graph import RunAnalysis

CLAIM = "every large gain followed a layer-shift or reject-limit question"
CLAIM_KINDS = ("layer_shift", "reject_limit")


def totals(analyses: list[RunAnalysis]) -> dict[str, Any]:
    """Counts over all runs: what the paper's sentence needs."""
    by_source: dict[str, int] = {}
    for run in analyses:
        for ask in run.asks:
            by_source[ask.source] = by_source.get(ask.source, 0) + 1
    return {
        "runs": len(analyses),
        "human_messages": sum(1 for run in analyses for e in run.events if e["type"] == "human_message"),
        "questions": sum(by_source.values()),
        "questions_by_source": dict(sorted(by_source.items())),
        "tool_calls": sum(run.tool_calls for run in analyses),
        "evaluations": sum(run.evaluations for run in analyses),
        "wrong_candidates": sum(run.wrong for run in analyses),
        "large_gains": sum(len(run.large_gains) for run in analyses),
    }


def plateau_step(analysis: RunAnalysis) -> int | None:
    return analysis.plateau_step


@dataclass
class Verdict:
    holds: bool | None  # None: no large gain to judge
    line: str
    breaking: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"claim": CLAIM, "holds": self.holds, "line": self.line, "breaking": self.breaking}


def verdict(analyses: list[RunAnalysis]) -> Verdict:
    judged = 0
    breaking = []
    for run in analyses:
        asks = {a.seq: a for a in run.asks}
        for gain in run.large_gains:
            judged += 1
            ask = asks.get(gain.question_seq) if gain.question_seq is not None else None
            if ask is not None and ask.kind in CLAIM_KINDS:
                continue
            breaking.append({"run": run.run_id, "candidate": gain.candidate, "step": gain.step,
                             "ratio": round(gain.ratio or 0, 4), "question_kind": ask.kind if ask else None,
                             "question": ask.text if ask else None})
    if not judged:
        return Verdict(None, f"{CLAIM}: cannot be judged (no large gain in {len(analyses)} run(s))")
    if not breaking:
        return Verdict(True, f"{CLAIM}: holds ({judged} large gain(s))")
    named = "; ".join(f"{b['run']} {b['candidate']} x{b['ratio']:g} at step {b['step']} "
                      + (f"after a {b['question_kind']} question" if b["question_kind"] else "attributed to no question")
                      for b in breaking)
    return Verdict(False, f"{CLAIM}: fails ({len(breaking)} of {judged} large gains: {named})", breaking)
