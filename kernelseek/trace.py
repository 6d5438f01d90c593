"""The run trace: an append-only JSON-lines log, one event per line, in `runs/<id>/trace.jsonl`.

This module is the one place the trace schema is defined; the loop writes it, the bank learns from
it, the analysis reads it. Every event carries:

    seq    int     position in the file, from 0
    time   str     ISO-8601 UTC time it was written
    type   str     one of EVENT_FIELDS below
    step   int     the graph step (worker turn) it belongs to
    key    str     idempotency key: an event whose key is already in the file is not written again,
                   so a step replayed after a crash never appears twice

and the fields its type requires (further fields are allowed):

    run_start       task, kernel, arch, mode ("human" | "auto" | "none"), graph, worker, target, budgets
                    (optional: target_gain, run_id, sandbox: what confines the worker's shell,
                    run_uuid: the run's unique id, the key of its bank statistics and of bank learning,
                    fork: in a counterfactual fork, {parent_run, parent_dir, parent_uuid, step, checkpoint_id,
                    decision_point, replaced (what the parent asked there, or null), question, workspace_from,
                    best_speedup, evals (the parent's at that step)}; the fork's trace starts at that step)
    model_call      model, prompt_tokens, completion_tokens, cost_usd (float or null when the model
                    has no price), content (the reply text), tool_calls (list of {name, arguments})
    tool_start      name, arguments (dict): written before a tool runs, keyed "<its tool_call's key>:start"; a
                    start without its tool_call means the call crashed the run (it is not run again)
    tool_call       name, arguments (dict), result (str, capped), ok (bool); an external coding CLI's
                    turn is a tool_call named "worker_command" with arguments {command, prompt_file}
    evaluation      candidate (id), parent (id of the candidate it was edited from, or null), path
                    (relative to the run folder), sha256, judgement ("quick" | "full"), correct (bool),
                    speedup (geomean or null), reason (str or null), best (bool: became the best),
                    report (path of its JSON, relative to the run folder)
                    (optional: holdout, on a judgement that drew a hold-out sample — every full
                    judgement of the loop does: {n (int >= 1), seed (int >= 0: re-draws the sample),
                    correct (int, how many of the n were correct), speedup (their geomean, or null
                    when one failed)}; `speedup` above stays the suite's geomean, and `reason` counts
                    hold-out failures without naming them)
    decision_point  kind (one of DECISION_POINTS), detail (str), worker_words (str)
    question        text, source ("human" | "bank"), bank_id (or null), question_kind (one of
                    QUESTION_KINDS or null), decision_point (kind)
                    (optional: chooser — "human", "model:<name>" or "policy:contextual-thompson";
                    for an auto-mode choice also offered (the bank ids offered, best-scored first),
                    reason (one line: why this one), features (the situation's features) and situation
                    ({features, claimed_limit, slow_groups, fast_groups, report_correct,
                    report_speedup}); see kernelseek/agent/chooser.py;
                    fork: true on the question a fork asks in place of its parent's, whose chooser is
                    "human", "fork:bank-id" or "fork:kind-draw"; kernelseek/forks/question.py)
    human_message   text, decision_point (kind, or "interjection" for a message sent with `kernelseek ask`
                    at no decision point), context ({best_speedup, best, last_report, worker_words})
                    (optional: truncated, the length of a text cut at MAX_MESSAGE_CHARS)
    model_retry     attempt (int >= 1), error (str: the provider's error, one line), wait_s (float): a
                    transient provider error (rate limit, 5xx, timeout, connection) before a retry
    trim            dropped (int: messages left out), dropped_turns (int: the worker's turns among them),
                    tokens_before, tokens_after (int), window (int: the model's input window in tokens):
                    the conversation was trimmed to fit the model's window, keeping the system text (the
                    rules and the task), the first message, the best so far and the recent turns
    sanitizer       candidate (id), passed (bool), tools ({tool: {status ("clean" | "findings" | "timeout" |
                    "failed"), errors (the tool's count or null), reason (str or null), wall_s}}), reason (the
                    first failing tool's reason, or null): the sanitizer gate a candidate that would have
                    become the best ran first (optional: wall_s, logs: the raw outputs' folder)
    run_end         reason (str), best_speedup (float or null), steps (int), cost_usd (float)
                    (optional: tokens, evaluations)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DECISION_POINTS = ("done", "claimed_limit", "plateau", "failing", "no_evaluation")
INTERJECTION = "interjection"  # a human message sent with `kernelseek ask`, at no decision point
MAX_MESSAGE_CHARS = 500  # a typed question or message is cut to this length (with a warning)
QUESTION_KINDS = ("layer_shift", "reject_limit", "inform", "other")

EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "run_start": ("task", "kernel", "arch", "mode", "graph", "worker", "target", "budgets"),
    "model_call": ("model", "prompt_tokens", "completion_tokens", "cost_usd", "content", "tool_calls"),
    "tool_start": ("name", "arguments"),
    "tool_call": ("name", "arguments", "result", "ok"),
    "evaluation": ("candidate", "parent", "path", "sha256", "judgement", "correct", "speedup",
                   "reason", "best", "report"),
    "decision_point": ("kind", "detail", "worker_words"),
    "question": ("text", "source", "bank_id", "question_kind", "decision_point"),
    "human_message": ("text", "decision_point", "context"),
    "model_retry": ("attempt", "error", "wait_s"),
    "trim": ("dropped", "dropped_turns", "tokens_before", "tokens_after", "window"),
    "sanitizer": ("candidate", "passed", "tools", "reason"),
    "run_end": ("reason", "best_speedup", "steps", "cost_usd"),
}
COMMON_FIELDS = ("seq", "time", "type", "step", "key")

# The type of each field that the readers (trace show, the analysis, bank learning) rely on: "int" a whole
# number, "id" a whole number or a string, "num" any number, "str", "bool", "dict", "list"; a trailing "?" allows null.
FIELD_TYPES: dict[str, dict[str, str]] = {
    "*": {"seq": "int", "time": "str", "type": "str", "step": "int", "key": "str"},
    "run_start": {"task": "str", "kernel": "str", "arch": "str", "mode": "str", "graph": "str", "worker": "str?",
                  "target": "num?", "budgets": "dict"},
    "model_call": {"model": "str?", "prompt_tokens": "int?", "completion_tokens": "int?", "cost_usd": "num?",
                   "content": "str?", "tool_calls": "list"},
    "tool_start": {"name": "str", "arguments": "dict"},
    "tool_call": {"name": "str", "arguments": "dict", "result": "str?", "ok": "bool"},
    "evaluation": {"candidate": "id", "parent": "id?", "path": "str", "sha256": "str?", "judgement": "str",
                   "correct": "bool", "speedup": "num?", "reason": "str?", "best": "bool", "report": "str?"},
    "decision_point": {"kind": "str", "detail": "str", "worker_words": "str?"},
    "question": {"text": "str", "source": "str", "bank_id": "str?", "question_kind": "str?",
                 "decision_point": "str"},
    "human_message": {"text": "str", "decision_point": "str", "context": "dict?"},
    "model_retry": {"error": "str", "wait_s": "num"},
    "run_end": {"reason": "str", "best_speedup": "num?", "steps": "int", "cost_usd": "num?"},
}
TYPE_NAMES = {"id": "a candidate id (a whole number or a string)", "int": "a whole number", "num": "a number", "str": "a string", "bool": "true or false",
              "dict": "an object", "list": "a list"}


def _has_type(value: Any, expected: str) -> bool:
    if expected.endswith("?"):
        if value is None:
            return True
        expected = expected[:-1]
    if expected == "int":
        return _whole(value)
    if expected == "id":
        return _whole(value) or isinstance(value, str)
    if expected == "num":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, {"str": str, "bool": bool, "dict": dict, "list": list}[expected])


def _type_problem(event: dict) -> str | None:
    for scope in ("*", event["type"]):
        for name, expected in FIELD_TYPES.get(scope, {}).items():
            if name in event and not _has_type(event[name], expected):
                what = TYPE_NAMES[expected.rstrip("?")] + (" or null" if expected.endswith("?") else "")
                where = "the field" if scope == "*" else f"the {event['type']} event's field"
                return f"{where} '{name}' is {json.dumps(event[name], default=str)[:60]}, not {what}"
    if event["type"] == "model_call" and not all(isinstance(c, dict) and isinstance(c.get("name"), str)
                                                 for c in event["tool_calls"]):
        return "the model_call event's tool_calls are not all objects with a name"
    return None
HOLDOUT_FIELDS = ("n", "seed", "correct", "speedup")  # an evaluation's optional `holdout` object


class TraceError(ValueError):
    """A trace file that cannot be read; the message is one sentence naming the file and line."""


@dataclass(frozen=True)
class TraceProblem:
    line: int
    message: str


def validate_event(event: Any) -> str | None:
    """Return why `event` is not a valid trace event, or None."""
    if not isinstance(event, dict):
        return "the line is not a JSON object"
    for name in COMMON_FIELDS:
        if name not in event:
            return f"the field '{name}' is missing"
    kind = event["type"]
    if not isinstance(kind, str) or kind not in EVENT_FIELDS:
        return f"the type '{kind}' is unknown (expected one of {', '.join(EVENT_FIELDS)})"
    for name in EVENT_FIELDS[kind]:
        if name not in event:
            return f"the {kind} event lacks the field '{name}'"
    problem = _type_problem(event)
    if problem:
        return problem
    if kind == "decision_point" and event["kind"] not in DECISION_POINTS:
        return f"the decision point kind '{event['kind']}' is unknown"
    if kind == "question" and event["question_kind"] not in (*QUESTION_KINDS, None):
        return f"the question kind '{event['question_kind']}' is unknown"
    if kind == "human_message" and event["decision_point"] not in (*DECISION_POINTS, INTERJECTION):
        return f"the human message's decision point '{event['decision_point']}' is unknown"
    if kind == "trim":
        for name in EVENT_FIELDS["trim"]:
            if not _whole(event[name]) or event[name] < 0:
                return f"the trim event's {name} {event[name]!r} is not a whole number, 0 or more"
    if kind == "model_retry" and (not _whole(event["attempt"]) or event["attempt"] < 1):
        return f"the model_retry event's attempt {event['attempt']!r} is not a whole number, 1 or more"
    if kind == "sanitizer" and (not isinstance(event["passed"], bool) or not isinstance(event["tools"], dict)):
        return "the sanitizer event's passed is not true or false, or its tools is not an object"
    if kind == "evaluation" and "holdout" in event:
        return holdout_problem(event["holdout"])
    return None


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def holdout_problem(holdout: Any) -> str | None:
    """Why an evaluation event's `holdout` field is malformed, or None."""
    if not isinstance(holdout, dict):
        return "the evaluation's holdout is not an object {n, seed, correct, speedup}"
    for name in HOLDOUT_FIELDS:
        if name not in holdout:
            return f"the evaluation's holdout lacks the field '{name}'"
    n, seed, correct, speedup = (holdout[name] for name in HOLDOUT_FIELDS)
    if not _whole(n) or n < 1:
        return f"the evaluation's holdout n {n!r} is not a positive whole number"
    if not _whole(seed) or seed < 0:
        return f"the evaluation's holdout seed {seed!r} is not a whole number, 0 or more"
    if not _whole(correct) or not 0 <= correct <= n:
        return f"the evaluation's holdout correct {correct!r} is not a count between 0 and {n}"
    if speedup is not None and (isinstance(speedup, bool) or not isinstance(speedup, int | float) or speedup <= 0):
        return f"the evaluation's holdout speedup {speedup!r} is not a positive number or null"
    return None


def read_trace(path: str | Path, *, allow_torn_tail: bool = True) -> list[dict]:
    """Read and validate a trace. A last line cut short by a crash is dropped when allowed; any other
    bad line raises TraceError naming the file, the line and what is wrong with it."""
    path = Path(path)
    if not path.is_file():
        raise TraceError(f"{path}: no such trace file; pass a run folder or its trace.jsonl.")
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    events = []
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            event = json.loads(text)
        except json.JSONDecodeError:
            if allow_torn_tail and number == len(lines):
                break  # a write interrupted by a crash; everything before it is intact
            raise TraceError(f"{path}, line {number}: not valid JSON; the trace is corrupted there.") from None
        problem = validate_event(event)
        if problem:
            raise TraceError(f"{path}, line {number}: {problem}.")
        events.append(event)
    return events


def trace_path(run: str | Path) -> Path:
    """Accept a run folder or a trace file."""
    run = Path(run)
    return run / "trace.jsonl" if run.is_dir() else run


class TraceWriter:
    """Appends events durably (flush + fsync per event) and skips keys already written."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._keys: set[str] = set()
        self._seq = 0
        if self.path.exists():
            for event in read_trace(self.path):
                self._keys.add(event["key"])
                self._seq = event["seq"] + 1
            self._drop_torn_tail()

    def _drop_torn_tail(self) -> None:
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            with open(self.path, "r+b") as f:
                f.truncate(cut)

    def has(self, key: str) -> bool:
        return key in self._keys

    def write(self, type_: str, *, step: int, key: str, **fields: Any) -> dict | None:
        """Append one event; returns it, or None when its key was already written."""
        if key in self._keys:
            return None
        event = {"seq": self._seq, "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
                 "type": type_, "step": step, "key": key, **fields}
        problem = validate_event(event)
        if problem:
            raise ValueError(f"refusing to write a bad trace event: {problem}")
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(event, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self._keys.add(key)
        self._seq += 1
        return event


def iter_events(events: list[dict], *types: str) -> Iterator[dict]:
    return (e for e in events if not types or e["type"] in types)
