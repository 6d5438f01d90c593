"""Run a candidate's scenarios in child processes, surviving hangs, crashes and hostile code.

The child is the checker (child.py), which never loads the candidate's library: it starts the process
that does (host.py) and judges what that process wrote. It reports over a pipe it inherits (records.py says what it may send, and every record is
checked here): `ready`, then a `start` and a `result` for each scenario in the order asked, then
`done`. If the child stops reporting for longer than the time limit it is killed and the scenario it
started fails as a hang; if it dies, that scenario fails as a crash with the last words it printed; if
it sends a record that does not fit, it is killed and the scenario fails with what was wrong. Either
way a new child goes on with the scenarios that are left, so one bad scenario costs one scenario.

Children never outlive the judge: each asks the kernel to kill it when its parent dies (kill -9 and
SIGTERM included), is killed in a `finally` when the judge stops for any reason (Ctrl-C included),
and `stop_all()` kills every live one at once from another thread. A child's output is limited to
`OUTPUT_LIMIT` bytes (past it the kernel stops the child), and only its tail is ever read back.
"""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import resource
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelseek.harness.records import RecordError, check_bandwidth, check_event, check_result, derive
from kernelseek.procs import exit_text, kill_group, last_words

OUTPUT_LIMIT = 64 << 20  # bytes a child may print (stdout and stderr together, to one file)
LINE_LIMIT = 1 << 20  # the longest record a child may send
_PR_SET_PDEATHSIG = 1

_live: set[subprocess.Popen] = set()
_live_lock = threading.Lock()
_stop = threading.Event()


class JudgementInterrupted(Exception):
    """The judgement was stopped (Ctrl-C or `stop_all()`); its child is already dead."""


def stop_all() -> None:
    """Kill every live judge child now; judgements in progress raise JudgementInterrupted."""
    _stop.set()
    with _live_lock:
        for proc in list(_live):
            kill_group(proc)


atexit.register(stop_all)


def _child_setup() -> None:  # runs in the child between fork and exec
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_LIMIT, OUTPUT_LIMIT))


class _Child:
    """One child process and the pipe it reports on."""

    def __init__(self, spec_path: Path, log_path: Path):
        read_fd, write_fd = os.pipe()
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "kernelseek.harness.child", str(spec_path), str(write_fd)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                pass_fds=(write_fd,), preexec_fn=_child_setup)
        os.close(write_fd)
        with _live_lock:
            _live.add(self.proc)
        self.fd, self.buffer, self.closed = read_fd, b"", False

    def records(self, wait_s: float) -> list[Any]:
        """The complete lines sent so far (parsed; a line that is not JSON comes back as a str)."""
        if self.closed:
            time.sleep(wait_s)
        elif select.select([self.fd], [], [], wait_s)[0]:
            chunk = os.read(self.fd, 1 << 16)
            self.closed = not chunk
            self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        if len(self.buffer) > LINE_LIMIT:
            lines.append(self.buffer[:200])
            self.buffer = b""
        out: list[Any] = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append(line.decode(errors="replace")[:200])
        return out

    def end(self) -> None:
        kill_group(self.proc)
        self.proc.wait()
        with _live_lock:
            _live.discard(self.proc)
        os.close(self.fd)


def run_scenarios(spec: dict, scenarios: list[dict], *, start_timeout_s: float, scenario_timeout_s: float,
                  headline: str | None = None, flops: dict[str, float] | None = None,
                  on_result: Callable[[dict], None] | None = None,
                  max_restarts: int = 8) -> tuple[list[dict], dict]:
    """Return (one result per scenario, in order; the child's `ready` event of the first start).
    `headline`: the baseline speedups are against; `flops`: per scenario name, for TFLOP/s."""
    results: dict[str, dict] = {}
    ready: dict[str, Any] = {}
    by_name = {s["name"]: s for s in scenarios}
    remaining = list(by_name)
    restarts = 0
    _stop.clear()

    def record(result: dict) -> None:
        results[result["scenario"]] = result
        if on_result:
            on_result(result)

    with tempfile.TemporaryDirectory(prefix="kernelseek-judge-") as tmp:
        while remaining:
            log_path = Path(tmp) / f"child-{restarts}.log"
            spec_path = Path(tmp) / f"spec-{restarts}.json"
            spec_path.write_text(json.dumps({**spec, "scenarios": [by_name[n] for n in remaining]}))
            child = _Child(spec_path, log_path)
            try:
                outcome, current = _follow(child, remaining, record, headline=headline,
                                           flops=flops or {}, start_timeout_s=start_timeout_s,
                                           scenario_timeout_s=scenario_timeout_s)
            finally:
                child.end()
            ready = ready or outcome.get("ready", {})
            done = [name for name in remaining if name in results]
            remaining = [name for name in remaining if name not in results]
            if not remaining:
                break
            reason = _reason(outcome, child.proc.returncode, log_path)
            if current is None and not done:
                # it died before its first scenario: loading the library or the task failed
                for name in remaining:
                    record({"scenario": name, "correct": False, "reason": reason})
                break
            if current is not None:  # else it stopped between scenarios, after reporting its own error
                record({"scenario": current, "correct": False, "reason": reason})
                remaining.remove(current)
            restarts += 1
            if restarts > max_restarts:
                for name in remaining:
                    record({"scenario": name, "correct": False,
                            "reason": f"not run: the candidate crashed {restarts} times"})
                break
    return [results[name] for name in by_name], ready


def _follow(child: _Child, remaining: list[str], record: Callable[[dict], None], *,
            headline: str | None, flops: dict[str, float], start_timeout_s: float,
            scenario_timeout_s: float) -> tuple[dict, str | None]:
    """Read the child's records until it exits, hangs or misbehaves. Returns (how it ended, the
    scenario it was on)."""
    expected = iter(remaining)
    current: str | None = None
    ready: dict[str, Any] = {}
    started = False
    implementations: set[str] = {"candidate"}
    timed_against = headline
    last_change, timeout = time.monotonic(), start_timeout_s
    while True:
        if _stop.is_set():
            raise JudgementInterrupted("the judgement was stopped")
        events = child.records(0.05)
        if events:
            last_change = time.monotonic()
        for event in events:
            try:
                kind = check_event(event)
                if kind == "ready":
                    if started:
                        raise RecordError("a second ready")
                    started, timeout = True, scenario_timeout_s  # from now on each scenario has its limit
                    baselines = event.get("baselines")
                    if not isinstance(baselines, dict):
                        raise RecordError("ready without its baselines")
                    check_bandwidth(event.get("copy_bandwidth_Bps"))
                    implementations |= set(baselines)
                    available = baselines.get(headline)
                    timed_against = headline if isinstance(available, list) and available[:1] == ["available"] else None
                    ready = {**event}
                elif not started:
                    raise RecordError(f"a {kind} before ready")
                elif kind == "start":
                    if current is not None or event.get("scenario") != next(expected, None):
                        raise RecordError(f"a start out of order: {str(event.get('scenario'))[:60]!r}")
                    current = event["scenario"]
                elif kind == "result":
                    if current is None:
                        raise RecordError("a result without a start")
                    check_result(event, current, implementations, timed_against)
                    result = {k: v for k, v in event.items() if k != "event"}
                    if result["correct"]:
                        derive(result, timed_against, flops.get(current, 0.0))
                    record(result)
                    current = None
                else:  # done
                    if current is not None or next(expected, None) is not None:
                        raise RecordError("done before every scenario was reported")
                    return {"ready": ready, "how": "done"}, None
            except RecordError as error:
                return {"ready": ready, "how": "invalid", "why": str(error)}, current
        if child.closed and child.proc.poll() is not None:
            return {"ready": ready, "how": "exited"}, current
        if time.monotonic() - last_change > timeout:
            return {"ready": ready, "how": "timeout", "timeout": timeout}, current


def _reason(outcome: dict, code: int | None, log_path: Path) -> str:
    if outcome["how"] == "timeout":
        return f"hang: no progress for {outcome['timeout']:.0f} s; the child was killed"
    if outcome["how"] == "invalid":
        return f"the judging process sent an invalid record ({outcome['why']}); it was killed"
    if code == -signal.SIGXFSZ:
        return f"crash: the candidate printed more than {OUTPUT_LIMIT >> 20} MB and was stopped"
    words = last_words(log_path)
    return f"crash: the process exited with {exit_text(code)}" + (f": {words}" if words else "")
