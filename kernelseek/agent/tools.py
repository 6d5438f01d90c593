"""The worker's tools: generic coding tools and `evaluate`. Nothing operator-specific, on purpose.

A tool is a name, a description, a JSON schema and a function `run(arguments, ctx) -> (text, ok)`.
`evaluate` has no function: the graph routes it to the harness node. Other graphs pass extra tools
to `build_graph(extra_tools=[...])`.
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelseek.agent import sandbox, shell

MAX_READ_BYTES = 1 << 20  # read_file reads at most this much (1 MiB); edit_file refuses larger files
CRASHED = "this call crashed the run; it was not run again"


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
    unconfined: bool | None = None  # None: as the run's configuration says (confined without a run)

    def __post_init__(self) -> None:
        if self.unconfined is None:
            self.unconfined = bool(getattr(getattr(self.run, "config", None), "unconfined", False))

    def path(self, name: str, *, write: bool = False) -> Path:
        """`name` resolved (symlinks included) inside the workspace; anything else is refused."""
        root = Path(self.workspace).resolve()
        path = (root / name).resolve()
        if not path.is_relative_to(root):
            raise ToolError(f"{name} is outside the workspace; {'write' if write else 'read'} only inside it")
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


def call_once(tool: Tool, arguments: dict[str, Any], ctx: ToolContext, *, trace: Any, step: int,
              key: str) -> tuple[str, bool]:
    """Run a tool call whose end is traced under `key`, marking its start first: a call that started and never
    ended crashed the run, and a step replayed after that crash answers it instead of running it again."""
    start = f"{key}:start"
    if trace.has(start) and not trace.has(key):
        return f"error: {CRASHED}", False
    trace.write("tool_start", step=step, key=start, name=tool.name, arguments=arguments)
    return tool.call(arguments, ctx)


def _object(**properties: str) -> dict[str, Any]:
    return {"type": "object", "properties": {k: {"type": "string", "description": v} for k, v in properties.items()},
            "required": list(properties)}


def run_shell(arguments: dict[str, Any], ctx: ToolContext) -> str:
    command, workspace = arguments["command"], Path(ctx.workspace).resolve()
    if not isinstance(command, str):
        raise ToolError("the command must be a string")
    if ctx.unconfined:
        argv = ["/bin/bash" if Path("/bin/bash").exists() else "/bin/sh", "-c", command]
    else:
        problem = sandbox.unavailable()
        if problem:
            raise ToolError(problem)
        argv = sandbox.argv(sandbox.find_bwrap() or "bwrap", workspace, command)
    # room for the cut marker and the status line within the output cap
    keep = ctx.output_cap * 2 // 5
    outcome = shell.run(argv, cwd=str(workspace), env=sandbox.environment(workspace, confined=not ctx.unconfined),
                        timeout_s=ctx.timeout_s, keep=keep)
    if outcome.timed_out:
        return f"{outcome.output}\n[the command ran past {ctx.timeout_s:g} s and was killed]"
    if outcome.status:
        return f"{outcome.output}\n[exit status {outcome.status}]"
    return outcome.output or "[no output]"


def _regular(path: Path, name: str) -> None:
    mode = path.stat().st_mode
    if not stat.S_ISREG(mode):
        raise ToolError(f"{name} is not a regular file; the file tools read and write regular files only")


def read_file(arguments: dict[str, Any], ctx: ToolContext) -> str:
    path = ctx.path(arguments["path"])
    _regular(path, arguments["path"])
    with open(path, "rb") as handle:
        data = handle.read(MAX_READ_BYTES + 1)
    text = data[:MAX_READ_BYTES].decode(errors="replace")
    if len(data) > MAX_READ_BYTES:
        text += f"\n[only the first {MAX_READ_BYTES} bytes were read; use the shell (head, sed -n) for the rest]"
    return text


def write_file(arguments: dict[str, Any], ctx: ToolContext) -> str:
    path = ctx.path(arguments["path"], write=True)
    if path.exists():
        _regular(path, arguments["path"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(arguments["content"])
    return f"wrote {len(arguments['content'])} characters to {arguments['path']}"


def edit_file(arguments: dict[str, Any], ctx: ToolContext) -> str:
    path = ctx.path(arguments["path"], write=True)
    _regular(path, arguments["path"])
    if path.stat().st_size > MAX_READ_BYTES:
        raise ToolError(f"{arguments['path']} is over {MAX_READ_BYTES} bytes; edit it with the shell")
    text = path.read_text()
    old, new = arguments["old"], arguments["new"]
    count = text.count(old)
    if count != 1:
        raise ToolError(f"the text to replace occurs {count} times in {arguments['path']}; it must occur exactly once")
    path.write_text(text.replace(old, new))
    return f"edited {arguments['path']}"


SHELL = Tool("shell", "Run a bash command in the workspace, in a sandbox: the system read-only, no network, "
             "nothing outside the workspace (time-limited; long output is cut in the middle).",
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
