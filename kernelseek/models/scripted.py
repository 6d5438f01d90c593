"""A scripted model: a litellm custom provider that replays a fixed list of replies and tool calls.

    kernelseek run rmsnorm_cpu --model scripted/path/to/script.yaml

The script (YAML or JSON) is a list of replies, or {"replies": [...]}; each reply is

    content: "what the model says"            # optional
    tool_calls:                               # optional; none means the model ends its turn
      - name: write_file
        arguments: {path: kernel.cpp, content: "..."}

    errors: [rate_limit, rate_limit]          # optional: the first attempts at this reply fail,
                                              # one error per attempt, then it answers

Reply i answers the request whose conversation already holds i assistant messages (counting the turns a
trim note says were left out, `kernelseek.agent.trim`), so a request replayed after a crash gets the same
reply (the position comes from the conversation, not from a counter in the process). `errors` simulates
a flaky provider; each name raises litellm's exception for it: rate_limit (429), server_error (500),
unavailable (503), timeout, connection (transient: retried), auth (401), bad_request (400) (permanent).
Its attempts are counted in the process, so a run resumed in the same process gets the answer. Usage is estimated from the text (4 characters a token); the model has no
price, so runs count it by tokens. Everything the model drives is real: only its words are fixed.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from kernelseek.agent.trim import dropped_turns

PROVIDER = "scripted"
ERRORS = {"rate_limit": "RateLimitError", "server_error": "InternalServerError", "unavailable": "ServiceUnavailableError",
          "timeout": "Timeout", "connection": "APIConnectionError", "auth": "AuthenticationError",
          "bad_request": "BadRequestError"}
_ATTEMPTS: dict[tuple[str, int], int] = {}  # (script, reply index) -> failed attempts so far, in this process


class ScriptError(ValueError):
    pass


def load_script(path: str | Path) -> list[dict[str, Any]]:
    path = Path(path)
    if not path.is_file():
        raise ScriptError(f"{path}: no such model script; the model name is scripted/<path of a YAML or JSON script>.")
    text = path.read_text()
    try:
        data = json.loads(text) if path.suffix == ".json" else _yaml(text)
    except Exception as error:  # noqa: BLE001 - any parse error becomes one sentence
        raise ScriptError(f"{path}: the model script cannot be parsed ({str(error).splitlines()[0]}).") from None
    replies = data.get("replies") if isinstance(data, dict) else data
    if not isinstance(replies, list) or not all(isinstance(r, dict) for r in replies):
        raise ScriptError(f"{path}: a model script is a list of replies (each with content and/or tool_calls).")
    for number, reply in enumerate(replies):
        errors = reply.get("errors") or []
        if not isinstance(errors, list) or any(e not in ERRORS for e in errors):
            raise ScriptError(f"{path}: reply {number}: 'errors' must be a list of {', '.join(ERRORS)}.")
        for call in reply.get("tool_calls") or []:
            if not isinstance(call, dict) or "name" not in call:
                raise ScriptError(f"{path}: reply {number} has a tool call without a name.")
    return replies


def _error(litellm_module, name: str, model: str) -> Exception:  # noqa: ANN001
    cls = getattr(litellm_module, ERRORS[name])
    message = f"scripted {name.replace('_', ' ')} (simulated provider error)"
    return cls(message=message, llm_provider=PROVIDER, model=model)


def _yaml(text: str) -> Any:
    import yaml

    return yaml.safe_load(text)


def _handler_class(litellm_module):  # noqa: ANN001, ANN202
    from litellm import CustomLLM
    from litellm.types.utils import ChatCompletionMessageToolCall, Choices, Function, Message, Usage

    class ScriptedLLM(CustomLLM):
        def completion(self, model: str, messages: list, *args: Any, **kwargs: Any):  # noqa: ANN201
            model_response = kwargs.get("model_response") or args[3]
            replies = load_script(model)
            index = sum(1 for m in messages if m.get("role") == "assistant") + dropped_turns(messages)
            if index >= len(replies):
                raise ScriptError(f"{model}: the model script has {len(replies)} replies and request "
                                  f"{index + 1} asked for another; add replies or lower the step budget.")
            reply = replies[index]
            failures = reply.get("errors") or []
            attempt = _ATTEMPTS.get((model, index), 0)
            if attempt < len(failures):
                _ATTEMPTS[(model, index)] = attempt + 1
                raise _error(litellm_module, str(failures[attempt]), model)
            calls = [ChatCompletionMessageToolCall(
                id=f"call_{index}_{i}", type="function",
                function=Function(name=c["name"], arguments=json.dumps(c.get("arguments") or {})))
                for i, c in enumerate(reply.get("tool_calls") or [])]
            if reply.get("sleep_s"):
                time.sleep(float(reply["sleep_s"]))
            content = reply.get("content")
            model_response.choices = [Choices(index=0, finish_reason="tool_calls" if calls else "stop",
                                              message=Message(role="assistant", content=content,
                                                              tool_calls=calls or None))]
            prompt_tokens = sum(len(json.dumps(m, default=str)) for m in messages) // 4
            completion_tokens = (len(content or "") + sum(len(c.function.arguments) for c in calls)) // 4 + 1
            model_response.usage = Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                                         total_tokens=prompt_tokens + completion_tokens)
            model_response.model = f"{PROVIDER}/{Path(model).name}"
            return model_response

    return ScriptedLLM


def register(litellm_module) -> None:  # noqa: ANN001
    """Add the scripted provider to litellm.custom_provider_map (once)."""
    providers = litellm_module.custom_provider_map
    if any(p.get("provider") == PROVIDER for p in providers):
        return
    handler = _handler_class(litellm_module)()
    litellm_module.custom_provider_map = [*providers, {"provider": PROVIDER, "custom_handler": handler}]


def session(kernel_name: str, steps: list[str]) -> list[dict[str, Any]]:
    """A script for a typical session: each step is a kernel file to write into the workspace as
    `kernel_name` and evaluate, or ":done" (the worker says it is finished, so a question is asked)."""
    replies: list[dict[str, Any]] = []
    for step in steps:
        if step == ":done":
            replies.append({"content": "I have finished: this is as far as I can take it."})
            continue
        text = Path(step).read_text()
        replies.append({"content": f"Trying {Path(step).name}.", "tool_calls": [
            {"name": "write_file", "arguments": {"path": kernel_name, "content": text}},
            {"name": "evaluate", "arguments": {}}]})
    return replies


if __name__ == "__main__":  # python -m kernelseek.models.scripted KERNEL_NAME STEP... > script.json
    import sys

    if len(sys.argv) < 3:
        sys.exit("usage: python -m kernelseek.models.scripted KERNEL_NAME (FILE | :done)... > script.json")
    print(json.dumps(session(sys.argv[1], sys.argv[2:]), indent=1))
