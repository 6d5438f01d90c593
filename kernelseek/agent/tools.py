"""The worker's tools: generic coding tools and `evaluate`. Nothing operator-specific, on purpose.

A tool is a name, a description, a JSON schema and a function `run(arguments, ctx) -> (text, ok)`.
`evaluate` has no function: the graph routes it to the harness node. Other graphs pass extra tools
to `build_graph(extra_tools=[...])`.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|_PAT$|DSN", re.IGNORECASE)
SECRET_PREFIXES = ("OPENAI", "ANTHROPIC", "AZURE", "AWS", "GOOGLE", "GEMINI", "VERTEX", "COHERE", "MISTRAL",
                   "GROQ", "TOGETHER", "HF_", "HUGGING", "REPLICATE", "DEEPSEEK", "XAI", "OPENROUTER", "LITELLM",
                   "LANGCHAIN", "LANGSMITH", "GITHUB", "GH_", "GITLAB", "NPM_", "PYPI", "TWINE", "SSH_")


def safe_env() -> dict[str, str]:
    """The environment without API keys, tokens and other secrets."""
    return {k: v for k, v in os.environ.items()
            if not SECRET_NAME.search(k) and not k.upper().startswith(SECRET_PREFIXES)}


def cap(text: str, limit: int) -> str:
    """Keep the head and the tail of a long output."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


@dataclass
class ToolContext:
    workspace: Path
    timeout_s: float = 300.0
    output_cap: int = 10_000
    run: Any = None  # the Run (its config, task, folders), for tools that need more than the workspace

    def path(self, name: str, *, write: bool = False) -> Path:
        path = (self.workspace / name).resolve()
        if write and not path.is_relative_to(self.workspace.resolve()):
            raise ToolError(f"{name} is outside the workspace; write only inside it")
        return path


class ToolError(Exception):
    pass


@dataclass
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[[dict[str, Any], ToolContext], str] | None  # None: handled by the graph (evaluate)

    def schema(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.parameters}}

    def call(self, arguments: dict[str, Any], ctx: ToolContext) -> tuple[str, bool]:
        assert self.run is not None
        try:
            return cap(self.run(arguments, ctx), ctx.output_cap), True
        except ToolError as error:
            return f"error: {error}", False
        except (OSError, KeyError, TypeError, ValueError, UnicodeError) as error:
            return f"error: {type(error).__name__}: {error}", False


def _object(**properties: str) -> dict[str, Any]:
    return {"type": "object", "properties": {k: {"type": "string", "description": v} for k, v in properties.items()},
            "required": list(properties)}


def run_shell(arguments: dict[str, Any], ctx: ToolContext) -> str:
    command = arguments["command"]
    proc = subprocess.Popen(command, shell=True, cwd=ctx.workspace, env=safe_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                            start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=ctx.timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        return f"{output}\n[the command ran past {ctx.timeout_s:g} s and was killed]"
    except BaseException:  # Ctrl-C: the command is in its own session, so end it here
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    return f"{output}\n[exit status {proc.returncode}]" if proc.returncode else output or "[no output]"


def read_file(arguments: dict[str, Any], ctx: ToolContext) -> str:
    return ctx.path(arguments["path"]).read_text(errors="replace")


def write_file(arguments: dict[str, Any], ctx: ToolContext) -> str:
    path = ctx.path(arguments["path"], write=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(arguments["content"])
    return f"wrote {len(arguments['content'])} characters to {arguments['path']}"


def edit_file(arguments: dict[str, Any], ctx: ToolContext) -> str:
    path = ctx.path(arguments["path"], write=True)
    text = path.read_text()
    old, new = arguments["old"], arguments["new"]
    count = text.count(old)
    if count != 1:
        raise ToolError(f"the text to replace occurs {count} times in {arguments['path']}; it must occur exactly once")
    path.write_text(text.replace(old, new))
    return f"edited {arguments['path']}"


SHELL = Tool("shell", "Run a bash command in the workspace (time-limited; long output is cut in the middle).",
             _object(command="the command"), run_shell)
READ = Tool("read_file", "Read a file (path relative to the workspace).", _object(path="the file"), read_file)
WRITE = Tool("write_file", "Write a whole file in the workspace.", _object(path="the file", content="its new text"),
             write_file)
EDIT = Tool("edit_file", "Replace one exact occurrence of `old` with `new` in a file of the workspace.",
            _object(path="the file", old="the exact text to replace (must occur once)", new="the replacement"),
            edit_file)
EVALUATE = Tool("evaluate", "Judge the candidate kernel file in the workspace with the harness: it is compiled, "
                "checked on the quick scenarios and timed against the baseline; if it beats the best it is judged "
                "on the full suite and may become the best. Ends your turn; the report comes back as the result.",
                {"type": "object", "properties": {}}, None)

BASE_TOOLS = [SHELL, READ, WRITE, EDIT, EVALUATE]
