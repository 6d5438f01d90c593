"""The worker's room: a scripted worker that tries to peek at the repository, the home directory, the parent's
secrets and the network is refused every time; its background processes end with the call; the file tools
read only regular files inside the workspace, and only so much; without bubblewrap the run refuses to start
unless --unconfined is given."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from loop_support import ROOT, env, events, invoke, run_cli, script, shell

from kernelseek.agent import sandbox, tools

SECRET = "sk-ks-room-7f3a9"  # what the parent process holds and the worker must never see
NOTES = ROOT / "kernels" / "hopper" / "LAB.md"  # a file of the repository, outside the workspace
PLANTED = ROOT / "kernels" / "ks-room-planted"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (.ci/run installs it)")


def read(path: str) -> dict:
    return {"name": "read_file", "arguments": {"path": path}}


def _gone(marker: str, within_s: float = 3.0) -> bool:
    """No process holds `marker` in its command line (a killed one may take a moment to go)."""
    deadline = time.monotonic() + within_s
    while _sleepers(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _sleepers(marker)


def _sleepers(marker: str) -> list[int]:
    """Processes whose command line holds `marker` (the tests' own sleeps)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.slow
@needs_bwrap
def test_a_scripted_worker_cannot_peek_or_reach_out(tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-OF-THE-USER")
    attempts = [
        read("../../../kernels/hopper/LAB.md"), read(str(NOTES)), read(str(home / ".ssh" / "id_ed25519")),
        read("/proc/self/environ"), read("/etc/hostname"),
        shell(f"ln -s {NOTES} notes.md; ln -s {home}/.ssh ssh"), read("notes.md"), read("ssh/id_ed25519"),
        shell(f"cat {NOTES} {home}/.ssh/id_ed25519; ls {ROOT} {home}"),
        shell("cat /proc/self/environ /proc/$PPID/environ /proc/1/environ | tr '\\0' '\\n'; env"),
        shell("python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)\" && echo CONNECTED; "
              "curl -sS -m 3 http://1.1.1.1/ >/dev/null && echo CONNECTED"),
        shell(f"echo planted > {PLANTED}; echo planted > /usr/ks-room-planted"),
        shell("nohup sleep 4321 >/dev/null 2>&1 & setsid sleep 4322 >/dev/null 2>&1 & (sleep 4323 &); echo started"),
    ]
    model = script(tmp_path / "script.json", [{"content": "Look around.", "tool_calls": attempts},
                                              {"content": "Done."}])
    runs = tmp_path / "runs"
    try:
        result = run_cli(["run", "rmsnorm_cpu", "--model", model, "--mode", "none", "--no-judge-start",
                          "--max-steps", "2", "--runs-dir", str(runs), "--run-id", "peek"],
                         env=env(HOME=str(home), OPENAI_API_KEY=SECRET, DATABASE_URL=f"postgres://u:{SECRET}@db/x"))
        planted = [p for p in (PLANTED, Path("/usr/ks-room-planted")) if p.exists()]
    finally:  # what an unconfined shell would have left behind
        for path in (PLANTED, Path("/usr/ks-room-planted")):
            path.unlink(missing_ok=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "bubblewrap" in result.stderr  # the sandbox line is a note: stderr
    run = runs / "peek"
    calls = events(run, "tool_call")
    assert len(calls) == len(attempts)
    by_index = {int(e["key"].rsplit(":", 1)[1]): e for e in calls}
    for i in (0, 1, 2, 3, 4, 6, 7):  # every read outside the workspace, directly or through a symlink
        assert not by_index[i]["ok"] and "outside the workspace" in by_index[i]["result"], by_index[i]
    seen = "\n".join(e["result"] for e in calls)
    for secret in (SECRET, "PRIVATE-KEY-OF-THE-USER", NOTES.read_text()[:60]):
        assert secret not in seen
    listed = by_index[8]["result"]
    assert "No such file or directory" in listed and "evals" not in listed
    assert "HOME=" + str(run / "workspace") in by_index[9]["result"]
    assert "CONNECTED" not in by_index[10]["result"]
    assert not planted and "Read-only file system" in by_index[11]["result"]
    assert "started" in by_index[12]["result"] and _gone("sleep 432")
    # the secret reached neither the trace nor the checkpoints
    assert SECRET.encode() not in (run / "trace.jsonl").read_bytes()
    assert SECRET.encode() not in (run / "checkpoints.sqlite").read_bytes()
    start, = events(run, "run_start")
    assert start["sandbox"].startswith("bubblewrap")


@needs_bwrap
def test_background_processes_end_with_the_call(tmp_path):
    ctx = tools.ToolContext(tmp_path, timeout_s=30)
    began = time.monotonic()
    text, ok = tools.SHELL.call({"command": "nohup sleep 4331 & setsid sleep 4332 & (sleep 4333 &); echo back"}, ctx)
    assert ok and "back" in text and time.monotonic() - began < 5
    assert _gone("sleep 433")


def test_unconfined_calls_end_their_process_group_and_stop_reading(tmp_path):
    ctx = tools.ToolContext(tmp_path, timeout_s=30, unconfined=True)
    began = time.monotonic()
    try:  # a setsid escapee that keeps the output pipe open: the call still returns when the shell exits
        text, ok = tools.SHELL.call({"command": "nohup sleep 4341 >/dev/null 2>&1 & setsid sleep 4342 & echo back"}, ctx)
        assert ok and "back" in text and time.monotonic() - began < 5
        assert _gone("sleep 4341")
    finally:
        for pid in _sleepers("sleep 4342"):
            os.kill(pid, 9)


def test_shell_output_is_streamed_keeping_head_and_tail(tmp_path):
    ctx = tools.ToolContext(tmp_path, timeout_s=60, output_cap=1000, unconfined=True)
    text, ok = tools.SHELL.call({"command": "echo FIRST; head -c 50000000 /dev/zero | tr '\\0' x; echo; echo LAST"}, ctx)
    assert ok and text.startswith("FIRST") and text.rstrip().endswith("LAST") and len(text) <= 1000
    assert "bytes cut" in text


def test_file_tools_refuse_what_is_not_a_regular_file_inside(tmp_path):
    ctx = tools.ToolContext(tmp_path)
    (tmp_path / "zero").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "big.txt").write_bytes(b"a" * (tools.MAX_READ_BYTES + 10))
    for name in ("/dev/zero", "zero"):
        text, ok = tools.READ.call({"path": name}, ctx)
        assert not ok and "outside the workspace" in text
    began = time.monotonic()
    for tool, arguments in ((tools.READ, {}), (tools.WRITE, {"content": "x"}), (tools.EDIT, {"old": "a", "new": "b"})):
        text, ok = tool.call({"path": "fifo", **arguments}, ctx)
        assert not ok and "not a regular file" in text
    assert time.monotonic() - began < 5
    text, ok = tools.READ.call({"path": "big.txt"}, ctx)
    assert ok and f"only the first {tools.MAX_READ_BYTES} bytes were read" in text
    text, ok = tools.EDIT.call({"path": "big.txt", "old": "a", "new": "b"}, ctx)
    assert not ok and "edit it with the shell" in text


def test_without_bubblewrap_the_run_refuses_unless_unconfined(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"  # a PATH with the tools the run needs, and no bwrap
    bin_dir.mkdir()
    for name in ("bash", "sh", "echo", "env"):
        if shutil.which(name):
            (bin_dir / name).symlink_to(shutil.which(name))
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    assert sandbox.unavailable() == sandbox.MISSING
    model = script(tmp_path / "s.json", [{"content": "env", "tool_calls": [shell("env; echo ran")]}])
    args = ["run", "rmsnorm_cpu", "--model", model, "--mode", "none", "--no-judge-start", "--max-steps", "1",
            "--runs-dir", str(tmp_path / "runs")]
    refused = invoke([*args, "--run-id", "confined"])
    assert refused.exit_code == 2 and "bubblewrap (bwrap) is not installed" in refused.output
    assert "--unconfined" in refused.output and not (tmp_path / "runs" / "confined").exists()

    allowed = invoke([*args, "--run-id", "free", "--unconfined"])
    assert allowed.exit_code == 0, allowed.output
    assert "warning:" in allowed.output and "--unconfined" in allowed.output
    start, = events(tmp_path / "runs" / "free", "run_start")
    assert start["sandbox"].startswith("none (--unconfined)")
    call, = events(tmp_path / "runs" / "free", "tool_call")
    assert "ran" in call["result"] and SECRET not in call["result"]
    # a tool context of a confined run refuses the shell plainly rather than run it unconfined
    text, ok = tools.SHELL.call({"command": "echo ran"}, tools.ToolContext(tmp_path))
    assert not ok and "bubblewrap (bwrap) is not installed" in text


@needs_bwrap
def test_the_compilers_work_in_the_sandbox(tmp_path):
    ctx = tools.ToolContext(tmp_path, timeout_s=120)
    (tmp_path / "k.cpp").write_text("extern \"C\" int f(int x) { return x + 1; }\n")
    text, ok = tools.SHELL.call({"command": "c++ -O2 -shared -fPIC -o k.so k.cpp && echo built"}, ctx)
    assert ok and "built" in text, text
    if sandbox.cuda_toolkit() is None:
        return
    (tmp_path / "k.cu").write_text("__global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n")
    text, ok = tools.SHELL.call({"command": "nvcc -c k.cu -o k.o && echo built"}, ctx)
    assert ok and "built" in text, text
