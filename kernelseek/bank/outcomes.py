"""What followed a question: the scoring shared by the policy, bank learning and the analysis.

Definitions (documented here once, used everywhere):

- A *candidate* counts once, at its first evaluation event, however many judgements it got (a quick
  one, then a full one). It *became the best* when any of its evaluation events has `best: true`
  (the harness sets it only for a correct candidate that passed the full judgement); its speedup is
  the one on that event.
- The *best before* an event is the speedup of the latest candidate that became the best before it
  (the harness's own best at that moment: a fully judged candidate may replace a quickly judged
  seed); None when none had.
- A question's *window* is the next K candidates evaluated after it, cut short where the next
  question is asked (what follows the next question is that question's to claim).
- The *best after* a question is the highest of the best before it and the speedups of the candidates
  in its window that became the best.
- The question's *gain* is best after / best before (a ratio, 1.0 = nothing gained); None when there
  was no best before it (the question cannot be scored). A *success* is a gain of at least X.
- A *gain event* is a candidate that became the best; its size is its speedup / the best before it.
  A *large gain* is one of at least the threshold, and it is *attributed* to the latest question
  asked before it, provided the gain's candidate is in that question's window; otherwise it is
  unattributed.

Questions are the trace's `question` events; a trace with none (an older human-mode trace) uses its
`human_message` events instead. A question and the human message it came from are one ask.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DEFAULT_K = 3          # evaluations looked at after a question
DEFAULT_SUCCESS = 1.05  # X: a gain ratio that counts as a success for the policy
DEFAULT_LARGE = 1.10    # a gain ratio that counts as large for the analysis


@dataclass
class Candidate:
    id: str
    seq: int            # seq of its first evaluation event
    step: int
    parent: str | None
    correct: bool
    best: bool
    speedup: float | None
    report: str | None
    judgements: list[str] = field(default_factory=list)


def candidates(events: list[dict[str, Any]]) -> list[Candidate]:
    """The candidates of a trace in the order they were first evaluated."""
    by_id: dict[str, Candidate] = {}
    order: list[Candidate] = []
    for event in events:
        if event["type"] != "evaluation":
            continue
        cid = str(event["candidate"])
        speedup = event.get("speedup")
        speedup = float(speedup) if isinstance(speedup, int | float) and not isinstance(speedup, bool) else None
        found = by_id.get(cid)
        if found is None:
            found = Candidate(id=cid, seq=event["seq"], step=event["step"], parent=event.get("parent"),
                              correct=bool(event["correct"]), best=False, speedup=speedup,
                              report=event.get("report"))
            by_id[cid] = found
            order.append(found)
        found.judgements.append(str(event.get("judgement")))
        if event.get("best") and event["correct"]:
            found.best, found.speedup, found.correct = True, speedup, True
            found.report = event.get("report") or found.report
        elif not found.best:
            found.correct = bool(event["correct"])  # the latest judgement decides
            found.speedup = speedup
            found.report = event.get("report") or found.report
    return order


def best_before(cands: list[Candidate], seq: int) -> float | None:
    """The speedup of the harness's best candidate at `seq`: the latest one that became the best."""
    values = [c.speedup for c in cands if c.best and c.seq < seq and c.speedup is not None]
    return values[-1] if values else None


def window_after(cands: list[Candidate], seq: int, k: int, until: int | None = None) -> list[Candidate]:
    """The next k candidates evaluated after `seq`, and before `until` (the next question) if given."""
    return [c for c in cands if c.seq > seq and (until is None or c.seq < until)][:k]


def question_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The asks of a trace: its question events, or its human messages when it has no question event."""
    questions = [e for e in events if e["type"] == "question"]
    return questions or [e for e in events if e["type"] == "human_message"]


def next_seq(seqs: list[int], seq: int) -> int | None:
    later = [s for s in seqs if s > seq]
    return min(later) if later else None


@dataclass
class QuestionOutcome:
    seq: int
    before: float | None
    after: float | None
    gain: float | None
    success: bool

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "before": _round(self.before), "after": _round(self.after),
                "gain": _round(self.gain), "success": self.success}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def score_question(cands: list[Candidate], seq: int, *, k: int = DEFAULT_K, success: float = DEFAULT_SUCCESS,
                   until: int | None = None) -> QuestionOutcome:
    """What followed the ask at `seq`; `until` is the seq of the next ask, if any."""
    before = best_before(cands, seq)
    later = [c.speedup for c in window_after(cands, seq, k, until) if c.best and c.speedup is not None]
    if before is None:
        after = max(later) if later else None
        return QuestionOutcome(seq, None, after, None, False)
    after = max([before, *later])
    gain = after / before if before > 0 else None
    return QuestionOutcome(seq, before, after, gain, gain is not None and gain >= success - 1e-9)


@dataclass
class GainEvent:
    candidate: Candidate
    before: float | None
    ratio: float | None


def gain_events(cands: list[Candidate]) -> list[GainEvent]:
    """Every candidate that became the best, with the ratio to the best before it."""
    result = []
    for cand in cands:
        if cand.best and cand.speedup is not None:
            before = best_before(cands, cand.seq)
            ratio = cand.speedup / before if before else None
            result.append(GainEvent(cand, before, ratio))
    return result


def attribute(gain: GainEvent, question_seqs: list[int], cands: list[Candidate], k: int) -> int | None:
    """The seq of the question a gain is attributed to, or None."""
    earlier = [s for s in question_seqs if s < gain.candidate.seq]
    if not earlier:
        return None
    latest = max(earlier)
    if gain.candidate in window_after(cands, latest, k, next_seq(question_seqs, latest)):
        return latest
    return None
