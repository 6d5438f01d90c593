"""The graph of a run and the table the method's argument rests on.

`build_graph(events)` returns a `networkx.DiGraph` with these nodes (attribute `kind`):

    step:N        a graph step (worker turn): model_calls, tool_calls, cost_usd, tokens
    cand:ID       a candidate: correct, best, speedup, parent, report
    eval:SEQ      one harness judgement: judgement, correct, speedup, best, reason
    decision:SEQ  a decision point: point, detail
    question:SEQ  a question (or a human message in traces without question events): text,
                  question_kind, source, bank_id, decision_point, before, after, gain
    gain:ID       a candidate that became the best: ratio to the best before it, large

and edges (attribute `rel`): step -> next step ("next"), step -> each event in it ("contains"),
parent cand -> cand ("edited_from": the edit started from the parent), eval -> cand ("judges"),
decision -> the question asked at it ("prompted"), cand -> gain ("became_best"), and
question -> gain ("preceded") for each large gain attributed to that question (`outcomes.py` has the
rules: the latest question before the gain, when the gain's candidate is among the K candidates
evaluated after it and before the next question).

A question's kind is the one its event records; a human question without one is classified by the
documented rules of `kernelseek.bank.classify`, or by a model when one is given (`trace analyze --model`).
The claim itself (totals, plateau steps, the verdict) is `kernelseek.analysis.claim`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import networkx as nx

from kernelseek.bank.classify import rule_kind
from kernelseek.bank.outcomes import (
    DEFAULT_K,
    DEFAULT_LARGE,
    DEFAULT_SUCCESS,
    Candidate,
    attribute,
    candidates,
    gain_events,
    next_seq,
    question_events,
    score_question,
)
from kernelseek.trace import QUESTION_KINDS, read_trace, trace_path


@dataclass
class Ask:
    seq: int
    step: int
    time: str
    text: str
    kind: str
    source: str
    bank_id: str | None
    decision_point: str
    before: float | None
    after: float | None
    gain: float | None
    chooser: str = "human"  # who picked it: "human", "model:<name>", "policy:<name>" (the question event's)
    large_gains: list[str] = field(default_factory=list)  # candidate ids attributed to it


@dataclass
class Gain:
    candidate: str
    seq: int
    step: int
    speedup: float
    before: float | None
    ratio: float | None
    large: bool
    question_seq: int | None  # the ask it is attributed to (large gains only)


@dataclass
class RunAnalysis:
    run_id: str
    path: Path
    events: list[dict[str, Any]]
    graph: nx.DiGraph
    candidates: list[Candidate]
    asks: list[Ask]
    gains: list[Gain]
    start: dict[str, Any]
    threshold: float
    k: int

    @property
    def evaluations(self) -> int:
        return len(self.candidates)

    @property
    def wrong(self) -> int:
        return sum(1 for c in self.candidates if not c.correct)

    @property
    def model_calls(self) -> int:
        return sum(1 for e in self.events if e["type"] == "model_call")

    @property
    def tool_calls(self) -> int:
        """Tool calls the model asked for (counted on its replies)."""
        total = 0
        for event in self.events:
            if event["type"] == "model_call" and isinstance(event.get("tool_calls"), list):
                total += len(event["tool_calls"])
        return total

    @property
    def cost_usd(self) -> float:
        return round(sum(float(e["cost_usd"] or 0) for e in self.events if e["type"] == "model_call"), 6)

    @property
    def tokens(self) -> int:
        return sum(int(e.get("prompt_tokens") or 0) + int(e.get("completion_tokens") or 0)
                   for e in self.events if e["type"] == "model_call")

    @property
    def best(self) -> Candidate | None:
        best = [c for c in self.candidates if c.best and c.speedup is not None]
        return max(best, key=lambda c: c.speedup or 0) if best else None

    @property
    def steps(self) -> int:
        return max((e["step"] for e in self.events), default=0)

    @property
    def worker(self) -> str:
        """The worker as the run recorded it: a litellm model, `scripted/<file>`, or a CLI command."""
        return str(self.start.get("worker") or "")

    @property
    def scripted(self) -> bool:
        """A scripted worker replays fixed replies: its run shows the machinery working, not a model's gains."""
        return self.worker.startswith("scripted/")

    @property
    def fork(self) -> dict[str, Any] | None:
        fork = self.start.get("fork")
        return fork if isinstance(fork, dict) else None

    @property
    def large_gains(self) -> list[Gain]:
        return [g for g in self.gains if g.large]

    @property
    def plateau_step(self) -> int | None:
        """The last step whose candidate improved the best by at least the threshold (None: none did)."""
        return max((g.step for g in self.large_gains), default=None)


def _kind_of(event: dict[str, Any], model: str | None = None) -> str:
    """The kind the event records; else the model's (when given; a failed call falls back to the rules),
    else the documented rules'."""
    kind = event.get("question_kind")
    if kind in QUESTION_KINDS:
        return kind
    text = " ".join(str(event.get("text", "")).split())
    if model:
        return _model_kind(text, model)
    return rule_kind(text)


def _chooser_of(event: dict[str, Any]) -> str:
    if event.get("chooser"):
        return str(event["chooser"])
    return "human" if (event.get("source") or "human") == "human" else "policy:thompson"  # before choosers were recorded


@functools.lru_cache(maxsize=4096)
def _model_kind(text: str, model: str) -> str:
    from kernelseek.bank.classify import model_classify

    return model_classify(text, model).kind


def run_id_of(path: Path, events: list[dict[str, Any]]) -> str:
    for event in events:
        if event["type"] == "run_start" and event.get("run_id"):
            return str(event["run_id"])
    return path.parent.name


def fork_base(events: list[dict[str, Any]]) -> Candidate | None:
    """A fork's starting point as a candidate: the parent's best at the fork point (a fork's trace starts
    there and holds none of the parent's evaluations), so that a fork's first new best is a gain over it."""
    start = next((e for e in events if e["type"] == "run_start"), None)
    fork = (start or {}).get("fork")
    speedup = fork.get("best_speedup") if isinstance(fork, dict) else None
    if not isinstance(speedup, int | float) or isinstance(speedup, bool) or speedup <= 0:
        return None
    return Candidate(id=FORK_POINT, seq=start["seq"], step=start["step"], parent=None, correct=True, best=True,
                     speedup=float(speedup), report=None)


FORK_POINT = "(fork point)"


def analyze_events(events: list[dict[str, Any]], *, run_id: str = "run", path: Path | None = None,
                   threshold: float = DEFAULT_LARGE, k: int = DEFAULT_K,
                   success: float = DEFAULT_SUCCESS, model: str | None = None) -> RunAnalysis:
    cands = candidates(events)
    base = fork_base(events)
    judged = [base, *cands] if base else cands  # what gains are measured against (the fork point counts)
    ask_events = question_events(events)
    ask_seqs = [e["seq"] for e in ask_events]
    asks: dict[int, Ask] = {}
    for event in ask_events:
        scored = score_question(judged, event["seq"], k=k, success=success, until=next_seq(ask_seqs, event["seq"]))
        asks[event["seq"]] = Ask(
            seq=event["seq"], step=event["step"], time=str(event.get("time", "")),
            text=" ".join(str(event.get("text", "")).split()), kind=_kind_of(event, model),
            source=str(event.get("source") or "human"), bank_id=event.get("bank_id"),
            decision_point=str(event.get("decision_point")), before=scored.before, after=scored.after,
            gain=scored.gain, chooser=_chooser_of(event))
    gains = []
    for event in gain_events(judged):
        if event.candidate is base:
            continue
        large = event.ratio is not None and event.ratio >= threshold - 1e-9
        qseq = attribute(event, ask_seqs, judged, k) if large else None
        if qseq is not None:
            asks[qseq].large_gains.append(event.candidate.id)
        gains.append(Gain(candidate=event.candidate.id, seq=event.candidate.seq, step=event.candidate.step,
                          speedup=float(event.candidate.speedup or 0), before=event.before, ratio=event.ratio,
                          large=large, question_seq=qseq))
    start = next((e for e in events if e["type"] == "run_start"), {})
    analysis = RunAnalysis(run_id=run_id, path=path or Path(run_id), events=events, graph=nx.DiGraph(),
                           candidates=cands, asks=list(asks.values()), gains=gains, start=start,
                           threshold=threshold, k=k)
    analysis.graph = build_graph(analysis)
    return analysis


def analyze_run(run: str | Path, *, threshold: float = DEFAULT_LARGE, k: int = DEFAULT_K,
                success: float = DEFAULT_SUCCESS, model: str | None = None) -> RunAnalysis:
    """Read a run folder (or trace.jsonl) and analyse it; raises TraceError (one sentence) on a bad trace.
    `model`: a litellm model that classifies the questions whose events record no kind."""
    path = trace_path(run)
    events = read_trace(path)
    return analyze_events(events, run_id=run_id_of(path, events), path=path, threshold=threshold, k=k,
                          success=success, model=model)


def build_graph(analysis: RunAnalysis) -> nx.DiGraph:
    graph = nx.DiGraph(run_id=analysis.run_id)
    steps = sorted({e["step"] for e in analysis.events})
    for step in steps:
        graph.add_node(f"step:{step}", kind="step", step=step, model_calls=0, tool_calls=0, cost_usd=0.0,
                       tokens=0)
    for a, b in zip(steps, steps[1:], strict=False):
        graph.add_edge(f"step:{a}", f"step:{b}", rel="next")
    for cand in analysis.candidates:
        graph.add_node(f"cand:{cand.id}", kind="candidate", correct=cand.correct, best=cand.best,
                       speedup=cand.speedup, parent=cand.parent, report=cand.report, step=cand.step)
    for cand in analysis.candidates:
        if cand.parent is not None and graph.has_node(f"cand:{cand.parent}"):
            graph.add_edge(f"cand:{cand.parent}", f"cand:{cand.id}", rel="edited_from")
    asks = {a.seq: a for a in analysis.asks}
    last_decision: str | None = None
    for event in analysis.events:
        step_node = f"step:{event['step']}"
        node = None
        if event["type"] in ("model_call", "tool_call"):
            data = graph.nodes[step_node]
            if event["type"] == "model_call":
                data["model_calls"] += 1
                data["tool_calls"] += len(event.get("tool_calls") or [])
                data["cost_usd"] += float(event.get("cost_usd") or 0)
                data["tokens"] += int(event.get("prompt_tokens") or 0) + int(event.get("completion_tokens") or 0)
            continue
        if event["type"] == "evaluation":
            node = f"eval:{event['seq']}"
            graph.add_node(node, kind="evaluation", judgement=event["judgement"], correct=event["correct"],
                           speedup=event["speedup"], best=event["best"], reason=event["reason"],
                           step=event["step"])
            graph.add_edge(node, f"cand:{event['candidate']}", rel="judges")
        elif event["type"] == "decision_point":
            node = last_decision = f"decision:{event['seq']}"
            graph.add_node(node, kind="decision", point=event["kind"], detail=event["detail"], step=event["step"])
        elif event["seq"] in asks:
            ask = asks[event["seq"]]
            node = f"question:{ask.seq}"
            graph.add_node(node, kind="question", text=ask.text, question_kind=ask.kind, source=ask.source,
                           bank_id=ask.bank_id, decision_point=ask.decision_point, before=ask.before,
                           after=ask.after, gain=ask.gain, step=ask.step)
            if last_decision is not None:
                graph.add_edge(last_decision, node, rel="prompted")
                last_decision = None
        if node is not None:
            graph.add_edge(step_node, node, rel="contains")
    for gain in analysis.gains:
        node = f"gain:{gain.candidate}"
        graph.add_node(node, kind="gain", ratio=gain.ratio, large=gain.large, speedup=gain.speedup, step=gain.step)
        graph.add_edge(f"cand:{gain.candidate}", node, rel="became_best")
        if gain.question_seq is not None:
            graph.add_edge(f"question:{gain.question_seq}", node, rel="preceded", ratio=gain.ratio)
    return graph


def kind_table(analyses: list[RunAnalysis]) -> list[dict[str, Any]]:
    """Per question kind: questions asked, large gains that followed, successes and mean gain after."""
    rows = []
    for kind in QUESTION_KINDS:
        asks = [a for run in analyses for a in run.asks if a.kind == kind]
        gains = [a.gain for a in asks if a.gain is not None]
        rows.append({"kind": kind, "asked": len(asks),
                     "large_gains": sum(len(a.large_gains) for a in asks),
                     "mean_gain_after": round(sum(gains) / len(gains), 4) if gains else None,
                     "workers": workers_of([run for run in analyses if any(a.kind == kind for a in run.asks)])})
    return rows


def worker_label(run: RunAnalysis) -> str:
    return "scripted" if run.scripted else (run.worker or "unknown")


def workers_of(analyses: list[RunAnalysis]) -> str:
    """Who worked in these runs, for a table's column: "scripted", a model's name, or "2 scripted, 1 x"."""
    labels = [worker_label(run) for run in analyses]
    counts = {label: labels.count(label) for label in dict.fromkeys(labels)}
    if len(counts) <= 1:
        return next(iter(counts), "-")
    return ", ".join(f"{n} {label}" for label, n in counts.items())


def chooser_table(analyses: list[RunAnalysis]) -> list[dict[str, Any]]:
    """Per chooser (a person, a model, the contextual policy): questions, large gains after, mean gain after."""
    rows = []
    for chooser in sorted({a.chooser for run in analyses for a in run.asks}):
        asks = [a for run in analyses for a in run.asks if a.chooser == chooser]
        gains = [a.gain for a in asks if a.gain is not None]
        rows.append({"chooser": chooser, "asked": len(asks), "large_gains": sum(len(a.large_gains) for a in asks),
                     "mean_gain_after": round(sum(gains) / len(gains), 4) if gains else None,
                     "workers": workers_of([run for run in analyses if any(a.chooser == chooser for a in run.asks)])})
    return rows


def run_table(analyses: list[RunAnalysis]) -> list[dict[str, Any]]:
    """Per run: evaluations, wrong candidates, model tool calls, questions, large gains, cost, best."""
    rows = []
    for run in analyses:
        best = run.best
        rows.append({"run": run.run_id, "worker": worker_label(run), "mode": run.start.get("mode"), "steps": run.steps,
                     "evaluations": run.evaluations, "wrong": run.wrong, "model_calls": run.model_calls,
                     "tool_calls": run.tool_calls, "questions": len(run.asks),
                     "large_gains": len(run.large_gains),
                     "attributed": sum(1 for g in run.large_gains if g.question_seq is not None),
                     "plateau_step": run.plateau_step,
                     "best_speedup": round(best.speedup, 4) if best and best.speedup else None,
                     "cost_usd": run.cost_usd})
    return rows


def gains_table(analyses: list[RunAnalysis]) -> list[dict[str, Any]]:
    """Every large gain with the question it is attributed to (or none)."""
    rows = []
    for run in analyses:
        asks = {a.seq: a for a in run.asks}
        for gain in run.large_gains:
            ask = asks.get(gain.question_seq) if gain.question_seq is not None else None
            rows.append({"run": run.run_id, "worker": worker_label(run), "candidate": gain.candidate, "step": gain.step,
                         "speedup": round(gain.speedup, 4), "ratio": round(gain.ratio or 0, 4),
                         "question_kind": ask.kind if ask else None, "question": ask.text if ask else None})
    return rows


def elapsed_minutes(events: list[dict[str, Any]]) -> list[float]:
    """Minutes since the first event, per event (0 where a time cannot be read)."""
    times = []
    for event in events:
        try:
            times.append(datetime.fromisoformat(str(event["time"])))
        except ValueError:
            times.append(None)
    first = next((t for t in times if t is not None), None)
    return [((t - first).total_seconds() / 60.0) if t is not None and first is not None else 0.0 for t in times]
