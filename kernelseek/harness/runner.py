"""Run a candidate's scenarios in child processes, surviving hangs and crashes.

The child writes a `start` line before each scenario and a `result` line after it. If the child stops
writing for longer than the time limit it is killed and the scenario it started fails as a hang; if
it dies, the scenario it started fails as a crash with the last words it printed. Either way a new
child goes on with the scenarios that are left, so one bad scenario costs one scenario.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _read_events(path: Path) -> list[dict]:
    events = []
    if path.exists():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                break  # a line being written right now
    return events


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def run_scenarios(spec: dict, scenarios: list[dict], *, start_timeout_s: float, scenario_timeout_s: float,
                  on_result: Callable[[dict], None] | None = None, max_restarts: int = 8) -> tuple[list[dict], dict]:
    """Return (one result per scenario, in order; the child's `ready` event of the first start)."""
    results: dict[str, dict] = {}
    ready: dict[str, Any] = {}
    by_name = {s["name"]: s for s in scenarios}
    remaining = list(by_name)
    restarts = 0
    with tempfile.TemporaryDirectory(prefix="kernelseek-judge-") as tmp:
        while remaining:
            results_path = Path(tmp) / f"results-{restarts}.jsonl"
            log_path = Path(tmp) / f"child-{restarts}.log"
            spec_path = Path(tmp) / f"spec-{restarts}.json"
            spec_path.write_text(json.dumps({**spec, "scenarios": [by_name[n] for n in remaining], "results": str(results_path)}))
            with open(log_path, "wb") as log:
                proc = subprocess.Popen([sys.executable, "-m", "kernelseek.harness.child", str(spec_path)],
                                        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            seen, last_change, current = 0, time.monotonic(), None
            timeout = start_timeout_s
            while True:
                events = _read_events(results_path)
                for event in events[seen:]:
                    if event["event"] == "ready":
                        ready = ready or event
                        timeout = scenario_timeout_s  # started: from now on each scenario has its limit
                    elif event["event"] == "start":
                        current = event["scenario"]
                    elif event["event"] == "result":
                        results[event["scenario"]] = event
                        current = None
                        if on_result:
                            on_result(event)
                if len(events) != seen:
                    seen, last_change = len(events), time.monotonic()
                code = proc.poll()
                if code is not None:
                    events = _read_events(results_path)
                    if len(events) != seen:
                        continue  # read what it wrote before it exited
                    break
                if time.monotonic() - last_change > timeout:
                    _kill(proc)
                    code = "timeout"
                    break
                time.sleep(0.05)
            done = [name for name in remaining if name in results]
            remaining = [name for name in remaining if name not in results]
            if not remaining:
                break
            last_words = _last_words(log_path)
            if code == "timeout":
                reason = f"hang: no progress for {timeout:.0f} s; the child was killed"
            else:
                reason = f"crash: the process exited with {_exit_text(code)}" + (f": {last_words}" if last_words else "")
            if current is None and not done:
                # it died before its first scenario: loading the library or the task failed
                for name in remaining:
                    results[name] = {"scenario": name, "correct": False, "reason": reason}
                    if on_result:
                        on_result(results[name])
                break
            if current is not None:  # else it stopped between scenarios, after reporting its own error
                results[current] = {"scenario": current, "correct": False, "reason": reason}
                if on_result:
                    on_result(results[current])
                remaining.remove(current)
            restarts += 1
            if restarts > max_restarts:
                for name in remaining:
                    results[name] = {"scenario": name, "correct": False,
                                     "reason": f"not run: the candidate crashed {restarts} times"}
                break
    return [results[name] for name in by_name], ready


def _exit_text(code: Any) -> str:
    if isinstance(code, int) and code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"status {code}"


def _last_words(log_path: Path, lines: int = 3) -> str:
    try:
        text = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    interesting = [line for line in text if line.strip() and not line.startswith(" ")]
    return " | ".join((interesting or text)[-lines:])[:600]
