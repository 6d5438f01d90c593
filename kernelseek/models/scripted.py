"""A scripted model: a litellm custom provider that replays a fixed list of replies and tool calls.

    kernelseek run TASK --model scripted/path/to/script.yaml

A relative path that is not there is looked for in the project and then in the package, as tasks are
(`scripted/evals/examples/first_run.yaml`, the README's first run, works from any folder).

The script (YAML or JSON) is a list of replies, or {"replies": [...]}; each reply is

    content: "what the model says"            # optional
    tool_calls:                               # optional; none means the model ends its turn
      - name: write_file
        arguments: {path: kernel.cpp, content: "..."}

    errors: [rate_limit, rate_limit]          # optional: the first attempts at this reply fail,
                                              # one error per attempt, then it answers

A script may also branch on the question it was asked (a counterfactual fork asks another one):

    replies: [...]                            # the main line
    after_question:                           # when a question contains TEXT (case-insensitive),
      - contains: "launch"                    # the replies after it come from this list instead
        replies: [...]
      - contains: "Continue."                 # (the nudge given when no question is asked)
        replies: [...]

The latest question or nudge in the conversation that some branch's `contains` matches picks the branch;
reply i of the branch answers the request that holds i assistant messages after that question.

With $KERNELSEEK_SCRIPTED_LOG set, every request appends one JSON line {script, reply, branch} to that
file, so a test can count the calls the model got.

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
import os
import time
import zlib
from pathlib import Path
from typing import Any

from kernelseek.conversation import dropped_turns, is_asked

PROVIDER = "scripted"
ERRORS = {"rate_limit": "RateLimitError", "server_error": "InternalServerError", "unavailable": "ServiceUnavailableError",
          "timeout": "Timeout", "connection": "APIConnectionError", "auth": "AuthenticationError",
          "bad_request": "BadRequestError"}
_ATTEMPTS: dict[tuple[str, int, str | None], int] = {}  # (script, reply index, branch) -> failed attempts so far, in this process


class ScriptError(ValueError):
    pass


def script_path(name: str | Path) -> Path:
    """The script a model name `scripted/<name>` means: the path as given, else (a relative one that is not
    there) the project's or the package's file of that path, as tasks are found (kernelseek/project.py), so
    `scripted/evals/examples/first_run.yaml` works from the checkout and from an installed wheel alike."""
    path = Path(name)
    if path.is_file() or path.is_absolute():
        return path
    from kernelseek.project import find

    found = find(path)
    return found if found is not None and found.is_file() else path


def load_script(name: str | Path) -> list[dict[str, Any]]:
    path = script_path(name)
    if not path.is_file():
        raise ScriptError(f"{path}: no such model script; the model name is scripted/<path of a YAML or JSON script>.")
    text = path.read_text()
    try:
        data = json.loads(text) if path.suffix == ".json" else _yaml(text)
    except Exception as error:  # noqa: BLE001 - any parse error becomes one sentence
        raise ScriptError(f"{path}: the model script cannot be parsed ({str(error).splitlines()[0]}).") from None
    replies = data.get("replies") if isinstance(data, dict) else data
    _check_replies(path, replies)
    branches = data.get("after_question") or [] if isinstance(data, dict) else []
    if not isinstance(branches, list) or not all(isinstance(b, dict) and isinstance(b.get("contains"), str)
                                                 and b["contains"] for b in branches):
        raise ScriptError(f"{path}: 'after_question' must list branches, each with 'contains' (a text) and "
                          "'replies'.")
    for branch in branches:
        _check_replies(path, branch.get("replies"), f"the branch '{branch['contains']}': ")
    _BRANCHES[str(Path(name))] = branches
    return replies


_BRANCHES: dict[str, list[dict[str, Any]]] = {}  # script path -> its after_question branches (set by load_script)


def _check_replies(path: Path, replies: Any, where: str = "") -> None:
    if not isinstance(replies, list) or not all(isinstance(r, dict) for r in replies):
        raise ScriptError(f"{path}: {where}a model script is a list of replies (each with content and/or tool_calls).")
    for number, reply in enumerate(replies):
        errors = reply.get("errors") or []
        if not isinstance(errors, list) or any(e not in ERRORS for e in errors):
            raise ScriptError(f"{path}: reply {number}: 'errors' must be a list of {', '.join(ERRORS)}.")
        for call in reply.get("tool_calls") or []:
            if not isinstance(call, dict) or "name" not in call:
                raise ScriptError(f"{path}: {where}reply {number} has a tool call without a name.")


def pick_reply(model: str, messages: list[dict[str, Any]]) -> tuple[int, str | None, dict[str, Any]]:
    """(index, branch or None, reply) for a request: the branch of the latest matching question, else the
    main line at the conversation's count of assistant messages."""
    replies = load_script(model)
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if not is_asked(message):
            continue
        branch = next((b for b in _BRANCHES.get(str(Path(model)), [])
                       if b["contains"].lower() in message["content"].lower()), None)
        if branch is None:
            continue
        index = sum(1 for m in messages[position + 1:] if m.get("role") == "assistant")
        if index >= len(branch["replies"]):
            raise ScriptError(f"{model}: the branch '{branch['contains']}' has {_replies(len(branch['replies']))} and "
                              f"request {index + 1} after its question asked for another; add replies.")
        return index, branch["contains"], branch["replies"][index]
    index = sum(1 for m in messages if m.get("role") == "assistant") + dropped_turns(messages)
    if index >= len(replies):
        raise ScriptError(f"{model}: the model script has {_replies(len(replies))} and request "
                          f"{index + 1} asked for another; add replies or lower the step budget.")
    return index, None, replies[index]


def _replies(count: int) -> str:
    return f"{count} reply" if count == 1 else f"{count} replies"


def _log(model: str, index: int, branch: str | None) -> None:
    log = os.environ.get("KERNELSEEK_SCRIPTED_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"script": model, "reply": index, "branch": branch}) + "\n")


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
            try:
                index, branch, reply = pick_reply(model, messages)
            except ScriptError as error:
                # the end of a script is permanent: a bad request (never retried), not a lost connection
                raise litellm_module.BadRequestError(message=str(error), llm_provider=PROVIDER, model=model) from None
            _log(model, index, branch)
            failures = reply.get("errors") or []
            attempt = _ATTEMPTS.get((model, index, branch), 0)
            if attempt < len(failures):
                _ATTEMPTS[(model, index, branch)] = attempt + 1
                raise _error(litellm_module, str(failures[attempt]), model)
            calls = [ChatCompletionMessageToolCall(
                id=f"call_{index}_{i}" + (f"_{zlib.crc32(branch.encode()):x}" if branch else ""), type="function",
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
