"""Where runs live and how they are opened: outside the repository by default, ids validated, the folder made
in one atomic step, a corrupted checkpoint file named, a copied run folder resumable, and a tool call that
crashed the run answered on resume instead of run again."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
from pathlib import Path

import pytest
from loop_support import ROOT, events, invoke, run_cli, script, shell

from kernelseek.agent.run_store import Run, default_runs_dir
from kernelseek.agent.tools import CRASHED
from kernelseek.settings import ConfigError, Configuration

SEED = str(ROOT / "kernels" / "seeds" / "rmsnorm_cpu.cpp")


def config(model: str = "scripted/none.json") -> Configuration:
    return Configuration(task=str(ROOT / "evals" / "tasks" / "rmsnorm_cpu"), kernel=SEED, model=model).validate()


@pytest.mark.filterwarnings("error::UserWarning")  # an empty plot draws no legend rather than warning
def test_runs_live_in_the_user_data_directory_by_default(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_runs_dir() == tmp_path / "data" / "kernelseek" / "runs"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/ignored")
    assert default_runs_dir() == Path.home() / ".local" / "share" / "kernelseek" / "runs"
    monkeypatch.setenv("KERNELSEEK_RUNS", str(tmp_path / "elsewhere"))
    assert default_runs_dir() == tmp_path / "elsewhere"

    monkeypatch.delenv("KERNELSEEK_RUNS")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    model = script(tmp_path / "s.json", [{"content": "look", "tool_calls": [shell("ls")]}])
    made = invoke(["run", "rmsnorm_cpu", "--model", model, "--mode", "none", "--no-judge-start", "--max-steps", "1",
                   "--run-id", "home-run"])
    assert made.exit_code == 0, made.output
    assert (tmp_path / "data" / "kernelseek" / "runs" / "home-run" / "trace.jsonl").is_file()
    assert not (ROOT / "runs" / "home-run").exists()
    for args in (["trace", "show", "home-run"], ["resume", "home-run"], ["report", "home-run", "--out",
                                                                            str(tmp_path / "report")]):
        shown = invoke(args)
        assert shown.exit_code == 0, (args, shown.output)


@pytest.mark.parametrize("bad", ["../x", "/tmp/abs", "a/b", "..", ".", "a b", "", "x" * 129])
def test_run_ids_are_validated(tmp_path, bad):
    with pytest.raises(ConfigError, match="a run id is 1-128 letters, digits"):
        Run.create(config(), tmp_path / "runs", bad) if bad else Run.open(bad, tmp_path / "runs")
    assert not (tmp_path / "x").exists() and not list((tmp_path / "runs").glob("*"))


def test_a_bad_run_id_is_one_sentence_on_the_command_line(tmp_path):
    model = script(tmp_path / "s.json", [{"content": "done"}])
    result = invoke(["run", "rmsnorm_cpu", "--model", model, "--runs-dir", str(tmp_path / "runs"),
                     "--run-id", "../escaped"])
    assert result.exit_code == 2 and "a run id is 1-128 letters" in result.output
    assert not (tmp_path / "escaped").exists()
    result = invoke(["resume", "../../etc", "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2 and "a run id is" in result.output


def test_a_run_folder_is_made_in_one_atomic_step(tmp_path, monkeypatch):
    Run.create(config(), tmp_path / "runs", "same")
    with pytest.raises(ConfigError, match="a run with this id exists"):
        Run.create(config(), tmp_path / "runs", "same")
    # the race: another process makes the folder between a check and the creation
    real_mkdir = Path.mkdir

    def racing_mkdir(self: Path, *args, **kwargs) -> None:
        raced = tmp_path / "runs" / "raced"
        if raced in (self, self.parent) and not raced.exists():
            real_mkdir(raced)
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", racing_mkdir)
    with pytest.raises(ConfigError, match="a run with this id exists"):
        Run.create(config(), tmp_path / "runs", "raced")


def _finished_run(tmp_path: Path, run_id: str) -> Path:
    model = script(tmp_path / "s.json", [{"content": "look", "tool_calls": [shell("ls")]}])
    made = invoke(["run", "rmsnorm_cpu", "--model", model, "--mode", "none", "--no-judge-start", "--max-steps", "1",
                   "--runs-dir", str(tmp_path / "runs"), "--run-id", run_id])
    assert made.exit_code == 0, made.output
    return tmp_path / "runs" / run_id


def test_a_copied_run_folder_keeps_its_thread(tmp_path):
    run = _finished_run(tmp_path, "original")
    assert json.loads((run / "config.json").read_text())["thread_id"] == "original"
    shutil.copytree(run, tmp_path / "runs" / "copy")
    resumed = invoke(["resume", "copy", "--runs-dir", str(tmp_path / "runs")])
    assert resumed.exit_code == 0 and "already ended" in resumed.output, resumed.output


def _open_files(path: Path) -> list[str]:
    """This process's file descriptors on `path` (or its -wal/-shm files)."""
    names = (os.readlink(fd) for fd in Path("/proc/self/fd").iterdir() if fd.is_symlink())
    return [name for name in names if name.startswith(str(path))]


def test_a_finished_run_leaves_no_connection_to_its_checkpoints(tmp_path):
    run = _finished_run(tmp_path, "closed")
    assert _open_files(run / "checkpoints.sqlite") == []
    resumed = invoke(["resume", "closed", "--runs-dir", str(tmp_path / "runs")])
    assert resumed.exit_code == 0 and "already ended" in resumed.output, resumed.output
    assert _open_files(run / "checkpoints.sqlite") == []
    with Run.open(run).checkpointer() as saver:
        assert _open_files(run / "checkpoints.sqlite")  # the block's connection is open inside it
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        saver.conn.execute("SELECT 1")


def test_a_corrupted_checkpoint_file_is_named_in_one_sentence(tmp_path):
    run = _finished_run(tmp_path, "corrupt")
    for leftover in run.glob("checkpoints.sqlite-*"):  # the write-ahead log would still hold the first pages
        leftover.unlink()
    (run / "checkpoints.sqlite").write_bytes(b"this is not a database" * 100)
    resumed = invoke(["resume", "corrupt", "--runs-dir", str(tmp_path / "runs")])
    assert resumed.exit_code == 2, resumed.output
    said = resumed.output.replace("\n", "")
    assert f"{run / 'checkpoints.sqlite'}: the checkpoint database is corrupted" in said and "Traceback" not in said


@pytest.mark.slow
def test_a_tool_call_that_crashed_the_run_is_not_run_again(tmp_path):
    """`kill -9 $PPID` from an unconfined shell kills the run; on resume the call is answered, not repeated."""
    model = script(tmp_path / "s.json", [
        {"content": "Kill my parent.", "tool_calls": [shell("echo once >> log.txt; kill -9 $PPID")]},
        {"content": "Carry on.", "tool_calls": [shell("echo after >> log.txt")]},
    ])
    runs = tmp_path / "runs"
    killed = run_cli(["run", "rmsnorm_cpu", "--model", model, "--mode", "none", "--no-judge-start", "--max-steps", "2",
                      "--runs-dir", str(runs), "--run-id", "crash", "--unconfined"])
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    resumed = run_cli(["resume", "crash", "--runs-dir", str(runs)])
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    run = runs / "crash"
    assert (run / "workspace" / "log.txt").read_text().split() == ["once", "after"]
    first, second = events(run, "tool_call")
    assert CRASHED in first["result"] and not first["ok"] and second["ok"]
    assert [e["key"] for e in events(run, "tool_start")] == ["1:worker:tool:0:start", "2:worker:tool:0:start"]
