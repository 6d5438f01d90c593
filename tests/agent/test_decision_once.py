"""Decision points are detected once per decision (by the node that precedes the router, read from the
state by the router and the questioner), and a worker that keeps editing without evaluating reaches the
`no_evaluation` decision point."""

from __future__ import annotations

import pytest
from loop_support import ROOT, bank_copy, events, invoke, script, shell

from kernelseek.agent import decision_points, questioner
from kernelseek.agent.state import initial_state
from kernelseek.bank.model import load_bank
from kernelseek.settings import Configuration

SEED = str(ROOT / "kernels" / "seeds" / "rmsnorm_cpu.cpp")


def count_detections(tmp_path, monkeypatch) -> list[tuple[int, bool]]:  # noqa: ANN001
    """A copy of the bank for the run, and the (step, after_eval) of every detection of a decision point;
    the questioner detecting one again fails the test."""
    monkeypatch.setenv("KERNELSEEK_BANK", str(bank_copy(tmp_path)))
    calls = []
    real = decision_points.detect

    def counted(state, cfg, *, after_eval):  # noqa: ANN001, ANN202
        calls.append((state.get("step"), after_eval))
        return real(state, cfg, after_eval=after_eval)

    monkeypatch.setattr(decision_points, "detect", counted)
    monkeypatch.setattr(questioner, "detect", lambda *a, **k: pytest.fail("the questioner detected the decision "
                                                                         "point again"))
    return calls


def test_no_evaluation_for_n_steps_is_a_decision_point():
    cfg = Configuration(task="rmsnorm_cpu", kernel=SEED, model="scripted/x.json", no_eval_steps=3)
    state = initial_state("/x")
    assert decision_points.detect({**state, "steps_since_eval": 2}, cfg, after_eval=False) is None
    assert decision_points.detect({**state, "steps_since_eval": 3}, cfg, after_eval=False) == \
        ("no_evaluation", "3 worker steps without an evaluation")
    # a worker that stopped is at "done" (or a claimed limit) however long it went without evaluating
    assert decision_points.detect({**state, "steps_since_eval": 5, "worker_stopped": True}, cfg,
                                  after_eval=False)[0] == "done"


def test_a_worker_editing_without_evaluating_is_asked_and_each_decision_is_detected_once(tmp_path, monkeypatch):
    calls = count_detections(tmp_path, monkeypatch)
    worker = script(tmp_path / "worker.json", [{"content": f"Editing, part {i}.", "tool_calls": [shell(f"echo {i}")]}
                                               for i in range(1, 5)])
    runs = tmp_path / "runs"
    result = invoke(["run", "rmsnorm_cpu", "--model", worker, "--mode", "auto", "--no-judge-start", "--max-steps", "4",
                     "--no-eval-steps", "3", "--bank-stats", str(tmp_path / "stats.json"), "--runs-dir", str(runs),
                     "--run-id", "edits"])
    assert result.exit_code == 0, result.output
    decision, = events(runs / "edits", "decision_point")
    assert (decision["kind"], decision["step"]) == ("no_evaluation", 3)
    assert decision["detail"] == "3 worker steps without an evaluation"
    question, = events(runs / "edits", "question")
    assert question["decision_point"] == "no_evaluation"
    assert "no_evaluation" in {q.id: q.fits for q in load_bank()}[question["bank_id"]]
    assert calls == [(1, False), (2, False), (3, False), (4, False)]  # once per worker step, never again


@pytest.mark.parametrize("point", ["no_evaluation"])
def test_the_seed_bank_has_questions_for_the_new_decision_point(point):
    kinds = {q.kind for q in load_bank() if point in q.fits}
    assert {"layer_shift", "reject_limit"} <= kinds


@pytest.mark.slow  # a real judgement: its child process alone takes seconds (importing torch)
def test_a_decision_after_a_judgement_is_detected_once_by_the_harness_node(tmp_path, monkeypatch):
    from loop_support import EVALUATE, write

    calls = count_detections(tmp_path, monkeypatch)
    worker = script(tmp_path / "worker.json", [{"content": "A faster sum.", "tool_calls": [write("wrong"), EVALUATE]},
                                               {"content": "Looking at the failures."}])
    runs = tmp_path / "runs"
    result = invoke(["run", "rmsnorm_cpu", "--model", worker, "--mode", "auto", "--no-judge-start", "--max-steps", "2",
                     "--failing", "1", "--bank-stats", str(tmp_path / "stats.json"), "--runs-dir", str(runs),
                     "--run-id", "wrong"])
    assert result.exit_code == 0, result.output
    assert [e["kind"] for e in events(runs / "wrong", "decision_point")] == ["failing"]
    # step 1: the worker asked for a judgement (its node leaves the decision to the harness node), the
    # harness node found "failing"; step 2: the worker stopped ("done"), and the step budget ended the run
    assert calls == [(1, True), (2, False)]
