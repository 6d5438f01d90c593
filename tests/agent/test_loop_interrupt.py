"""Ctrl-C while the worker's shell command runs: the command runs in a session of its own (out of the
terminal's reach) in one of the graph's threads, and LangGraph waits for that thread; the CLI kills it at
the interrupt, so the run ends at once, resumable, instead of when the command would have ended."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from loop_support import CLI, ROOT, env, events, script, shell

SLEEP = "119.75"  # a command line no other process has, so that pgrep finds this one alone


@pytest.mark.slow
def test_ctrl_c_during_a_long_shell_command_ends_the_run_at_once(tmp_path):
    model = script(tmp_path / "script.json", [
        {"content": "Think for a while.", "tool_calls": [shell(f"echo started > started.txt; sleep {SLEEP}")]},
        {"content": "Never reached in the first part."},
    ])
    runs = tmp_path / "runs"
    started = runs / "ctrl-c" / "workspace" / "started.txt"
    proc = subprocess.Popen([*CLI, "run", "rmsnorm_cpu", "--model", model, "--mode", "none", "--no-judge-start",
                             "--runs-dir", str(runs), "--run-id", "ctrl-c"], cwd=ROOT, env=env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not started.is_file():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends: the terminal's foreground group
        interrupted = time.monotonic()
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - interrupted
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert took < 5, f"the run took {took:.1f} s to end after Ctrl-C"
    said = [line for line in err.splitlines() if line.startswith("error:")]
    assert said == [said[-1]] and "interrupted; nothing completed is lost" in said[0] and "Traceback" not in err
    assert not subprocess.run(["pgrep", "-f", f"sleep {SLEEP}"], capture_output=True).stdout  # the command is gone
    assert [e["type"] for e in events(runs / "ctrl-c")][:2] == ["run_start", "model_call"]

