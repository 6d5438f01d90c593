"""The marks the loop leaves in the worker's conversation, which the scripted model (kernelseek/models/
scripted.py) reads to find its place in its script: how a question and a nudge begin, and the note a trim
folds into the first message (kernelseek/agent/trim.py). On the ground floor, so that the agent writes them
and the models read them without either importing the other."""

from __future__ import annotations

import re
from typing import Any

QUESTION = "A question from your reviewer — think about it, then continue working:\n\n{question}"
NUDGE = "The goal is not met yet (best so far: {best}; target: {target}). Continue."
TRIM_NOTE = "[{dropped} earlier messages ({turns} of them your turns) were left out"
NOTE = re.compile(r"\[(\d+) earlier messages \((\d+) of them your turns\) were left out")


def is_asked(message: dict[str, Any]) -> bool:
    """Whether a message is the loop's question or nudge to the worker."""
    content = message.get("content")
    return message.get("role") == "user" and isinstance(content, str) and \
        content.startswith((QUESTION.split("{")[0], NUDGE.split("{")[0]))


def trim_counts(message: dict[str, Any]) -> tuple[int, int]:
    """(messages, worker turns) a trim note in `message` says were left out, (0, 0) without one."""
    match = NOTE.search(str(message.get("content") or ""))
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def dropped_turns(messages: list[dict[str, Any]]) -> int:
    """The worker turns a trim note in the conversation says were left out (0 without one)."""
    for message in messages[:2]:
        if NOTE.search(str(message.get("content") or "")):
            return trim_counts(message)[1]
    return 0
