"""`kill -9` of a real `kernelseek run` process mid-run, then `kernelseek resume`: the run finishes with no
completed step lost and no step run twice in the trace."""

from __future__ import annotations

import os
import signal
import subprocess
from collections import Counter
from contextlib import contextmanager

import pytest
from loop_support import (
    CLI,
    EVALUATE,
    ROOT,
    env,
    events,
    graph_snapshot,
    kill_9_once_logged,
    run_cli,
    script,
    shell,
    write,
)


def postgres_url() -> str:
    """The PostgreSQL database the test may use ($KERNELSEEK_TEST_POSTGRES, default the local server's
    kernelseek_test over its socket); skipped when none answers, unless $KERNELSEEK_REQUIRE_POSTGRES=1 (CI)."""
    url = os.environ.get("KERNELSEEK_TEST_POSTGRES", "postgresql:///kernelseek_test")
    try:
        import psycopg

        psycopg.connect(url, connect_timeout=3).close()
    except Exception as error:  # noqa: BLE001 - no driver, no server, no database: all mean "cannot test here"
        if os.environ.get("KERNELSEEK_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"no PostgreSQL server answers at {url} ({error}), and KERNELSEEK_REQUIRE_POSTGRES=1")
        pytest.skip(f"no PostgreSQL server answers at {url} ({' '.join(str(error).split())[:120]}); "
                    "start one (pg_ctlcluster 15 main start) or set KERNELSEEK_TEST_POSTGRES")
    return url


# the Postgres case is in CI's quick pass (CI installs PostgreSQL for it); the SQLite one is the same path
@pytest.mark.parametrize("checkpointer", [pytest.param("sqlite", marks=pytest.mark.slow), "postgres"])
def test_kill_9_then_resume(tmp_path, checkpointer):
    model = script(tmp_path / "script.json", [
        {"content": "Write the fast version.", "tool_calls": [shell("echo step1 >> log.txt"), write("faster")]},
        {"content": "Think for a while.", "tool_calls": [shell("echo step2 >> log.txt; sleep 6")]},
        {"content": "Judge it.", "tool_calls": [EVALUATE]},
        {"content": "Never reached: the target ends the run."},
    ])
    runs = tmp_path / "runs"
    args = ["run", "rmsnorm_cpu", "--model", model, "--mode", "none", "--no-judge-start", "--target", "1.0",
            "--runs-dir", str(runs), "--run-id", "killed"]
    if checkpointer == "postgres":  # LangGraph's PostgresSaver, one database for every run
        args += ["--checkpointer", postgres_url()]
    proc = subprocess.Popen([*CLI, *args], cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    run = runs / "killed"
    # once step 2 has begun (its model call is recorded; its shell command is sleeping)
    kill_9_once_logged(proc, run / "workspace" / "log.txt", "step2", "step 2")
    assert proc.returncode == -signal.SIGKILL
    before = events(run)
    assert [e["step"] for e in before if e["type"] == "model_call"] == [1, 2]
    assert not [e for e in before if e["type"] == "run_end"]

    resumed = run_cli(["resume", "killed", "--runs-dir", str(runs)])
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "target 1x met" in resumed.stdout and "Traceback" not in resumed.stderr

    after = events(run)
    assert after[:len(before)] == before  # nothing recorded was lost or rewritten
    keys = Counter(e["key"] for e in after)
    assert max(keys.values()) == 1
    assert [e["seq"] for e in after] == list(range(len(after)))
    assert [e["step"] for e in after if e["type"] == "model_call"] == [1, 2, 3]
    assert Counter((e["step"], e["name"]) for e in after if e["type"] == "tool_call") == \
        {(1, "shell"): 1, (1, "write_file"): 1, (2, "shell"): 1}
    evaluation = [e for e in after if e["type"] == "evaluation"]
    assert [(e["candidate"], e["judgement"], e["correct"], e["best"]) for e in evaluation] == \
        [(1, "quick", True, False), (1, "full", True, True)]
    assert [e["type"] for e in after].count("run_end") == 1
    # step 1 had completed before the kill and was not run again; step 2 was cut off inside its shell call,
    # which the replayed step answered instead of running it again (the call may be what killed the run)
    assert (run / "workspace" / "log.txt").read_text().split() == ["step1", "step2"]
    step2, = (e for e in after if e["type"] == "tool_call" and e["step"] == 2)
    assert "this call crashed the run" in step2["result"] and not step2["ok"]

    again = run_cli(["resume", "killed", "--runs-dir", str(runs)])
    assert again.returncode == 0 and "already ended" in again.stderr and "target 1x met" in again.stdout
    assert events(run) == after
    if checkpointer == "postgres":
        assert not (run / "checkpoints.sqlite").exists()  # every checkpoint went to the database


def stopped_between_writes_and_checkpoint(tmp_path, monkeypatch, stop_at_step: int):  # noqa: ANN001, ANN201
    """A scripted run driven by the experiment's child until the process is stopped (Ctrl-C) after LangGraph
    saved the writes of step `stop_at_step - 1`'s nodes and before it saved the checkpoint that follows them."""
    from kernelseek.agent.run_store import Run
    from kernelseek.experiment import child
    from kernelseek.settings import Configuration

    model = script(tmp_path / "script.json", [
        {"content": "Write the fast version.", "tool_calls": [write("faster")]},
        {"content": "Judge it.", "tool_calls": [EVALUATE]},
        {"content": "Never reached: the target ends the run."},
    ])
    seed = str(ROOT / "kernels" / "seeds" / "rmsnorm_cpu.cpp")
    config = Configuration(task="rmsnorm_cpu", kernel=seed, model=model, mode="none", judge_start=False, target=1.0)
    run = Run.create(config.validate(), tmp_path / "runs", "cut")
    real_checkpointer = Run.checkpointer

    @contextmanager
    def stopping_checkpointer(self):  # noqa: ANN001, ANN202
        with real_checkpointer(self) as saver:
            put = saver.put

            def put_or_stop(config, checkpoint, metadata, new_versions):  # noqa: ANN001, ANN202
                if metadata.get("step") == stop_at_step:
                    raise KeyboardInterrupt
                return put(config, checkpoint, metadata, new_versions)

            saver.put = put_or_stop
            yield saver

    with monkeypatch.context() as patched:
        patched.setattr(Run, "checkpointer", stopping_checkpointer)
        with pytest.raises(KeyboardInterrupt):
            child.drive(run.dir, lambda kind, **fields: None)
    return run


@pytest.mark.slow
@pytest.mark.parametrize("stop_at_step", [2, 4])
def test_a_run_stopped_between_a_steps_writes_and_its_checkpoint_is_not_taken_for_ended(tmp_path, monkeypatch,
                                                                                        stop_at_step):
    """LangGraph shows such a thread with no next node though the graph has more to do; the experiment's child
    (what Ray's and the local engine's tasks run) must drive it on to its end, not report it ended."""
    from kernelseek.checkpoints import has_ended
    from kernelseek.experiment import child

    run = stopped_between_writes_and_checkpoint(tmp_path, monkeypatch, stop_at_step)
    snapshot = graph_snapshot(run.dir)
    assert snapshot.values and not snapshot.next and not has_ended(snapshot)  # the state this test is about
    assert not events(run.dir, "run_end")

    said: list[tuple[str, dict]] = []
    assert child.drive_locked(run.dir, lambda kind, **fields: said.append((kind, fields))) == 0
    assert said[-1][0] == "end" and not said[-1][1].get("already"), said[-1]
    trace = events(run.dir)
    assert [e["type"] for e in trace].count("run_end") == 1 and trace[-1]["type"] == "run_end"
    assert [e["step"] for e in trace if e["type"] == "model_call"] == [1, 2]
    assert len({e["key"] for e in trace}) == len(trace)
    assert has_ended(graph_snapshot(run.dir))


@pytest.mark.slow
def test_resume_goes_on_from_a_step_whose_checkpoint_was_not_saved(tmp_path, monkeypatch):
    run = stopped_between_writes_and_checkpoint(tmp_path, monkeypatch, 3)
    resumed = run_cli(["resume", str(run.dir)])
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "already ended" not in resumed.stdout + resumed.stderr and "target 1x met" in resumed.stdout, resumed.stdout
    assert [e["type"] for e in events(run.dir)].count("run_end") == 1
