"""Every output of a run whose worker replays a script says SCRIPTED plainly (its end line, its trace's first
line, its report), so a demo's numbers are never taken for a model's work; a model's run carries no label."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

from kernelseek.agent.run_summary import ended, ended_line, label
from kernelseek.commands import drive
from kernelseek.commands.trace import describe

SESSION_A = Path(__file__).parents[1] / "fixtures" / "sessions" / "session-a"
VALUES = {"end_reason": "target gain 1.5x over the starting kernel met", "best": {"speedup": 2.5, "candidate": 2},
          "step": 3, "evals": 2, "cost_usd": 0.0}


def config(model: str | None, command: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(model=model, worker_command=command)


def test_a_scripted_runs_end_line_says_scripted_and_a_models_does_not():
    scripted = ended_line("first", VALUES, Path("/runs/first/best"), config("scripted/evals/examples/first_run.yaml"))
    assert scripted.startswith("run first ended (SCRIPTED worker: fixed replies, not a model): target gain 1.5x")
    assert "best 2.500x (candidate 2, /runs/first/best) · 3 steps · 2 evaluations · $0.0000" in scripted
    head, _ = ended("first", VALUES, Path("/runs/first/best"), config("scripted/s.yaml"))  # the part shown in bold
    assert head == "run first ended (SCRIPTED worker: fixed replies, not a model)"
    model = ended_line("first", VALUES, Path("/runs/first/best"), config("anthropic/claude-sonnet-4-5"))
    assert model.startswith("run first ended: target gain") and "SCRIPTED" not in model
    assert label(config(None, "claude -p {prompt}")) is None


def test_the_terminal_summary_of_run_resume_and_fork_carries_the_label(tmp_path):
    run = SimpleNamespace(id="first", dir=tmp_path / "first", config=config("scripted/s.yaml"))
    with drive.result.capture() as shown:  # the end line: stdout
        drive.finish(run, VALUES)
    assert "run first ended (SCRIPTED worker: fixed replies, not a model):" in " ".join(shown.get().split())
    run.config = config("openai/gpt-5")
    with drive.result.capture() as shown:  # the end line: stdout
        drive.finish(run, VALUES)
    assert "run first ended: target gain" in " ".join(shown.get().split()) and "SCRIPTED" not in shown.get()
    assert drive.summary(run, VALUES)["scripted"] is None  # --json says it too
    run.config = config("scripted/s.yaml")
    assert drive.summary(run, VALUES)["scripted"] == "SCRIPTED worker: fixed replies, not a model"


def test_trace_show_names_a_scripted_worker_in_the_runs_first_line():
    start = {"type": "run_start", "task": "rmsnorm_cpu", "kernel": "rmsnorm_cpu.cpp", "arch": "cpu", "mode": "auto",
             "worker": "scripted/evals/examples/first_run.yaml", "target_gain": 1.5}
    assert "worker scripted/evals/examples/first_run.yaml (SCRIPTED worker: fixed replies, not a model)" in describe(start)
    assert "SCRIPTED" not in describe({**start, "worker": "anthropic/claude-sonnet-4-5"})


def test_the_report_of_a_scripted_run_says_so_at_its_top_and_a_models_does_not(tmp_path):
    from kernelseek.analysis.report import write_report

    scripted = write_report(SESSION_A, tmp_path / "scripted").read_text()
    top = scripted[scripted.index("<h1>"):scripted.index('<table class="summary">')]
    assert 'data-worker="scripted"' in top and "<b>SCRIPTED worker: fixed replies, not a model</b>" in top
    assert "scripted/worker (SCRIPTED worker: fixed replies, not a model)" in scripted  # the worker fact
    shutil.copytree(SESSION_A, tmp_path / "model-run")
    trace = tmp_path / "model-run" / "trace.jsonl"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    events[0]["worker"] = "anthropic/claude-sonnet-4-5"
    trace.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert "SCRIPTED" not in write_report(tmp_path / "model-run", tmp_path / "model").read_text()


def test_kernelseek_runs_labels_a_scripted_run_and_not_a_models(tmp_path):
    from kernelseek.commands.runs import _label

    run = tmp_path / "session-a"
    shutil.copytree(SESSION_A, run)
    node = SimpleNamespace(dir=run, fork=None, children=[])
    assert _label(node).endswith("[yellow]SCRIPTED worker: fixed replies, not a model[/]")
    trace = run / "trace.jsonl"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    events[0]["worker"] = "anthropic/claude-sonnet-4-5"
    trace.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert "SCRIPTED" not in _label(node) and _label(node).startswith("[bold]session-a[/] (ended: ")
