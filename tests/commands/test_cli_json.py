"""Commands for scripts: with stdout a pipe it carries the command's result alone (the live view, progress and
notes go to stderr), and --json makes that result JSON: `run`, `resume`, `fork --list` and `eval`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelseek.cli import app

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "loop"


def invoke(*args: str):  # noqa: ANN201 - click's Result
    """The command in this process; its stdout and stderr are captured apart (neither is a terminal)."""
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "80", "LITELLM_LOCAL_MODEL_COST_MAP": "True"})


@pytest.fixture
def ended_run(tmp_path):
    """A scripted run of two turns: the worker ends the first at once (a decision point: done; --mode none tells
    it to continue), then the second, and the step budget ends the run."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": "Nothing to change."}, {"content": "Still nothing."}]))
    runs = tmp_path / "runs"
    result = invoke("run", "rmsnorm_cpu", "--model", f"scripted/{script}", "--mode", "none", "--no-judge-start",
                    "--max-steps", "2", "--runs-dir", str(runs), "--run-id", "r1", "--unconfined")
    return result, runs


def test_a_run_in_a_pipe_prints_its_end_alone(ended_run):
    result, runs = ended_run
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        "run r1 ended (SCRIPTED worker: fixed replies, not a model): step budget spent (2 worker turns) · best "
        "none · 2 steps · 0 evaluations · $0.0000",
        "trace: kernelseek trace show r1"]  # whole lines, never broken at 80 columns
    assert "run r1 in " in result.stderr and "the worker ended its turn" in result.stderr  # the progress


def test_resume_json_is_the_runs_end(ended_run):
    _, runs = ended_run
    result = invoke("resume", "r1", "--runs-dir", str(runs), "--json")
    assert result.exit_code == 0, result.stderr
    end = json.loads(result.stdout)  # stdout is the JSON and nothing else
    assert end["run_id"] == "r1" and end["end_reason"] == "step budget spent (2 worker turns)"
    assert (end["steps"], end["evaluations"], end["best_speedup"]) == (2, 0, None)
    assert end["scripted"] == "SCRIPTED worker: fixed replies, not a model"
    assert Path(end["dir"]) == runs / "r1"
    assert "already ended" in result.stderr


def test_fork_list_json_is_the_decision_points(ended_run):
    _, runs = ended_run
    result = invoke("fork", "r1", "--runs-dir", str(runs), "--list", "--json")
    assert result.exit_code == 0, result.stderr
    points = json.loads(result.stdout)
    assert [(p["step"], p["decision_point"]) for p in points] == [(1, "done")]
    assert set(points[0]) == {"step", "decision_point", "detail", "asked"}


def test_eval_json_is_a_list_of_reports_and_its_tables_go_to_stderr():
    kernel = FIXTURES / "faster.cpp"
    result = invoke("eval", str(kernel), "--arch", "cpu", "--task", "rmsnorm_cpu", "--scenarios", "rows1_cols4096",
                    "--seed", "1", "--json")
    assert result.exit_code == 0, result.stderr
    report, = json.loads(result.stdout)
    assert report["kernel"] == str(kernel) and report["correct"] is True
    assert [s["scenario"] for s in report["scenarios"]] == ["rows1_cols4096"]
    assert "CORRECT" in result.stderr and "CORRECT" not in result.stdout


def test_runs_lists_the_runs_on_stdout(ended_run):
    _, runs = ended_run
    result = invoke("runs", "--runs-dir", str(runs))
    assert result.exit_code == 0, result.stderr
    assert "r1" in result.stdout and "r1" not in result.stderr
