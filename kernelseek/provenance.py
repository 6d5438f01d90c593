"""What produced a result: the worker of each graph (a model, marked plainly when it is scripted, or an
external command), the git commit of the checkout KernelSeek runs from, the versions of the packages
that judged and ran it, and the hardware (CPU, GPUs, driver, clocks: kernelseek/harness/gpu_info.py)."""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = ("kernelseek", "torch", "langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite",
            "langgraph-checkpoint-postgres", "litellm", "networkx", "pydantic", "ray", "cuda-bindings")
SCRIPTED_NOTE = "scripted: fixed replies replayed by kernelseek/models/scripted.py, not a model"
# what every output of a run with a scripted worker says, so that a demo's numbers are never read as a model's work
SCRIPTED_LABEL = "SCRIPTED worker: fixed replies, not a model"


def worker(model: str | None, command: str | None) -> dict[str, Any]:
    """{kind: model | scripted | command, name}: what did a graph's thinking."""
    if command:
        return {"kind": "command", "name": command}
    if model and model.startswith("scripted/"):
        return {"kind": "scripted", "name": model, "note": SCRIPTED_NOTE}
    return {"kind": "model", "name": model}


def scripted_label(model: str | None, command: str | None = None) -> str | None:
    """SCRIPTED_LABEL for a run whose worker replays a script (`--model scripted/...`); None for any other."""
    return SCRIPTED_LABEL if worker(model, command)["kind"] == "scripted" else None


def describe(entry: dict[str, Any]) -> str:
    """One phrase for a worker entry, e.g. 'model anthropic/claude-sonnet-4-5'."""
    if entry["kind"] == "scripted":
        return f"SCRIPTED {entry['name']} ({SCRIPTED_NOTE})"
    return f"{entry['kind']} {entry['name']}"


def git_commit(folder: Path | None = None) -> dict[str, Any] | None:
    """{commit, dirty} of the checkout that holds the package, or None (an installed wheel)."""
    where = folder or Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10)
        if commit.returncode != 0:
            return None
        status = subprocess.run(["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def environment() -> dict[str, Any]:
    from kernelseek.harness import gpu_info

    return {"git": git_commit(), "python": platform.python_version(), "platform": platform.platform(),
            "packages": versions(), "hardware": gpu_info.machine()}
