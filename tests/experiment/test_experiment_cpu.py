"""`kernelseek experiment` end to end on the CPU task, with the scripted sessions of evals/experiments/cpu_demo/:
the real CLI, graphs, tools, harness, bank and checkpoints. The process is killed (SIGKILL, its whole process
group) once its first run has finished; the same command then finishes the experiment without running that run
again, and the table and page hold the figures the runs' traces record."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from experiment_support import demo_config

from kernelseek.trace import read_trace

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "from kernelseek.cli import main; main()"]
GRAPHS = ("kernelseek", "tool_rich", "no_question")


def finished(run: Path) -> bool:
    trace = run / "trace.jsonl"
    return trace.is_file() and any(e["type"] == "run_end" for e in read_trace(trace))


@pytest.mark.slow
def test_cpu_demo_experiment_killed_then_finished(tmp_path):
    bank = tmp_path / "bank"
    shutil.copytree(ROOT / "bank", bank)  # the bank's statistics of the repository stay untouched
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "COLUMNS": "220",
           "KERNELSEEK_BANK": str(bank)}
    config, out = demo_config(tmp_path), tmp_path / "out"
    runs = {g: out / "runs" / f"{g}-r0" for g in GRAPHS}
    command = [*CLI, "experiment", str(config), "--out", str(out), "--parallel", "2" if (os.cpu_count() or 1) > 1 else "1"]

    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None and not any(finished(r) for r in runs.values()):
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the experiment and the runs it started
        proc.wait()
    done_first = [g for g, r in runs.items() if finished(r)]
    assert done_first and len(done_first) < len(GRAPHS), done_first
    kept = {g: (runs[g] / "trace.jsonl").read_bytes() for g in done_first}

    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    output = " ".join(result.stderr.split())  # progress and notes: stderr; stdout holds the table
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[0].startswith("graph\truns\tbest speedup")
    assert f"{len(done_first)} finished already ({', '.join(f'{g}-r0' for g in done_first)}: not run again)" in output
    for g in done_first:  # a finished run is not run again: its trace is byte for byte what it was
        assert (runs[g] / "trace.jsonl").read_bytes() == kept[g]

    traces = {g: read_trace(runs[g] / "trace.jsonl") for g in GRAPHS}
    for g, events in traces.items():
        assert [e["type"] for e in events].count("run_start") == 1 and [e["type"] for e in events][-1] == "run_end"
        assert len({e["key"] for e in events}) == len(events)  # no step recorded twice, resumed or not
        steps = [e["step"] for e in events if e["type"] == "model_call"]
        assert steps == list(range(1, len(steps) + 1)), (g, steps)

    # the graphs behaved differently: the tool-rich one used its tools, only the question-driven one was asked
    tools = {e["name"]: e for e in traces["tool_rich"] if e["type"] == "tool_call"}
    assert {"compiled_code", "profile", "search_docs", "lessons"} <= set(tools)
    assert "x86 instruction mix of ks_rmsnorm" in tools["compiled_code"]["result"]
    assert tools["profile"]["result"].startswith("unavailable: the profiler needs a GPU target")
    assert "notes.md" in tools["search_docs"]["result"]
    assert json.loads((runs["tool_rich"] / "lessons.json").read_text())[0]["outcome"] == "failed"
    questions = {g: [e for e in traces[g] if e["type"] == "question"] for g in GRAPHS}
    assert questions["kernelseek"] and all(q["source"] == "bank" and q["bank_id"] for q in questions["kernelseek"])
    assert not questions["tool_rich"] and not questions["no_question"]
    assert any(e["type"] == "decision_point" for e in traces["no_question"])  # reached, and only nudged
    assert not {"compiled_code", "profile"} & {e["name"] for e in traces["no_question"] if e["type"] == "tool_call"}

    # the table and the page hold what the traces record
    results = json.loads((out / "results.json").read_text())
    table, page = (out / "table.md").read_text(), (out / "index.html").read_text()
    assert results["missing"] == [] and [g["graph"] for g in results["graphs"]] == list(GRAPHS)
    assert all(g["workers"] == "scripted" for g in results["graphs"])  # the table names the scripted worker
    assert "| plateau step |" in table and table.count("| scripted |") == len(GRAPHS)
    for g, events in traces.items():
        end = events[-1]
        evaluations = [e for e in events if e["type"] == "evaluation" and e["candidate"] != 0]
        calls = [e for e in events if e["type"] == "model_call"]
        expected = {
            "best_speedup": end["best_speedup"], "steps": end["steps"],
            "evaluations": len({e["candidate"] for e in evaluations}),
            "wrong": len({e["candidate"] for e in evaluations if not e["correct"]}),
            "tool_calls": sum(len(e["tool_calls"]) for e in calls), "questions": len(questions[g]),
        }
        run = next(r for r in results["runs"] if r["graph"] == g)
        assert {k: run[k] for k in expected} == expected, g
        # the hardware its judgements recorded, named per run in the provenance
        assert run["hardware"].startswith("CPU ") and results["provenance"]["judged_on"][run["run_id"]] == run["hardware"]
        summary = next(s for s in results["graphs"] if s["graph"] == g)
        assert summary["best_speedup_median"] == end["best_speedup"] and summary["finished"] == 1
        best = f"{end['best_speedup']:.3f}x [{end['best_speedup']:.3f}–{end['best_speedup']:.3f}]"
        header = next(line for line in table.splitlines() if line.startswith("| graph |"))
        row = next(line for line in table.splitlines() if line.startswith(f"| {g} |"))
        cells = dict(zip((c.strip() for c in header.strip("|").split("|")),
                         (c.strip() for c in row.strip("|").split("|")), strict=True))
        assert list(cells.values())[:3] == [g, "1/1", best] and cells["worker"] == "scripted"
        assert [cells[c] for c in ("evaluations", "wrong", "tool calls", "questions", "steps")] == \
            [str(expected[k]) for k in ("evaluations", "wrong", "tool_calls", "questions", "steps")]
        assert f"<td>{best}</td>" in page and f"<td>{g}-r0</td>" in page
    start = next(e["speedup"] for e in traces["kernelseek"] if e["type"] == "evaluation" and e["best"] and e["candidate"] == 0)
    gains = [e for e in traces["kernelseek"] if e["type"] == "evaluation" and e["best"] and e["candidate"] != 0]
    reach = next(r for r in results["runs"] if r["graph"] == "kernelseek")["reach"]["1.2"]
    if gains and gains[-1]["speedup"] >= 1.2 * start:  # the faster kernel reached the level (timing permitting)
        assert reach["step"] == next(e["step"] for e in gains if e["speedup"] >= 1.2 * start)
    else:
        assert reach is None
    assert 'src="data:image/png;base64,' in page and (out / "curves.png").stat().st_size > 5000


def test_a_run_counts_as_finished_only_with_its_end_in_the_trace(tmp_path):
    from kernelseek.experiment.runner import result_of
    from kernelseek.trace import TraceWriter

    trace = TraceWriter(tmp_path / "trace.jsonl")
    assert result_of(0, tmp_path, "exit status 0") == (
        f"failed: its process ended with no end recorded in {tmp_path / 'trace.jsonl'}; run the same command "
        "again to continue it")
    assert result_of(3, tmp_path, "it stopped at a question") == "failed: it stopped at a question"
    trace.write("run_end", step=1, key="run_end", reason="target met", best_speedup=1.2, steps=1, cost_usd=0.0)
    assert result_of(0, tmp_path, "exit status 0") == "finished"
    assert result_of(1, tmp_path, "it crashed") == "failed: it crashed"
