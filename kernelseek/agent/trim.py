"""Keep a long conversation inside the model's context window.

The window comes from litellm (`get_model_info(model)["max_input_tokens"]`), or from `context_tokens` in
the configuration for a model litellm does not know; with neither, nothing is trimmed. Tokens are counted
with `litellm.token_counter` (the model's tokenizer where litellm has it).

When the conversation passes TRIM_AT of the window, it is cut down to TRIM_TO of it (so a trim happens
now and then, not at every step). What stays: the system message (the rules and the task), the first
user message (the start), a note folded into that first message — how many messages and turns were left
out, the best so far, the target, the harness's last report and the last question asked — and the most
recent turns that fit. A cut is made only where a turn begins (a user or assistant message), so every
tool result keeps the tool call it answers. The trimmed conversation replaces the old one in the state;
the trace records each trim (`trim`).

The note says "[N earlier messages (T of them your turns) were left out ...]" with the running totals, so
the scripted model still finds its place in its script (`kernelseek.conversation.dropped_turns`).
"""

from __future__ import annotations

import json
from typing import Any

from kernelseek.agent import prompts
from kernelseek.conversation import TRIM_NOTE, trim_counts
from kernelseek.models import litellm

TRIM_AT = 0.75
TRIM_TO = 0.5
SEPARATOR = "\n\n--- earlier conversation trimmed ---\n"


def window(model: str | None, configured: int | None) -> int | None:
    """The model's input window in tokens: the configured one, else litellm's, else None (unknown)."""
    if configured:
        return int(configured)
    if not model:
        return None
    try:
        info = litellm().get_model_info(model)
    except Exception:  # noqa: BLE001 - a model litellm has not mapped
        return None
    value = info.get("max_input_tokens") or info.get("max_tokens")
    return int(value) if value else None


def count(model: str | None, messages: list[dict[str, Any]]) -> int:
    try:
        return int(litellm().token_counter(model=model or "", messages=messages))
    except Exception:  # noqa: BLE001 - no tokenizer for it: about four characters a token
        return len(json.dumps(messages, default=str)) // 4


def _note(dropped: int, turns: int, state: dict[str, Any], target: str) -> str:
    lines = [TRIM_NOTE.format(dropped=dropped, turns=turns) + " to fit the model's context "
             f"window. Best so far: {prompts.describe_best(state.get('best'))}. Target: {target}."]
    if state.get("last_report"):
        lines.append("The harness's last report:\n" + str(state["last_report"])[-3000:])
    if state.get("last_question"):
        lines.append("The last question you were asked: " + str(state["last_question"])[:500])
    return "\n".join(lines) + "]"


def fit(messages: list[dict[str, Any]], state: dict[str, Any], *, model: str | None, limit: int | None,
        target: str = "as fast as you can") -> tuple[list[dict[str, Any]], dict[str, int] | None]:
    """(the conversation, trimmed if it passes TRIM_AT of `limit`; the trim's numbers, or None)."""
    if not limit or len(messages) < 4:
        return messages, None
    before = count(model, messages)
    if before <= limit * TRIM_AT:
        return messages, None
    head, rest = messages[:2], messages[2:]
    starts = [i for i, m in enumerate(rest) if m.get("role") in ("user", "assistant")]
    if len(starts) < 2:
        return messages, None
    sizes = [count(model, [m]) for m in rest]
    old_dropped, old_turns = trim_counts(head[1])
    original = str(head[1].get("content") or "").split(SEPARATOR)[0]

    def first_with_note(left_out: list[dict[str, Any]]) -> dict[str, Any]:
        dropped = old_dropped + len(left_out)
        turns = old_turns + sum(1 for m in left_out if m.get("role") == "assistant")
        return {**head[1], "content": original + SEPARATOR + _note(dropped, turns, state, target)}

    fixed = count(model, [head[0], first_with_note(rest)])  # the kept head, its note at its longest
    cut = starts[-1]  # at least the latest turn stays
    for start in (s for s in starts if s > 0):
        if fixed + sum(sizes[start:]) <= limit * TRIM_TO:
            cut = start
            break
    first = first_with_note(rest[:cut])
    turns = sum(1 for m in rest[:cut] if m.get("role") == "assistant")
    trimmed = [head[0], first, *rest[cut:]]
    after = count(model, trimmed)
    return trimmed, {"dropped": cut, "dropped_turns": turns, "tokens_before": before,
                     "tokens_after": after, "window": int(limit)}
