"""The run trace: an append-only JSON-lines log, one event per line, in `runs/<id>/trace.jsonl`.

This module and its events' pydantic models (kernelseek/trace_events.py) are the one place the trace schema
is defined; the loop writes it, the bank learns from it, the analysis reads it. Every event carries:

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

from kernelseek import trace_events
from kernelseek.trace_events import (  # noqa: F401 - the schema's names, where readers have always found them
    COMMON_FIELDS,
    DECISION_POINTS,
    EVENT_FIELDS,
    HOLDOUT_FIELDS,
    INTERJECTION,
    QUESTION_KINDS,
)

MAX_MESSAGE_CHARS = 500  # a typed question or message is cut to this length (with a warning)


class TraceError(ValueError):
    """A trace file that cannot be read; the message is one sentence naming the file and line."""


@dataclass(frozen=True)
class TraceProblem:
    line: int
    message: str


def validate_event(event: Any) -> str | None:
    """Return why `event` is not a valid trace event (by its model in kernelseek/trace_events.py), or None."""
    return trace_events.problem(event)


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
