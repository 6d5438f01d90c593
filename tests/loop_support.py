"""Shared helpers of the tests/agent/test_loop_*.py tests: scripts for the scripted model, the CLI."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "loop"
KERNEL = "rmsnorm_cpu.cpp"  # the candidate's name in the workspace (the seed's file name)
CLI = [sys.executable, "-c", "from kernelseek.cli import main; main()"]


def source(name: str) -> str:
    return (FIXTURES / f"{name}.cpp").read_text()


def write(kernel: str, path: str = KERNEL) -> dict:
    return {"name": "write_file", "arguments": {"path": path, "content": source(kernel)}}


def shell(command: str) -> dict:
    return {"name": "shell", "arguments": {"command": command}}


EVALUATE = {"name": "evaluate", "arguments": {}}


def script(path: Path, replies: list[dict]) -> str:
    """Write a model script; returns the model name that replays it."""
    path.write_text(json.dumps(replies, indent=1))
    return f"scripted/{path}"


def bank_copy(tmp_path: Path) -> Path:
    """A private copy of the bank, so a test's outcomes never touch the repository's statistics."""
    bank = tmp_path / "bank"
    shutil.copytree(ROOT / "bank", bank)
    return bank


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "COLUMNS": "200", **extra}


def run_cli(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault("env", env())
    return subprocess.run([*CLI, *args], cwd=ROOT, capture_output=True, text=True, timeout=300, **kwargs)


def invoke(args: list[str], input: str | None = None):  # noqa: ANN201 - click Result
    from kernelseek.cli import app

    return CliRunner().invoke(app, args, input=input, catch_exceptions=False)


def events(run_dir: Path, *types: str) -> list[dict]:
    from kernelseek.trace import read_trace

    return [e for e in read_trace(run_dir / "trace.jsonl") if not types or e["type"] in types]


def graph_snapshot(run: Path | str):  # noqa: ANN201 - LangGraph's StateSnapshot
    """The latest checkpoint of the run in the folder `run`; the checkpointer is closed after."""
    from kernelseek.agent.graph import load_graph
    from kernelseek.agent.run_store import Run

    opened = Run.open(str(run))
    with opened.checkpointer() as saver:
        return load_graph(opened.config.graph, checkpointer=saver).get_state(opened.thread())


def graph_values(run: Path | str) -> dict:
    """The graph state of the run in the folder `run` (its latest checkpoint)."""
    return dict(graph_snapshot(run).values)


def kill_9_once_logged(proc: subprocess.Popen, log: Path, marker: str, what: str) -> None:
    """SIGKILL `proc` once `log` (a run's workspace file its scripted worker appends to) holds `marker`, within
    120 s; `what` names the moment in the failure message. The process is reaped either way."""
    deadline = time.monotonic() + 120
    try:
        while not (log.is_file() and marker in log.read_text()):
            assert proc.poll() is None, proc.stdout.read().decode()
            assert time.monotonic() < deadline, f"the run never reached {what}"
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
