"""The external-CLI worker: a small script standing in for a coding CLI, end to end."""

from __future__ import annotations

import json
import shlex
import sys

import pytest
from loop_support import FIXTURES, events, invoke


def run_fake_cli(runs, run_id: str, flags: str = ""):  # noqa: ANN001, ANN201
    """`kernelseek run` on the CPU task with tests/fixtures/loop/fake_cli.py as the external worker."""
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(FIXTURES / 'fake_cli.py'))} {{prompt_file}} " \
              f"{shlex.quote(str(FIXTURES))} {flags}".rstrip()
    return invoke(["run", "rmsnorm_cpu", "--worker-command", command, "--mode", "none", "--no-judge-start",
                   "--target", "1.0", "--runs-dir", str(runs), "--run-id", run_id])


@pytest.mark.slow
def test_external_cli_worker_end_to_end(tmp_path):
    runs = tmp_path / "runs"
    result = run_fake_cli(runs, "cli")
    assert result.exit_code == 0, result.output
    assert "target 1x met" in result.output
    run = runs / "cli"
    turns = events(run, "tool_call")
    assert [(e["step"], e["name"], e["ok"]) for e in turns] == [(1, "worker_command", True), (2, "worker_command", True)]
    assert "float accumulation" in turns[0]["result"]
    evaluation = events(run, "evaluation")
    assert [(e["candidate"], e["judgement"], e["correct"], e["best"]) for e in evaluation] == \
        [(1, "quick", False, False), (2, "quick", True, False), (2, "full", True, True)]
    assert evaluation[1]["parent"] == 1
    log = (run / "workspace" / "turns.log").read_text()
    assert log.count("=== turn") == 2
    second = (run / "prompts" / "2.txt").read_text()
    assert "The harness's report on your candidate" in second
    assert "ks_rmsnorm" in second  # a CLI without a session is given the task again at every turn


@pytest.mark.slow
def test_external_cli_keeps_its_session_and_its_stream_reaches_the_trace(tmp_path):
    runs = tmp_path / "runs"
    result = run_fake_cli(runs, "session", "--stream --session {session_id} {first:--new}{resume:--resume}")
    assert result.exit_code == 0, result.output
    run = runs / "session"
    uuid = json.loads((run / "config.json").read_text())["run_uuid"]
    log = (run / "workspace" / "turns.log").read_text()
    assert f"=== turn 1 session={uuid} new" in log and f"=== turn 2 session={uuid} resume" in log
    second = (run / "prompts" / "2.txt").read_text()
    assert second.startswith("The harness's report on your candidate")  # the session has the rest
    cli_calls = [e for e in events(run, "tool_call") if e["name"].startswith("cli:")]
    assert [(e["step"], e["name"], e["arguments"]["command"]) for e in cli_calls] == \
        [(1, "cli:Bash", "cp wrong.cpp rmsnorm_cpu.cpp"), (2, "cli:Bash", "cp faster.cpp rmsnorm_cpu.cpp")]
    costs = events(run, "model_call")
    assert [(e["step"], e["model"], e["cost_usd"], e["prompt_tokens"]) for e in costs] == \
        [(1, "fake-model", 0.01, 100), (2, "fake-model", 0.01, 100)]
    end, = events(run, "run_end")
    assert abs(end["cost_usd"] - 0.02) < 1e-9 and end["tokens"] == 240


def test_a_codex_json_stream_is_read():
    from kernelseek.agent.cli_stream import parse

    lines = [{"type": "thread.started", "thread_id": "th-1"},
             {"type": "item.completed", "item": {"id": "i1", "type": "command_execution", "command": "bash -lc ls",
                                                 "aggregated_output": "a.cpp", "exit_code": 0, "status": "completed"}},
             {"type": "item.completed", "item": {"id": "i2", "type": "agent_message", "text": "Done."}},
             {"type": "turn.completed", "usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 3}}]
    turn = parse("noise\n" + "\n".join(json.dumps(line) for line in lines))
    assert turn.session_id == "th-1" and turn.text == "Done." and turn.cost_usd is None
    assert turn.tool_calls == [{"name": "command_execution", "arguments": {"command": "bash -lc ls"},
                                "result": "a.cpp", "ok": True}]
    assert (turn.prompt_tokens, turn.completion_tokens) == (10, 3)
    assert parse("plain text, no events") is None


def test_external_cli_worker_that_changes_nothing_is_done(tmp_path):
    runs = tmp_path / "runs"
    result = invoke(["run", "rmsnorm_cpu", "--worker-command", "echo nothing to do", "--mode", "none",
                     "--no-judge-start", "--max-steps", "2", "--runs-dir", str(runs), "--run-id", "idle"])
    assert result.exit_code == 0, result.output
    assert [e["kind"] for e in events(runs / "idle", "decision_point")] == ["done"]
    assert not events(runs / "idle", "evaluation")
    assert "step budget spent" in result.output


def test_missing_worker_command_is_one_sentence(tmp_path):
    result = invoke(["run", "rmsnorm_cpu", "--worker-command", "no-such-coding-cli-xyz {prompt}", "--no-judge-start",
                     "--mode", "none", "--runs-dir", str(tmp_path), "--run-id", "missing"])
    assert result.exit_code == 1
    assert "the worker command could not be started" in result.output and "kernelseek resume missing" in result.output
