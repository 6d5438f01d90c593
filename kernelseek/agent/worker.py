"""The built-in worker: one model call per graph step, shaped like mini-swe-agent.

Plain message dicts; the model answers with text and tool calls; each tool runs in the workspace and
its result goes back as a tool message. `evaluate` ends the turn (the harness node answers it); a
reply without tool calls means the worker thinks it is done. Limits are checked in one place
(`budgets.exhausted`, by the graph's routers), not here.

Before each call: messages queued with `kernelseek ask` are delivered (`inbox`), and a conversation that
outgrew the model's window is trimmed (`trim`, recorded as a `trim` trace event). The call itself is
retried on transient provider errors (`retry`, each retry a `model_retry` event); a permanent error, or
one that outlasts the retries, ends the run with one sentence, and `kernelseek resume` continues it.
"""

from __future__ import annotations

import json
from typing import Any

from kernelseek.agent import inbox, prompts, replay, retry, trim
from kernelseek.agent.run_store import Run
from kernelseek.agent.state import State
from kernelseek.agent.tools import Tool, ToolContext, call_once


class WorkerError(RuntimeError):
    """The worker cannot go on (the model call failed, the worker command is missing); one sentence."""


def first_messages(run: Run, state: State, system: str = prompts.SYSTEM) -> list[dict[str, Any]]:
    cfg, kernel = run.config, run.candidate_file.name
    text = system.format(description=run.task.description, kernel=kernel, arch=cfg.arch,
                         target=prompts.describe_target(cfg),
                         forbidden=prompts.describe_forbidden(run.task.forbidden_libraries))
    start = prompts.START.format(kernel=kernel, best=prompts.describe_best(state.get("best")))
    if state.get("last_report"):
        start += "\n\nThe harness's report on the starting kernel:\n" + state["last_report"]
    return [{"role": "system", "content": text}, {"role": "user", "content": start}]


def model_step(state: State, run: Run, tools: list[Tool]) -> dict[str, Any]:
    from kernelseek.models import completion

    cfg, step = run.config, state["step"] + 1
    messages = list(state.get("messages") or []) or first_messages(run, state)
    delivered = inbox.deliver(state, run, step, messages)
    messages, trimmed = trim.fit(messages, state, model=cfg.model, limit=trim.window(cfg.model, cfg.context_tokens),
                                 target=prompts.describe_target(cfg))
    if trimmed:
        run.trace.write("trim", step=step, key=f"{step}:worker:trim", **trimmed)
    by_name = {t.name: t for t in tools}
    reply = _reply(run, step, lambda: completion(model=cfg.model, messages=messages,
                                                 tools=[t.schema() for t in tools], **cfg.model_kwargs))
    prompt_tokens, completion_tokens, cost = reply["prompt_tokens"], reply["completion_tokens"], reply["cost_usd"]
    calls = reply["tool_calls"]
    content = reply["content"]
    run.trace.write("model_call", step=step, key=f"{step}:worker:model", model=cfg.model,
                    prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, cost_usd=cost,
                    content=content, tool_calls=[{"name": c["name"], "arguments": _parse(c["arguments"])}
                                                 for c in calls])
    assistant: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        assistant["tool_calls"] = [{"id": c["id"], "type": "function",
                                    "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]
    messages.append(assistant)

    ctx = ToolContext(run.workspace, cfg.shell_timeout_s, cfg.output_cap, run)
    pending: str | None = None
    for i, call in enumerate(calls):
        arguments = _parse(call["arguments"])
        if pending is not None:
            result, ok = "not run: `evaluate` ended the turn; call it again after the report", False
        elif call["name"] == "evaluate":
            pending = call["id"]
            continue  # the harness node answers this call
        elif call["name"] not in by_name or by_name[call["name"]].run is None:
            result, ok = f"error: there is no tool '{call['name']}'; the tools are {', '.join(by_name)}", False
        elif not isinstance(arguments, dict):
            result, ok = f"error: the arguments are not a JSON object: {call['arguments'][:200]}", False
        else:
            result, ok = call_once(by_name[call["name"]], arguments, ctx, trace=run.trace, step=step,
                                   key=f"{step}:worker:tool:{i}")
        run.trace.write("tool_call", step=step, key=f"{step}:worker:tool:{i}", name=call["name"],
                        arguments=arguments if isinstance(arguments, dict) else {"raw": call["arguments"]},
                        result=result[:4000], ok=ok)
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})

    words = content.strip()
    return {
        **delivered,
        "step": step, "messages": messages, "evaluate": pending is not None, "evaluate_call": pending,
        "worker_stopped": not calls,
        "worker_words": words or state.get("worker_words", ""),
        "words_since_question": (state.get("words_since_question", "") + "\n" + words)[-6000:],
        "cost_usd": state.get("cost_usd", 0.0) + (cost or 0.0),
        "tokens": state.get("tokens", 0) + prompt_tokens + completion_tokens,
        "unpriced_calls": state.get("unpriced_calls", 0) + (cost is None),
        "last_event": f"step {step}: " + (", ".join(c["name"] for c in calls) or "the worker ended its turn"),
    }


def _reply(run: Run, step: int, call: Any) -> dict[str, Any]:
    """The model's reply for this step: asked once, kept in replies/<step>.json before any tool runs, so a
    step replayed after a crash acts on the same reply the trace recorded (and is not paid for twice)."""
    return replay.once(run.dir / "replies" / f"{step}.json", lambda: _ask(run, step, call))


def _ask(run: Run, step: int, call: Any) -> dict[str, Any]:
    """The model's reply, asked with retries on transient provider errors (each a `model_retry` event)."""
    from kernelseek.models import cost_of

    def retried(attempt: int, error: BaseException, wait: float) -> None:
        run.trace.write("model_retry", step=step, key=f"{step}:worker:retry:{attempt}", attempt=attempt,
                        error=retry.describe(error), wait_s=round(wait, 3))

    retries = run.config.model_retries
    try:
        response = retry.call_with_retries(call, retries=retries, on_retry=retried)
    except Exception as error:  # noqa: BLE001 - any provider failure: one sentence, the run stays resumable
        if retry.transient(error):
            raise WorkerError(f"the model call to {run.config.model} failed {retries + 1} times in a row, the last "
                              f"time with: {retry.describe(error)}") from None
        raise WorkerError(f"the model call to {run.config.model} failed: {retry.describe(error)}") from None
    message = response.choices[0].message
    usage = getattr(response, "usage", None)
    return {"content": message.content or "",
            "tool_calls": [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments or "{}"}
                           for c in (message.tool_calls or [])],
            "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
            "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0), "cost_usd": cost_of(response)}


def _parse(arguments: str) -> Any:
    try:
        return json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return arguments
