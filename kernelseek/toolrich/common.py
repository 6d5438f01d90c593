"""What the tool-rich tools share: finding the CUDA tools, and running a command with a time limit."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

from kernelseek.procs import run_group

ENV_VARS = {"cuobjdump": "KERNELSEEK_CUOBJDUMP", "ncu": "KERNELSEEK_NCU"}


def find_tool(name: str) -> str | None:
    """A CUDA tool: $KERNELSEEK_<NAME>, then PATH, $CUDA_HOME/bin, /usr/local/cuda/bin, and for ncu the
    Nsight Compute installs under /opt/nvidia. None when it is nowhere."""
    explicit = os.environ.get(ENV_VARS.get(name, ""), "")
    if explicit:
        return explicit if Path(explicit).is_file() else None
    found = shutil.which(name)
    if found:
        return found
    places = [os.environ.get("CUDA_HOME", "") + f"/bin/{name}", f"/usr/local/cuda/bin/{name}"]
    if name == "ncu":
        places += sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True)
    return next((p for p in places if p and Path(p).is_file()), None)


class Timeout(Exception):
    pass


def run_limited(command: list[str], timeout_s: float, *, cwd: str | Path | None = None,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run `command` in its own process group; past `timeout_s` the whole group is killed and Timeout raised."""
    done = run_group(command, timeout_s, cwd=cwd, env=env)
    if done.timed_out:
        raise Timeout(f"{Path(command[0]).name} ran past {timeout_s:g} s and was stopped")
    return subprocess.CompletedProcess(command, done.status, done.stdout, done.stderr)


def last_lines(text: str, n: int = 3, width: int = 300) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " / ".join(lines[-n:])[:width]
