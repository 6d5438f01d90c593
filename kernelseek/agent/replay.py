"""Resume's one mechanism: a node replayed after a crash acts on what its first pass computed.

LangGraph re-runs a node that was cut off. What such a node did before the cut — a model reply it paid
for, a judgement it timed, a question a person typed or the bank drew — must not be asked again (it would
cost twice, or differ from what the trace recorded). So every such result is kept the moment it exists:

    once(path, compute)   a JSON file written atomically (the model's reply: replies/<step>.json; a
                          candidate's judgements: candidates/<n>.result.json); a replayed pass reads it
    recorded(trace, key)  a trace event (decision points, questions, typed answers), already durable: the
                          trace is written before the node goes on

A tool call is not a result to reuse but an action: one that started and never ended crashed the run and
is answered, not run again (`tools.call_once`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from kernelseek.files import atomic_write_json
from kernelseek.trace import TraceWriter, read_trace

T = TypeVar("T")


def once(path: Path, compute: Callable[[], T], *, valid: Callable[[Any], bool] = lambda _: True) -> T:
    """What `compute()` returned the first time (kept in `path`), unless that no longer applies (`valid`)."""
    if path.is_file():
        try:
            kept = json.loads(path.read_text())
        except json.JSONDecodeError:
            kept = None  # written by a version that did not write atomically, and cut off: compute again
        if kept is not None and valid(kept):
            return kept
    value = compute()
    atomic_write_json(path, value)
    return value


def recorded(trace: TraceWriter, key: str) -> dict | None:
    """The trace event a first pass wrote under `key`, or None."""
    if not trace.has(key):
        return None
    return next((e for e in read_trace(trace.path) if e["key"] == key), None)
