"""Human mode through the real CLI: the question is typed on stdin and recorded with its decision point
and context. A run left waiting at its question (stdin closed) is resumed and asked again."""

from __future__ import annotations

import pytest
from loop_support import EVALUATE, events, graph_values, run_cli, script, write

QUESTION = "What does the timing say about where the time goes, per row?"


@pytest.mark.slow
def test_question_typed_at_the_prompt_is_recorded(tmp_path):
    model = script(tmp_path / "script.json", [
        {"content": "Drop the double precision.", "tool_calls": [write("wrong"), EVALUATE]},
        {"content": "This loop is memory-bound; it cannot be made faster."},
        {"content": "I will look at the timing per row."},
    ])
    runs = tmp_path / "runs"
    first = run_cli(["run", "rmsnorm_cpu", "--model", model, "--mode", "human", "--no-judge-start",
                     "--max-steps", "3", "--runs-dir", str(runs), "--run-id", "human"], input="")
    assert first.returncode == 3, first.stdout + first.stderr  # no answer on stdin: the run waits, nothing lost
    assert "no answer came on stdin" in first.stderr and "Traceback" not in first.stdout + first.stderr
    assert "decision point: claimed_limit" in first.stderr and "memory-bound" in first.stderr  # the prompt: stderr
    run = runs / "human"
    assert not events(run, "human_message")

    second = run_cli(["resume", "human", "--runs-dir", str(runs)], input=QUESTION + "\n")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "step budget spent" in second.stdout
    decision, = events(run, "decision_point")
    message, = events(run, "human_message")
    question, = events(run, "question")
    assert decision["kind"] == "claimed_limit" and "memory-bound" in decision["detail"]
    assert message["text"] == QUESTION and message["decision_point"] == "claimed_limit" and message["step"] == 2
    context = message["context"]
    assert "memory-bound" in context["worker_words"]
    assert "INCORRECT" in context["last_report"] and context["best_speedup"] is None
    assert question["source"] == "human" and question["text"] == QUESTION and question["bank_id"] is None
    assert question["decision_point"] == "claimed_limit"
    # the worker received the question as its next message
    state = graph_values(run)
    asked = [m for m in state["messages"] if m["role"] == "user" and QUESTION in (m.get("content") or "")]
    assert len(asked) == 1
    calls = events(run, "model_call")
    assert [e["step"] for e in calls] == [1, 2, 3]
