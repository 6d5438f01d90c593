"""The trace's events as pydantic models (kernelseek/trace_events.py): the traces already written load the
same, the required fields are the schema's, further fields stay allowed, and a bad event is one sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelseek import trace_events
from kernelseek.trace import EVENT_FIELDS, read_trace, validate_event

ROOT = Path(__file__).resolve().parent.parent
WRITTEN = sorted([*ROOT.glob("tests/fixtures/sessions/*/trace.jsonl"), *ROOT.glob("benchmarks/results/**/trace.jsonl")])
BASE = {"seq": 3, "time": "2026-12-03T10:00:00.000+00:00", "step": 2, "key": "2:k"}


def test_every_trace_written_so_far_still_loads():
    assert len(WRITTEN) >= 4, WRITTEN
    types = set()
    for path in WRITTEN:
        events = read_trace(path, allow_torn_tail=False)
        assert events and all(validate_event(e) is None for e in events)
        for event in events:  # each through its type's own model, kept as written
            trace_events.MODELS[event["type"]].model_validate(event)
        types |= {e["type"] for e in events}
    assert {"run_start", "model_call", "tool_call", "evaluation", "decision_point", "question", "run_end"} <= types


def test_each_type_requires_the_fields_of_the_schema():
    assert EVENT_FIELDS == {
        "run_start": ("task", "kernel", "arch", "mode", "graph", "worker", "target", "budgets"),
        "model_call": ("model", "prompt_tokens", "completion_tokens", "cost_usd", "content", "tool_calls"),
        "tool_start": ("name", "arguments"),
        "tool_call": ("name", "arguments", "result", "ok"),
        "evaluation": ("candidate", "parent", "path", "sha256", "judgement", "correct", "speedup", "reason", "best",
                       "report"),
        "decision_point": ("kind", "detail", "worker_words"),
        "question": ("text", "source", "bank_id", "question_kind", "decision_point"),
        "human_message": ("text", "decision_point", "context"),
        "model_retry": ("attempt", "error", "wait_s"),
        "trim": ("dropped", "dropped_turns", "tokens_before", "tokens_after", "window"),
        "sanitizer": ("candidate", "passed", "tools", "reason"),
        "run_end": ("reason", "best_speedup", "steps", "cost_usd")}


RETRY = {**BASE, "type": "model_retry", "attempt": 1, "error": "rate limit", "wait_s": 0.5}
TRIM = {**BASE, "type": "trim", "dropped": 4, "dropped_turns": 2, "tokens_before": 9000, "tokens_after": 4000,
        "window": 8000}
POINT = {**BASE, "type": "decision_point", "kind": "plateau", "detail": "no gain", "worker_words": None}


def test_further_fields_are_allowed():
    for event in (RETRY, TRIM, POINT):
        assert validate_event(event) is None
        assert validate_event({**event, "written_by_a_newer_version": {"x": 1}}) is None


@pytest.mark.parametrize("event, words", [
    ({**RETRY, "attempt": 0}, "the model_retry event's attempt 0 is not a whole number, 1 or more"),
    ({**TRIM, "window": -1}, "the trim event's window -1 is not a whole number, 0 or more"),
    ({**TRIM, "dropped": True}, "the trim event's dropped True is not a whole number, 0 or more"),
    ({**POINT, "kind": "stuck"}, "the decision point kind 'stuck' is unknown"),
    ({**POINT, "detail": 7}, "the decision_point event's field 'detail' is 7, not a string"),
    ({**POINT, "step": 1.5}, "the field 'step' is 1.5, not a whole number"),
    ({k: v for k, v in POINT.items() if k != "detail"}, "the decision_point event lacks the field 'detail'"),
    ({**POINT, "type": "plateau"}, "the type 'plateau' is unknown (expected one of run_start,"),
])
def test_a_bad_event_is_one_sentence(event, words):
    problem = validate_event(event)
    assert problem and problem.startswith(words) and "\n" not in problem
