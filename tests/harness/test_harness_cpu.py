"""The judge on the CPU task: real builds, real child processes, real timing — no GPU needed."""

import json
import sys

import pytest
from faults import write_fault

from kernelseek.harness import judge

TASK, SEED = "rmsnorm_cpu", "kernels/seeds/rmsnorm_cpu.cpp"


@pytest.mark.slow
def test_seed_is_correct_and_timed(tmp_path):
    out = tmp_path / "report.json"
    verdict = judge(TASK, SEED, "cpu", quick=True, out=out, seed=1)
    assert verdict.correct, verdict.reason
    assert verdict.speedup and verdict.speedup > 0
    report = json.loads(out.read_text())
    assert report["correct"] is True and report["arch"] == "cpu" and report["baseline"] == "torch"
    for scenario in report["scenarios"]:
        assert scenario["correct"] and scenario["timing"] == "thread CPU time"
        assert scenario["time_s"]["candidate"] > 0 and scenario["time_s"]["torch"] > 0
        assert abs(scenario["speedup"] - scenario["time_s"]["torch"] / scenario["time_s"]["candidate"]) < 1e-9
        assert scenario["check"]["errors"]["y_max"] <= 4 * scenario["check"]["allowed"]["y_max"] + 1e-5
    assert report["build"]["sha256"] and report["device"]["arch"] == "cpu"
    assert set(report["groups"]) == {"cols"}


@pytest.mark.slow
def test_every_fault_fails_with_its_reason_and_the_judge_survives(tmp_path):
    kinds = ["hang", "crash", "nan", "partial", "pointer_cache", "wrong", "clobber", "overrun", "underrun",
             "forge_stdout", "flood"]
    for kind in kinds:
        path, expected = write_fault(kind, tmp_path, cpu=True)
        verdict = judge(TASK, path, "cpu", scenarios="rows64_cols1024", seed=3, timeout_s=4)
        assert not verdict.correct, kind
        assert verdict.speedup is None
        reason = verdict.scenarios[0]["reason"]
        assert expected in reason, (kind, reason)


@pytest.mark.slow
def test_a_crash_costs_one_scenario_and_the_rest_still_run(tmp_path):
    path = tmp_path / "crash_on_one_shape.cpp"
    seed = open(SEED).read().replace("ks_rmsnorm", "seed_impl")
    path.write_text(seed + '\nextern "C" int ks_rmsnorm(const float* x, const float* w, float* y, int rows, int cols,'
                    ' float eps) {\n  if (rows == 64) *(volatile int*)nullptr = 1;\n'
                    '  return seed_impl(x, w, y, rows, cols, eps);\n}\n')
    verdict = judge(TASK, path, "cpu", quick=True, seed=4)
    by_name = {s["scenario"]: s for s in verdict.scenarios}
    assert "crash" in by_name["rows64_cols1024"]["reason"]
    assert by_name["rows1_cols4096"]["correct"] and by_name["rows256_cols4096"]["correct"]
    assert not verdict.correct and "1 of 3 scenarios failed" in verdict.reason


def test_a_compile_error_is_a_verdict_not_an_exception(tmp_path):
    path = tmp_path / "broken.cpp"
    path.write_text('extern "C" int ks_rmsnorm( { }\n')
    verdict = judge(TASK, path, "cpu", quick=True)
    assert not verdict.correct and verdict.reason.startswith("build failed") and "broken.cpp" in verdict.reason


def test_a_missing_entry_point_is_named(tmp_path):
    path = tmp_path / "misnamed.cpp"
    path.write_text(open(SEED).read().replace("ks_rmsnorm", "ks_rmsnrom"))
    verdict = judge(TASK, path, "cpu", quick=True)
    assert not verdict.correct and "does not export ks_rmsnorm" in verdict.reason


def test_any_failure_while_judging_is_a_verdict_not_an_exception(monkeypatch):
    judge_module = sys.modules["kernelseek.harness.judge"]  # the package's `judge` is the function

    def broken(*args, **kwargs):
        raise KeyError("time_s")

    monkeypatch.setattr(judge_module, "run_scenarios", broken)
    verdict = judge(TASK, SEED, "cpu", quick=True)
    assert not verdict.correct and verdict.speedup is None
    assert "harness error while judging: KeyError" in verdict.reason


def test_out_is_checked_before_anything_is_judged(tmp_path, monkeypatch):
    import pytest

    from kernelseek.harness import TaskError

    judge_module = sys.modules["kernelseek.harness.judge"]

    monkeypatch.setattr(judge_module, "build_kernel", lambda *a, **k: pytest.fail("judged before --out was checked"))
    with pytest.raises(TaskError, match="is a folder"):
        judge(TASK, SEED, "cpu", quick=True, out=tmp_path)
    (tmp_path / "file").write_text("")
    with pytest.raises(TaskError, match="not a writable folder"):
        judge(TASK, SEED, "cpu", quick=True, out=tmp_path / "file" / "r.json")
