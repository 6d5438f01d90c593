"""The method's claim, stated from traces: totals, the plateau step of each run, and one verdict line
that says how sure it is.

    totals(analyses)        human messages, questions by source, tool calls, evaluations, wrong candidates
                            (summed over the runs)
    plateau_step(analysis)  the last step whose candidate improved the best by at least the large-gain
                            threshold (None when no gain was large): after it the run made no large gain
    verdict(analyses)       the claim "every large gain followed a layer-shift or reject-limit question",
                            with its evidence (`kernelseek.analysis.evidence`):
      - each large gain is attributed (`kernelseek.bank.outcomes`: the latest question before it, with the
        gain among the K candidates evaluated after that question); a gain attributed to another kind, or
        to no question, breaks the claim and is named;
      - the counts: of the layer-shift and reject-limit questions asked, how many a large gain followed, and
        of the inform questions, with 95% intervals, the difference's interval and a one-sided permutation
        test;
      - forks (runs made by `kernelseek fork` or a forks experiment: the same prefix, a different question)
        are the causal evidence: the same counts over forks, by the kind of the question each fork asked;
        where there are forks, their comparison decides;
      - below MIN_LARGE_GAINS large gains the verdict is "insufficient evidence", whatever the counts;
      - a run whose worker is scripted (fixed replies) is named as such: it shows the machinery, not a model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelseek.analysis.evidence import MIN_LARGE_GAINS, Comparison, rate_interval
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
    holds: bool | None  # None: not enough evidence, or the evidence does not settle it
    line: str
    breaking: list[dict[str, Any]] = field(default_factory=list)
    status: str = ""    # "insufficient evidence", "holds", "fails", or for forks "supported" / "contradicted" / "not settled"
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"claim": CLAIM, "holds": self.holds, "status": self.status, "line": self.line,
                "breaking": self.breaking, "min_large_gains": MIN_LARGE_GAINS, **self.evidence}


def compare_questions(analyses: list[RunAnalysis]) -> Comparison:
    """Asked questions: how many of the layer-shift/reject-limit ones and of the inform ones a large gain followed."""
    asks = [a for run in analyses for a in run.asks]
    direction = [a for a in asks if a.kind in CLAIM_KINDS]
    inform = [a for a in asks if a.kind == "inform"]
    return Comparison("layer-shift or reject-limit questions", sum(1 for a in direction if a.large_gains),
                      len(direction), "inform questions", sum(1 for a in inform if a.large_gains), len(inform),
                      sum(len(run.large_gains) for run in analyses))


def compare_forks(forks: list[RunAnalysis]) -> Comparison:
    """Forks: how many of those asking a layer-shift/reject-limit question, and of those asking an inform
    one, made a large gain after their question (the same prefix, only the question differs)."""
    def gained(run: RunAnalysis) -> bool:
        return any(a.large_gains for a in run.asks)

    def kind(run: RunAnalysis) -> str | None:
        return run.asks[0].kind if run.asks else None

    direction = [run for run in forks if kind(run) in CLAIM_KINDS]
    inform = [run for run in forks if kind(run) == "inform"]
    return Comparison("layer-shift or reject-limit forks", sum(map(gained, direction)), len(direction),
                      "inform forks", sum(map(gained, inform)), len(inform),
                      sum(len(run.large_gains) for run in forks))


def workers_note(analyses: list[RunAnalysis]) -> str:
    scripted = sum(1 for run in analyses if run.scripted)
    if not scripted:
        return ""
    who = "the worker is scripted" if scripted == len(analyses) else f"{scripted} of {len(analyses)} runs have a scripted worker"
    return f" [{who}: its replies were fixed in advance, so this shows the machinery, not what a model does]"


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
    forks = [run for run in analyses if run.fork]
    observed = compare_questions(analyses)
    evidence: dict[str, Any] = {"large_gains": judged, "questions": observed.to_dict(),
                                "scripted_runs": sum(1 for run in analyses if run.scripted), "runs": len(analyses)}
    note = workers_note(analyses)
    if forks:
        causal = compare_forks(forks)
        evidence["forks"] = {"count": len(forks), **causal.to_dict()}
        status = causal.outcome()
        holds = {"supported": True, "contradicted": False}.get(status)
        size = (f"{causal.large_gains} large gain(s) over {len(forks)} fork(s)"
                + (f", fewer than the {MIN_LARGE_GAINS} a verdict needs" if not causal.enough else ""))
        return Verdict(holds, f"{CLAIM}, by forks (same prefix, a different question): {status} ({size}; "
                       f"{causal.sentence()}){note}", breaking, status, evidence)
    if judged < MIN_LARGE_GAINS:
        return Verdict(None, f"{CLAIM}: insufficient evidence ({judged} large gain(s) in {len(analyses)} run(s), "
                       f"fewer than the {MIN_LARGE_GAINS} a verdict needs; {observed.sentence()}){note}",
                       breaking, "insufficient evidence", evidence)
    share, low, high = rate_interval(judged - len(breaking), judged)
    shared = f"{judged - len(breaking)} of {judged} large gains after one (95% interval of the share {low:.2f}-{high:.2f})"
    if not breaking:
        return Verdict(True, f"{CLAIM}: holds ({shared}; {observed.sentence()}){note}", breaking, "holds", evidence)
    named = "; ".join(f"{b['run']} {b['candidate']} x{b['ratio']:g} at step {b['step']} "
                      + (f"after a {b['question_kind']} question" if b["question_kind"] else "attributed to no question")
                      for b in breaking)
    return Verdict(False, f"{CLAIM}: fails ({len(breaking)} of {judged} large gains: {named}; {shared}; "
                   f"{observed.sentence()}){note}", breaking, "fails", evidence)
