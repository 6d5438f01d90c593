"""Run one command for a limited time with bounded output, and end its whole process session with the call.

Output is streamed: only its first and last `keep` bytes are held, however much the command prints. The
command runs in a session of its own, killed when the call returns (success included); in the sandbox that
session is the sandbox's PID namespace, which dies with it, so `nohup x &` and `setsid x` end there too.
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from dataclasses import dataclass

from kernelseek.procs import kill_group, tracked

GRACE_S = 0.5  # how long output is still read after the command exits (a process that escaped may hold the pipe)


class Bounded:
    """The first and the last `keep` bytes of a stream, and how many were cut between them."""

    def __init__(self, keep: int):
        self.keep = max(keep, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.keep - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        del self.tail[:-self.keep]

    def text(self) -> str:
        cut = self.total - len(self.head) - len(self.tail)
        head, tail = self.head.decode(errors="replace"), self.tail.decode(errors="replace")
        return f"{head}\n[... {cut} bytes cut ...]\n{tail}" if cut else head + tail


@dataclass
class Outcome:
    output: str
    status: int | None  # None: killed at the time limit
    timed_out: bool


def run(argv: list[str], *, cwd: str, env: dict[str, str], timeout_s: float, keep: int) -> Outcome:
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    out = Bounded(keep)
    with tracked(proc):
        try:
            timed_out = _pump(proc, out, time.monotonic() + timeout_s)
        finally:
            _end_session(proc)
    return Outcome(out.text(), None if timed_out else proc.returncode, timed_out)


def _pump(proc: subprocess.Popen, out: Bounded, deadline: float) -> bool:
    """Read until the command has exited and its output is closed (or GRACE_S after it exited); True when the
    time limit came first."""
    assert proc.stdout is not None
    fd, reading, exited_at = proc.stdout.fileno(), True, None
    while True:
        now = time.monotonic()
        if now >= deadline:
            return True
        if exited_at is None and proc.poll() is not None:
            exited_at = now
        if exited_at is not None and (not reading or now - exited_at > GRACE_S):
            return False
        if not reading:
            time.sleep(0.02)
            continue
        ready, _, _ = select.select([fd], [], [], min(0.1, deadline - now))
        if ready:
            chunk = os.read(fd, 1 << 16)
            if chunk:
                out.add(chunk)
            else:
                reading = False


def _end_session(proc: subprocess.Popen) -> None:
    kill_group(proc)
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()
