"""The tool-rich worker's extra tools, as `kernelseek.agent.tools.Tool` objects for `build_graph(extra_tools=...)`.

A tool finds its run from the workspace (`runs/<id>/workspace` -> `runs/<id>`): the run's configuration
gives the task, the target and the candidate's file name. The documents folders for `search_docs` come
from `runs/<id>/toolrich.json` ({"docs": [...]}, written by `kernelseek experiment` from the config's
`docs:`), else from $KERNELSEEK_DOCS (folders separated by ':').
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from kernelseek.agent.tools import Tool, ToolContext, ToolError
from kernelseek.settings import Configuration
from kernelseek.toolrich.digest import code_digest
from kernelseek.toolrich.lessons import OUTCOMES, LessonStore
from kernelseek.toolrich.profiler import profile_summary
from kernelseek.toolrich.retrieval import search_documents

SETTINGS_FILE = "toolrich.json"


def run_dir(ctx: ToolContext) -> Path:
    return ctx.workspace.resolve().parent


def config(ctx: ToolContext) -> Configuration:
    path = run_dir(ctx) / "config.json"
    if not path.is_file():
        raise ToolError(f"no run configuration at {path}; this tool works inside a run's workspace")
    return Configuration.load(path)


def settings(ctx: ToolContext) -> dict[str, Any]:
    path = run_dir(ctx) / SETTINGS_FILE
    try:
        return json.loads(path.read_text()) if path.is_file() else {}
    except json.JSONDecodeError:
        return {}


def _candidate(arguments: dict[str, Any], ctx: ToolContext, cfg: Configuration) -> Path:
    path = ctx.path(arguments.get("path") or Path(cfg.kernel).name)
    if not path.is_file():
        raise ToolError(f"{arguments.get('path') or Path(cfg.kernel).name} is not in the workspace")
    return path


def _task(cfg: Configuration) -> Any:  # noqa: ANN401 - a Task, or None
    try:
        from kernelseek.harness import load_task

        return load_task(cfg.task)
    except Exception:  # noqa: BLE001 - the digest says the entry point is unknown
        return None


def run_profile(arguments: dict[str, Any], ctx: ToolContext) -> str:
    cfg = config(ctx)
    timeout = float(settings(ctx).get("profile_timeout_s", min(ctx.timeout_s, 300.0)))
    task = _task(cfg)
    return profile_summary(_candidate(arguments, ctx, cfg), cfg.arch, cfg.task,
                           scenario=arguments.get("scenario") or None, timeout_s=timeout,
                           forbidden_libraries=task.forbidden_libraries if task else None)


def run_digest(arguments: dict[str, Any], ctx: ToolContext) -> str:
    cfg = config(ctx)
    task = _task(cfg)
    return code_digest(_candidate(arguments, ctx, cfg), cfg.arch, entry_point=task.entry_point if task else None,
                       forbidden_libraries=task.forbidden_libraries if task else None,
                       timeout_s=min(ctx.timeout_s, 120.0))


def doc_folders(ctx: ToolContext) -> list[str]:
    folders = settings(ctx).get("docs") or []
    if not folders and os.environ.get("KERNELSEEK_DOCS"):
        folders = [f for f in os.environ["KERNELSEEK_DOCS"].split(os.pathsep) if f]
    return [str(f) for f in folders]


def run_search(arguments: dict[str, Any], ctx: ToolContext) -> str:
    k = int(arguments.get("k") or 4)
    return search_documents(doc_folders(ctx), str(arguments["query"]), k=max(1, min(k, 10)))


def run_lessons(arguments: dict[str, Any], ctx: ToolContext) -> str:
    folder = run_dir(ctx)
    store = LessonStore(folder / "lessons.json")
    action = arguments.get("action", "recall")
    if action == "record":
        step = len(list((folder / "replies").glob("*.json"))) or None
        try:
            entry = store.record(str(arguments.get("lesson") or ""), str(arguments.get("outcome") or "note"), step)
        except ValueError as error:
            raise ToolError(str(error)) from None
        return f"recorded [{entry['outcome']}] lesson {len(store.load())}: {entry['lesson'][:200]}"
    if action == "recall":
        return store.recall(folder / "trace.jsonl")
    raise ToolError(f"action '{action}' is unknown; use record or recall")


_PATH = {"type": "string", "description": "the kernel file in the workspace (default: the candidate)"}

PROFILE = Tool(
    "profile", "Profile the candidate with Nsight Compute on one scenario of the task (built as the harness builds "
    "it; the first quick scenario unless named): per kernel, launch shape, throughput, occupancy, memory and warp "
    "statistics, and the profiler's advice. Says 'unavailable' and why when there is no GPU or no profiler.",
    {"type": "object", "properties": {"path": _PATH, "scenario": {"type": "string", "description":
                                                                  "a scenario name of the task's suite"}}},
    run_profile)
DIGEST = Tool(
    "compiled_code", "A digest of the compiled candidate: per kernel, registers, spills, shared memory and stack "
    "from the compiler's report, and the machine-instruction mix (SASS by category and most frequent opcodes; "
    "for a CPU target, the entry point's x86 mix).",
    {"type": "object", "properties": {"path": _PATH}}, run_digest)
SEARCH = Tool(
    "search_docs", "Search the documents folder(s) configured for this run (guides, papers, notes) for passages "
    "matching a query; returns the best passages with their file and line.",
    {"type": "object", "properties": {"query": {"type": "string", "description": "words to look for"},
                                      "k": {"type": "integer", "description": "passages to return (1-10)"}},
     "required": ["query"]}, run_search)
LESSONS = Tool(
    "lessons", "The run's lessons store. action=record saves a lesson (what worked or failed, and why) for later "
    "attempts; action=recall lists the lessons so far and the harness's verdict on every candidate of this run.",
    {"type": "object", "properties": {
        "action": {"type": "string", "enum": ["record", "recall"]},
        "lesson": {"type": "string", "description": "for record: the lesson"},
        "outcome": {"type": "string", "enum": list(OUTCOMES), "description": "for record: worked, failed or note"}},
     "required": ["action"]}, run_lessons)

TOOLS = [PROFILE, DIGEST, SEARCH, LESSONS]
