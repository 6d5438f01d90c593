"""A worker that survives: transient provider errors are retried, a permanent one ends the run with one
sentence and `kernelseek resume` continues it, a long conversation is trimmed to the model's window; and
budgets must be finite numbers above 0. Scripted runs that judge nothing (the worker only talks)."""

from __future__ import annotations

import math
import time
from datetime import datetime

import pytest
from loop_support import ROOT, env, events, graph_values, invoke, run_cli, script

from kernelseek.settings import ConfigError, Configuration


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch):
    monkeypatch.setenv("KERNELSEEK_RETRY_WAIT_S", "0")


def _run(tmp_path, replies, *extra, run_id="r"):
    model = script(tmp_path / f"{run_id}.json", replies)
    return invoke(["run", "rmsnorm_cpu", "--model", model, "--mode", "none", "--no-judge-start",
                   "--runs-dir", str(tmp_path / "runs"), "--run-id", run_id, *extra])


def test_two_rate_limits_then_an_answer_is_retried_and_the_run_goes_on(tmp_path):
    result = _run(tmp_path, [{"content": "I have finished.", "errors": ["rate_limit", "rate_limit"]},
                             {"content": "Still finished."}], "--max-steps", "2")
    assert result.exit_code == 0, result.output
    assert "step budget spent" in result.output
    run = tmp_path / "runs" / "r"
    retries = events(run, "model_retry")
    assert [(e["step"], e["attempt"]) for e in retries] == [(1, 1), (1, 2)]
    assert all("rate limit" in e["error"] for e in retries)
    assert [e["step"] for e in events(run, "model_call")] == [1, 2]


def test_a_permanent_error_ends_the_run_in_one_sentence_and_resume_continues(tmp_path):
    result = _run(tmp_path, [{"content": "I have finished.", "errors": ["auth"]}, {"content": "Done."}],
                  "--max-steps", "2", run_id="p")
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert "the model call to scripted/" in text and "failed: " in text and "kernelseek resume p" in text
    assert "Traceback" not in result.output
    assert not events(tmp_path / "runs" / "p", "model_retry")  # a bad key is not retried
    resumed = invoke(["resume", "p", "--runs-dir", str(tmp_path / "runs")])
    assert resumed.exit_code == 0, resumed.output
    assert [e["step"] for e in events(tmp_path / "runs" / "p", "model_call")] == [1, 2]


def test_a_script_that_runs_out_of_replies_is_not_retried(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSEEK_RETRY_WAIT_S", "5")  # six retries would take minutes: the test would show it
    result = _run(tmp_path, [{"content": "Still working."}], "--max-steps", "3", run_id="x")
    assert result.exit_code == 1
    assert "asked for another" in " ".join(result.output.split()) and "Traceback" not in result.output
    assert not events(tmp_path / "runs" / "x", "model_retry")  # the end of a script is permanent


def test_a_one_reply_script_ends_the_command_in_seconds_with_one_sentence(tmp_path):
    """The command as a user types it, with the real backoff: six retries would wait a minute or more."""
    model = script(tmp_path / "one.json", [{"content": "Still working."}])
    result = run_cli(["run", "rmsnorm_cpu", "--model", model, "--mode", "none", "--no-judge-start",
                      "--runs-dir", str(tmp_path / "runs"), "--run-id", "one"],
                     env={k: v for k, v in env().items() if k != "KERNELSEEK_RETRY_WAIT_S"})
    ended = time.time()
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]  # the run's progress, then its end
    said = [line for line in lines if line.startswith("error:")]
    assert len(said) == 1 and said[0] == lines[-1] and said[0].startswith("error: the model call to "), result.stderr
    assert result.stdout == ""  # a run that failed has no end to print
    assert "has 1 reply and request 2 asked for another" in said[0] and "Traceback" not in result.stderr
    trace = events(tmp_path / "runs" / "one")
    assert not [e for e in trace if e["type"] == "model_retry"]
    # from the last thing the run recorded before the failing call (the first reply's decision point) to the
    # command's end: the call, its failure and the exit (the start-up's imports come before)
    last = datetime.fromisoformat(trace[-1]["time"]).timestamp()
    assert trace[-1]["type"] == "decision_point" and ended - last < 5, ended - last


def test_a_long_conversation_is_trimmed_to_the_window_and_recorded(tmp_path):
    words = "I considered the loop order, the reduction and the memory traffic once more. " * 20
    replies = [{"content": f"Turn {i}: {words}"} for i in range(8)]
    result = _run(tmp_path, replies, "--max-steps", "8", "--context-tokens", "4000")
    assert result.exit_code == 0, result.output
    run = tmp_path / "runs" / "r"
    trims = events(run, "trim")
    assert trims and all(e["tokens_after"] < e["tokens_before"] and e["window"] == 4000 for e in trims)
    calls = events(run, "model_call")
    assert [e["content"][:7] for e in calls] == [f"Turn {i}:" for i in range(8)]  # the script kept its place
    messages = graph_values(run)["messages"]
    assert messages[0]["role"] == "system" and "How the harness judges" in messages[0]["content"]
    assert "were left out to fit the model's context window" in messages[1]["content"]
    assert "Best so far" in messages[1]["content"] and messages[-1]["content"].startswith("Turn 7:")


@pytest.mark.parametrize("field", ["max_dollars", "max_wall_s", "target", "target_gain", "max_tokens"])
@pytest.mark.parametrize("value", [math.nan, -1.0, math.inf])
def test_budgets_must_be_finite_and_above_zero(field, value):
    seed = str(ROOT / "kernels" / "seeds" / "rmsnorm_cpu.cpp")
    with pytest.raises(ConfigError, match="must be"):
        Configuration(task="t", kernel=seed, model="m", **{field: value}).validate()


def test_a_nan_budget_on_the_command_line_is_one_sentence(tmp_path):
    result = _run(tmp_path, [{"content": "x"}], "--max-dollars", "nan")
    assert result.exit_code == 2 and "--max-dollars nan must be a finite number above 0" in result.output
    assert "Traceback" not in result.output


def test_a_nan_budget_in_an_experiment_is_one_sentence(tmp_path):
    from kernelseek.experiment.config import ExperimentConfigError, load_experiment

    path = tmp_path / "x.yaml"
    path.write_text("name: x\ntask: rmsnorm_cpu\narch: cpu\nmodel: anthropic/claude-sonnet-4-5\ngraphs: [kernelseek]\n"
                    "budgets: {max_steps: 3, max_dollars: .nan}\n")
    with pytest.raises(ExperimentConfigError, match="budgets.max_dollars' must be a finite number"):
        load_experiment(path)
