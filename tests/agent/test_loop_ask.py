"""Speak at any time: `kernelseek ask RUN "message"` reaches the worker at its next step, recorded as a
human message at decision point "interjection" with its context — in a run paused at a human-mode question,
and in an auto-mode run while it runs."""

from __future__ import annotations

import json

import pytest
from loop_support import bank_copy, events, graph_values, invoke, run_cli, script

from kernelseek.agent import questioner

MESSAGE = "Have you looked at how the rows are split between threads?"


def _conversation(run) -> list[dict]:
    return graph_values(run)["messages"]


@pytest.mark.slow
def test_ask_reaches_a_run_paused_in_human_mode(tmp_path):
    model = script(tmp_path / "script.json", [{"content": "I have finished: it cannot be made faster."},
                                              {"content": "Let me look at the rows."}])
    runs = tmp_path / "runs"
    first = run_cli(["run", "rmsnorm_cpu", "--model", model, "--mode", "human", "--no-judge-start",
                     "--max-steps", "2", "--runs-dir", str(runs), "--run-id", "paused"], input="")
    assert first.returncode == 3, first.stdout + first.stderr  # waiting at its question
    asked = run_cli(["ask", "paused", MESSAGE, "--runs-dir", str(runs)])
    assert asked.returncode == 0, asked.stdout + asked.stderr
    assert "not running" in asked.stdout and "kernelseek resume paused" in " ".join(asked.stdout.split())
    second = run_cli(["resume", "paused", "--runs-dir", str(runs)], input="\n")  # no question: just continue
    assert second.returncode == 0, second.stdout + second.stderr
    run = runs / "paused"
    message, = [e for e in events(run, "human_message") if e["decision_point"] == "interjection"]
    assert message["text"] == MESSAGE and message["step"] == 2
    assert "cannot be made faster" in message["context"]["worker_words"]
    delivered = [m for m in _conversation(run) if MESSAGE in str(m.get("content"))]
    assert len(delivered) == 1 and delivered[0]["role"] == "user"


def test_ask_reaches_an_auto_mode_run_while_it_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSEEK_BANK", str(bank_copy(tmp_path)))
    runs = tmp_path / "runs"
    said: list[str] = []
    real = questioner.ask

    def ask_while_running(state, run, **kw):  # noqa: ANN001, ANN202 - the person speaks mid-run
        said.append(invoke(["ask", run.id, MESSAGE, "--runs-dir", str(runs)]).output)
        return real(state, run, **kw)

    monkeypatch.setattr(questioner, "ask", ask_while_running)
    model = script(tmp_path / "script.json", [{"content": "I have finished."}, {"content": "Looking at the rows."}])
    result = invoke(["run", "rmsnorm_cpu", "--model", model, "--mode", "auto", "--no-judge-start", "--max-steps", "2",
                     "--runs-dir", str(runs), "--run-id", "auto"])
    assert result.exit_code == 0, result.output
    assert said and "its worker receives it at its next step" in " ".join(said[0].split())
    run = runs / "auto"
    message, = [e for e in events(run, "human_message") if e["decision_point"] == "interjection"]
    assert message["step"] == 2 and message["text"] == MESSAGE
    conversation = _conversation(run)
    index = next(i for i, m in enumerate(conversation) if MESSAGE in str(m.get("content")))
    assert conversation[index + 1]["content"] == "Looking at the rows."  # received before its next reply


def test_a_long_message_is_cut_with_a_warning(tmp_path):
    model = script(tmp_path / "script.json", [{"content": "Done."}])
    runs = tmp_path / "runs"
    assert invoke(["run", "rmsnorm_cpu", "--model", model, "--mode", "none", "--no-judge-start", "--max-steps", "1",
                   "--runs-dir", str(runs), "--run-id", "x"]).exit_code == 0
    ended = invoke(["ask", "x", "y" * 600, "--runs-dir", str(runs)])
    assert ended.exit_code == 2 and "has ended" in ended.output
    (runs / "x" / "trace.jsonl").write_text("")  # pretend it has not ended, to see the cap
    long = invoke(["ask", "x", "y" * 600, "--runs-dir", str(runs)])
    assert long.exit_code == 0 and "only the first 500 are sent" in " ".join(long.output.split())
    queued = json.loads((runs / "x" / "inbox.jsonl").read_text().splitlines()[0])
    assert queued["text"] == "y" * 500 and queued["truncated"] == 600
