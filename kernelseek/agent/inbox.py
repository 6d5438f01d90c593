"""A run's inbox: messages a person sends with `kernelseek ask RUN "message"`, at any time.

`inbox.jsonl` in the run folder holds one JSON object per line, {id, time, text}; `post` appends a line
with a single `write` on a file opened with O_APPEND (and fsyncs it), so two senders never interleave
and a reader never sees half a message (a last line without its newline is not read yet). The worker
node takes the lines it has not delivered (`State.inbox_seen` counts them) at the start of its next step:
each goes to the worker as a user message and into the trace as a `human_message` at decision point
"interjection", with the context the person spoke in. A step replayed after a crash delivers the same
lines again to the same place (the state's count was not saved) and the trace keys them by message id,
so none is recorded twice.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelseek.agent import prompts
from kernelseek.trace import INTERJECTION, MAX_MESSAGE_CHARS

INBOX_FILE = "inbox.jsonl"
MESSAGE = "A message from the person overseeing this run — take it into account, then continue:\n\n{text}"


def cap(text: str, limit: int = MAX_MESSAGE_CHARS) -> tuple[str, bool]:
    """(the text stripped and cut to `limit` characters, whether it was cut)."""
    text = str(text or "").strip()
    return (text[:limit].rstrip(), True) if len(text) > limit else (text, False)


def post(run_dir: str | Path, text: str) -> dict[str, Any]:
    """Queue a message for the run's worker; returns it ({id, time, text, truncated: original length?})."""
    capped, cut = cap(text)
    if not capped:
        raise ValueError("the message is empty; write what the worker should hear, e.g. \"try a wider block\".")
    message: dict[str, Any] = {"id": uuid.uuid4().hex, "time": datetime.now(UTC).isoformat(timespec="seconds"),
                               "text": capped}
    if cut:
        message["truncated"] = len(str(text).strip())
    line = (json.dumps(message) + "\n").encode()
    fd = os.open(Path(run_dir) / INBOX_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    return message


def pending(run_dir: str | Path, seen: int) -> list[dict[str, Any]]:
    """The complete messages after the first `seen` lines (a line that is not valid JSON counts, empty)."""
    path = Path(run_dir) / INBOX_FILE
    if not path.is_file():
        return []
    data = path.read_bytes()
    lines = data[: data.rfind(b"\n") + 1].decode("utf-8", errors="replace").splitlines()
    messages = []
    for line in lines[seen:]:
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            message = None
        messages.append(message if isinstance(message, dict) and isinstance(message.get("text"), str) else {})
    return messages


def deliver(state: dict[str, Any], run: Any, step: int, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Append the undelivered messages to the worker's conversation and the trace. Returns the state keys
    that change ({} when there is nothing new)."""
    seen = int(state.get("inbox_seen") or 0)
    new = pending(run.dir, seen)
    if not new:
        return {}
    best = state.get("best") or {}
    context = {"best_speedup": best.get("speedup"), "best": prompts.describe_best(state.get("best")),
               "last_report": state.get("last_report", ""), "worker_words": (state.get("worker_words") or "")[-2000:]}
    for index, message in enumerate(new, start=seen):
        if not message.get("text"):
            continue
        text, _ = cap(message["text"])
        extra = {"truncated": message["truncated"]} if isinstance(message.get("truncated"), int) else {}
        run.trace.write("human_message", step=step, key=f"inbox:{message.get('id') or index}", text=text,
                        decision_point=INTERJECTION, context=context, sent=message.get("time"), **extra)
        messages.append({"role": "user", "content": MESSAGE.format(text=text)})
    return {"inbox_seen": seen + len(new)}
