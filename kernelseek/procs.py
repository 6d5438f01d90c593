"""Running a command in a process group of its own, so that a timeout or Ctrl-C ends all it started."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

_running: set[subprocess.Popen] = set()  # the groups started here whose call has not returned yet
_running_lock = threading.Lock()


def kill_group(proc: subprocess.Popen) -> None:
    """Kill the process's whole group (it was started with start_new_session=True); a group already gone is
    no error."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass


@contextmanager
def tracked(proc: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """`proc` (a group of its own) known to `kill_all` while the block runs."""
    with _running_lock:
        _running.add(proc)
    try:
        yield proc
    finally:
        with _running_lock:
            _running.discard(proc)


def kill_all() -> None:
    """Kill every tracked group now. Ctrl-C reaches only the main thread, and a group of its own is out of
    the terminal's reach: a tool call waiting on one in another thread would hold the exit until its command
    ended (a minute of `sleep 60`); killed, it returns at once."""
    with _running_lock:
        running = list(_running)
    for proc in running:
        kill_group(proc)


@dataclass
class Finished:
    status: int  # the exit status (-9 when it was killed at the time limit)
    stdout: str
    stderr: str  # empty when stderr was merged into stdout
    timed_out: bool


def run_group(command: str | list[str], timeout_s: float, *, input: str | None = None, shell: bool = False,
              cwd: str | Path | None = None, env: dict[str, str] | None = None,
              merge_stderr: bool = False) -> Finished:
    """Run `command` in its own process group; past `timeout_s` (or on Ctrl-C) the whole group is killed."""
    proc = subprocess.Popen(command, shell=shell, cwd=cwd, env=env,
                            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                            text=True, errors="replace", start_new_session=True)
    with tracked(proc):
        try:
            out, err = proc.communicate(input, timeout=timeout_s)
            return Finished(proc.returncode, out, err or "", False)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            out, err = proc.communicate()
            return Finished(-9, out or "", err or "", True)
        except BaseException:
            kill_group(proc)
            raise


def exit_text(code: int | None) -> str:
    """How a process ended, in words: `signal SIGSEGV`, `status 3`."""
    if isinstance(code, int) and code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"status {code}"


def last_words(log_path: Path, lines: int = 3, tail_bytes: int = 16384) -> str:
    """The last few lines a process printed to `log_path` that are not indented (a traceback's frames)."""
    try:
        with open(log_path, "rb") as log:
            log.seek(max(0, log_path.stat().st_size - tail_bytes))
            text = log.read().decode("utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    interesting = [line for line in text if line.strip() and not line.startswith(" ")]
    return " | ".join((interesting or text)[-lines:])[:600]
