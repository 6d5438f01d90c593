"""Read an external coding CLI's JSON event stream (one JSON object a line) for the trace.

Two shapes are understood, the ones the common coding CLIs print:

- Claude Code, `claude -p --output-format stream-json --verbose`: `{"type": "system", "subtype": "init",
  "session_id", "model"}`; `{"type": "assistant", "message": {"content": [{"type": "tool_use", "id",
  "name", "input"}, {"type": "text", "text"}]}}`; `{"type": "user", "message": {"content":
  [{"type": "tool_result", "tool_use_id", "content", "is_error"}]}}`; and a last `{"type": "result",
  "result", "total_cost_usd", "usage": {"input_tokens", "output_tokens"}, "session_id"}`.
- Codex, `codex exec --json`: `{"type": "thread.started", "thread_id"}`; `{"type": "item.completed",
  "item": {"type": "command_execution" | "file_change" | "mcp_tool_call" | "agent_message", ...}}`;
  `{"type": "turn.completed", "usage": {"input_tokens", "output_tokens"}}` (no cost: counted by tokens).

Lines that are not JSON objects are ignored; an output with no such line is not a stream (None).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Turn:
    session_id: str | None = None
    model: str | None = None
    text: str = ""
    cost_usd: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {name, arguments, result, ok}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return "" if content is None else json.dumps(content)


def _usage(turn: Turn, usage: Any) -> None:
    if isinstance(usage, dict):
        turn.prompt_tokens += int(_number(usage.get("input_tokens")) or 0)
        turn.completion_tokens += int(_number(usage.get("output_tokens")) or 0)


def parse(output: str) -> Turn | None:
    events = []
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict) and isinstance(event.get("type"), str):
                events.append(event)
    if not events:
        return None
    turn, pending, texts = Turn(), {}, []
    for event in events:
        kind = event["type"]
        if kind == "system" and event.get("session_id"):  # Claude Code
            turn.session_id, turn.model = str(event["session_id"]), event.get("model") or turn.model
        elif kind == "assistant" and isinstance(event.get("message"), dict):
            for part in event["message"].get("content") or []:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "tool_use":
                    call = {"name": str(part.get("name")), "arguments": part.get("input") if isinstance(
                        part.get("input"), dict) else {"input": part.get("input")}, "result": "", "ok": True}
                    turn.tool_calls.append(call)
                    pending[part.get("id")] = call
                elif part.get("type") == "text" and part.get("text"):
                    texts.append(str(part["text"]))
        elif kind == "user" and isinstance(event.get("message"), dict):
            for part in event["message"].get("content") or []:
                if isinstance(part, dict) and part.get("type") == "tool_result" and part.get("tool_use_id") in pending:
                    call = pending.pop(part["tool_use_id"])
                    call["result"], call["ok"] = _text(part.get("content")), not part.get("is_error")
        elif kind == "result":
            turn.session_id = str(event.get("session_id") or turn.session_id or "") or None
            turn.cost_usd = _number(event.get("total_cost_usd"))
            _usage(turn, event.get("usage"))
            if isinstance(event.get("result"), str):
                texts.append(event["result"])
        elif kind == "thread.started" and event.get("thread_id"):  # Codex
            turn.session_id = str(event["thread_id"])
        elif kind == "item.completed" and isinstance(event.get("item"), dict):
            _codex_item(turn, event["item"], texts)
        elif kind == "turn.completed":
            _usage(turn, event.get("usage"))
    turn.text = texts[-1] if texts else ""
    return turn


def _codex_item(turn: Turn, item: dict[str, Any], texts: list[str]) -> None:
    kind = item.get("type")
    if kind == "agent_message":
        texts.append(str(item.get("text") or ""))
    elif kind == "command_execution":
        turn.tool_calls.append({"name": "command_execution", "arguments": {"command": item.get("command")},
                                "result": str(item.get("aggregated_output") or ""),
                                "ok": item.get("exit_code") in (0, None) and item.get("status") != "failed"})
    elif kind in ("file_change", "mcp_tool_call", "web_search"):
        arguments = {k: v for k, v in item.items() if k not in ("id", "type", "status")}
        turn.tool_calls.append({"name": str(kind), "arguments": arguments, "result": "",
                                "ok": item.get("status") != "failed"})
