"""A scripted session on the CPU task, through the real CLI, graph, tools, harness and checkpointer:
three candidates (wrong, slower, faster), a question from the bank when the worker says it is done,
and the run ends at its target.

The run starts from tests/fixtures/loop/start.cpp (correct, about 0.25x torch) rather than the seed, so
the margins are far above the CPU timing noise of a busy CI machine: slower is about a quarter of it,
faster about ten times it, and the target is twice it."""

from __future__ import annotations

import json
import re

import pytest
from loop_support import (
    EVALUATE,
    FIXTURES,
    bank_copy,
    events,
    graph_values,
    invoke,
    script,
    shell,
    source,
    write,
)

from kernelseek.commands.trace import describe

KERNEL = "start.cpp"  # the workspace's candidate file: the starting kernel's name


@pytest.mark.slow
def test_scripted_session_on_the_cpu_task(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSEEK_BANK", str(bank_copy(tmp_path)))
    model = script(tmp_path / "script.json", [
        {"content": "Let me read the kernel first.", "tool_calls": [{"name": "read_file", "arguments": {"path": KERNEL}}]},
        {"content": "Accumulate in float, one reciprocal per row.", "tool_calls": [write("wrong", KERNEL), EVALUATE]},
        {"content": "I forgot the weight. Recompute the sum to be safe.", "tool_calls": [write("slower", KERNEL), EVALUATE]},
        {"content": "I have finished: the kernel is correct."},
        {"content": "Restructure: one pass for the sum, one for the output.",
         "tool_calls": [shell("g++ -O3 -march=native -shared -fPIC -o /dev/null " + KERNEL), write("faster", KERNEL), EVALUATE]},
    ])
    runs = tmp_path / "runs"
    result = invoke(["run", "rmsnorm_cpu", "--kernel", str(FIXTURES / "start.cpp"), "--model", model,
                     "--mode", "auto", "--target-gain", "2", "--bank-stats", str(tmp_path / "stats.json"),
                     "--runs-dir", str(runs), "--run-id", "scripted"])
    assert result.exit_code == 0, result.output
    assert "target gain 2x over the starting kernel met" in " ".join(result.output.split())
    run = runs / "scripted"

    evaluations = events(run, "evaluation")
    by_candidate = {}
    for e in evaluations:
        by_candidate.setdefault(e["candidate"], []).append(e)
    assert sorted(by_candidate) == [0, 1, 2, 3]  # the start, then wrong, slower, faster
    start, wrong, slower, faster = (by_candidate[n] for n in range(4))
    assert [e["judgement"] for e in start] == ["quick", "full"] and start[-1]["best"]
    assert [e["judgement"] for e in wrong] == ["quick"] and not wrong[0]["correct"] and not wrong[0]["best"]
    assert "error" in wrong[0]["reason"]
    # the slower one is fully judged only if its quick reading is within the measured noise of the start's
    # (kernelseek.agent.gate): on a quiet machine it is not; either way it never becomes the best
    assert [e["judgement"] for e in slower][:1] == ["quick"] and slower[0]["correct"]
    assert not any(e["best"] for e in slower)
    assert slower[0]["speedup"] < start[0]["speedup"]
    assert [e["judgement"] for e in faster] == ["quick", "full"] and faster[1]["correct"] and faster[1]["best"]
    assert faster[1]["speedup"] >= 2 * start[1]["speedup"]
    assert [e["parent"] for e in (wrong[0], slower[0], faster[0])] == [0, 1, 2]  # lineage of the workspace
    for e in evaluations:  # each really compiled, checked and timed: the harness's own report is kept
        report = json.loads((run / e["report"]).read_text())
        assert report["judgement"] == e["judgement"] and report["correct"] == e["correct"]
        assert (run / e["path"]).read_text() == source(["start", "wrong", "slower", "faster"][e["candidate"]])

    decision, = events(run, "decision_point")
    question, = events(run, "question")
    assert decision["kind"] == "done" and decision["step"] == 4 and "finished" in decision["worker_words"]
    assert question["source"] == "bank" and question["bank_id"] and question["decision_point"] == "done"
    assert question["question_kind"] in ("layer_shift", "reject_limit", "inform", "other")

    end, = events(run, "run_end")
    assert end["reason"].startswith("target gain") and end["steps"] == 5
    assert (run / "best" / "kernel.cpp").read_text() == source("faster")
    assert (run / "workspace" / KERNEL).read_text() == source("faster")
    assert json.loads((run / "best" / "best.json").read_text())["candidate"] == 3
    calls = events(run, "model_call")
    assert [e["step"] for e in calls] == [1, 2, 3, 4, 5] and all(e["cost_usd"] is None for e in calls)
    # the worker saw the harness's reports as the results of its evaluate calls
    shown = invoke(["trace", "show", "scripted", "--runs-dir", str(runs)])
    assert shown.exit_code == 0 and "INCORRECT" in shown.output and "→ best" in shown.output
    start, = events(run, "run_start")
    first = events(run, "evaluation")[0]
    assert describe(start).endswith("target gain 2x") and "(the starting kernel)" in describe(first)
    assert_holdout_kept_from_the_worker(run, evaluations)
    # the bank learned from the run, in the statistics file named for it, under the run's UUID
    recorded = json.loads((tmp_path / "stats.json").read_text())["runs"]
    assert list(recorded) == [json.loads((run / "config.json").read_text())["run_uuid"]]
    assert recorded[list(recorded)[0]]["run"] == "scripted"
    assert not (tmp_path / "bank" / "stats.json").exists()


def worker_visible_text(run) -> str:
    """Everything the worker was given: its conversation (the state's messages, with every harness report
    and tool reply) and its workspace."""
    values = graph_values(run)
    workspace = "".join(p.read_text(errors="replace") for p in sorted((run / "workspace").rglob("*")) if p.is_file())
    return json.dumps(values.get("messages")) + values.get("last_report", "") + workspace


def assert_holdout_kept_from_the_worker(run, evaluations):
    """Every full judgement drew a hold-out with a fresh seed, recorded outside the workspace; the
    worker saw its count, correctness and geomean, never its seed or its shapes."""
    fulls = [e for e in evaluations if e["judgement"] == "full"]
    assert len(fulls) in (2, 3) and all(e["holdout"]["n"] == 3 and e["holdout"]["correct"] == 3 for e in fulls)
    assert not any("holdout" in e for e in evaluations if e["judgement"] == "quick")
    seeds = [e["holdout"]["seed"] for e in fulls]
    assert len(set(seeds)) == len(fulls)  # fresh for each full judgement
    names = []
    for e in fulls:
        report = json.loads((run / e["report"]).read_text())
        assert report["holdout"]["seed"] == e["holdout"]["seed"] and report["speedup"] == e["speedup"]
        assert report["holdout"]["speedup"] == e["holdout"]["speedup"] > 0
        names += [s["scenario"] for s in report["scenarios"] if s.get("holdout")]
    assert len(names) == 3 * len(fulls)
    seen = worker_visible_text(run)
    assert "hold-out (3 unseen scenarios, drawn fresh): 3/3 correct" in seen
    for seed in seeds:
        assert not re.search(rf"(?<![\d.]){seed}(?![\d.])", seen), seed
    assert "holdout_s" not in seen and not any(name in seen for name in names)
