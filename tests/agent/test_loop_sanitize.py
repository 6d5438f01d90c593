"""The loop's sanitizer gate: a candidate that would become the best runs under the sanitizer first, and a
finding keeps it from becoming the best. The session drives the real CLI, graph, tools and judge on the CPU
task; the gate is switched on and its verdicts come from compute-sanitizer's recorded outputs
(tests/fixtures/sanitizer/) through the real parser and verdict code, since the CPU has no sanitizer."""

from __future__ import annotations

from pathlib import Path

import pytest
from loop_support import EVALUATE, FIXTURES, events, graph_values, invoke, script, source
from sanitizer_support import recorded_report

from kernelseek.agent import harness_node
from kernelseek.analysis.report import write_report
from kernelseek.settings import Configuration

KERNEL = "start.cpp"
RACY = {"racecheck": "racecheck-smem_race.log"}


def _conversation(run: Path) -> list[dict]:
    return graph_values(run)["messages"]


@pytest.mark.slow
def test_a_racy_candidate_does_not_become_the_best(tmp_path, monkeypatch):
    asked: list[int] = []

    def recorded_gate(run, path, n):  # noqa: ANN001, ANN202 - the stubbed verdict source
        asked.append(n)
        logs = RACY if n == 1 else {}
        return recorded_report(str(path), logs, kernels=["_Z12ks_smem_racev"], scenarios=["rows64_cols1024"]).to_dict()

    monkeypatch.setattr(harness_node, "sanitizer_wanted", lambda config, task=None: True)
    monkeypatch.setattr(harness_node, "_sanitize", recorded_gate)
    faster_again = source("faster") + "\n// the same kernel, its race fixed\n"
    model = script(tmp_path / "script.json", [
        {"content": "Restructure the loops.", "tool_calls": [
            {"name": "write_file", "arguments": {"path": KERNEL, "content": source("faster")}}, EVALUATE]},
        {"content": "Add the missing barrier.", "tool_calls": [
            {"name": "write_file", "arguments": {"path": KERNEL, "content": faster_again}}, EVALUATE]},
    ])
    runs = tmp_path / "runs"
    result = invoke(["run", "rmsnorm_cpu", "--kernel", str(FIXTURES / "start.cpp"), "--model", model,
                     "--mode", "none", "--target-gain", "2", "--max-steps", "3", "--runs-dir", str(runs),
                     "--run-id", "gate"])
    assert result.exit_code == 0, result.output
    run = runs / "gate"
    assert asked == [0, 1, 2]  # the start, and each candidate that would have become the best
    verdicts = {e["candidate"]: e for e in events(run, "sanitizer")}
    assert [verdicts[n]["passed"] for n in range(3)] == [True, False, True]
    racy = verdicts[1]
    assert racy["tools"]["racecheck"]["status"] == "findings" and racy["tools"]["memcheck"]["status"] == "clean"
    assert "Race reported between Write access at 1.cpp:307 and Read access at 1.cpp:308" in racy["reason"]
    fulls = {e["candidate"]: e for e in events(run, "evaluation") if e["judgement"] == "full"}
    assert fulls[1]["correct"] and not fulls[1]["best"]  # right in value, refused by the gate
    assert fulls[2]["best"] and fulls[2]["speedup"] > fulls[0]["speedup"]
    assert (run / "best" / "kernel.cpp").read_text() == faster_again
    told = [m["content"] for m in _conversation(run) if m["role"] == "tool" and "judgement of" in m["content"]]
    assert "The sanitizer gate failed, so this candidate is incorrect" in told[0] and "racecheck" in told[0]
    assert "sanitizer gate: passed" in told[1] and "new best" in told[1]

    shown = invoke(["trace", "show", str(run), "--types", "sanitizer"])
    assert "sanitizer gate FAILED" in " ".join(shown.output.split())
    page = write_report(run).read_text()
    assert "<h2>Sanitizer gate</h2>" in page and "FAILED" in page and "racecheck: findings" in page
    assert "passed (memcheck, racecheck, initcheck, synccheck clean)" in page  # the best's verdict


def test_the_gate_is_on_by_default_only_on_a_gpu_target_with_the_tool(monkeypatch, tmp_path):
    from kernelseek.harness import sanitize

    kernel = tmp_path / "k.cu"
    kernel.write_text("")
    gpu, cpu, unnamed = (Configuration(task=task, kernel=str(kernel), arch=arch, model="m") for task, arch in
                         (("flash_attn_fwd", "sm90"), ("flash_attn_fwd", "cpu"), ("no_such_task", "sm90")))
    monkeypatch.setattr(sanitize, "find_sanitizer", lambda env=None: "/opt/cuda/bin/compute-sanitizer")
    assert harness_node.sanitizer_wanted(gpu) and not harness_node.sanitizer_wanted(cpu)
    assert not harness_node.sanitizer_wanted(unnamed)  # a task without a sanitizer suite is not gated by default
    gpu.sanitize = False
    assert not harness_node.sanitizer_wanted(gpu)
    monkeypatch.setattr(sanitize, "find_sanitizer", lambda env=None: None)
    gpu.sanitize = None
    assert not harness_node.sanitizer_wanted(gpu)
    cpu.sanitize = True
    assert harness_node.sanitizer_wanted(cpu)


def test_a_gate_that_cannot_run_fails_the_candidate(monkeypatch, tmp_path):
    from kernelseek.harness import sanitize

    def broken(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise RuntimeError("the child could not start")

    class FakeRun:
        dir = tmp_path
        config = Configuration(task="t", kernel=str(tmp_path), arch="sm90", model="m")
        task = "t"  # the run's loaded Task, which the gate is handed

    monkeypatch.setattr(sanitize, "sanitize", broken)
    report = harness_node._sanitize(FakeRun(), Path("k.cu"), 3)
    assert report["passed"] is False and "could not run: RuntimeError: the child could not start" in report["reason"]
