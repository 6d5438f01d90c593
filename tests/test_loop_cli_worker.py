"""The external-CLI worker: a small script standing in for a coding CLI, end to end."""

from __future__ import annotations

import shlex
import sys

from loop_support import FIXTURES, events, invoke


def test_external_cli_worker_end_to_end(tmp_path):
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(FIXTURES / 'fake_cli.py'))} {{prompt_file}} " \
              f"{shlex.quote(str(FIXTURES))}"
    runs = tmp_path / "runs"
    result = invoke(["run", "rmsnorm_cpu", "--worker-command", command, "--mode", "none", "--no-judge-start",
                     "--target", "1.0", "--runs-dir", str(runs), "--run-id", "cli"])
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
    assert (run / "prompts" / "2.txt").read_text().startswith("The harness's report on your candidate")


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
