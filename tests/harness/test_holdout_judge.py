"""The judge's hold-out on the CPU task: drawn after the chosen scenarios, reported apart, able to fail
a kernel that is right on the suite; and `kernelseek eval --holdout`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kernelseek.harness import TaskError, judge, load_task
from kernelseek.harness.judge import geomean

TASK, SEED = "rmsnorm_cpu", "kernels/seeds/rmsnorm_cpu.cpp"


def suite_cols() -> set[int]:
    return {s.params["cols"] for s in load_task(TASK).scenarios("cpu")}


def test_the_cpu_sampler_is_deterministic_and_within_the_suites_sizes():
    task = load_task(TASK)
    a, b = task.holdout("cpu", 20, 4), task.holdout("cpu", 20, 4)
    assert a == b and a != task.holdout("cpu", 20, 5)
    largest = max(s.params["rows"] * s.params["cols"] for s in task.scenarios("cpu"))
    assert all(1 <= s.params["rows"] * s.params["cols"] <= largest for s in a)
    assert len({s.name for s in a}) == 20 and all(s.name.startswith("holdout_s4_") for s in a)
    assert {s.group for s in a} <= {"holdout_rows", "holdout_cols"}
    assert len({s.params["cols"] for s in a}) > 15


@pytest.mark.slow
def test_holdout_is_reported_apart_and_leaves_the_suite_speedup_alone(tmp_path):
    out = tmp_path / "r.json"
    verdict = judge(TASK, SEED, "cpu", quick=True, scenarios="rows64_cols1024", seed=2, holdout=3, holdout_seed=90417,
                    out=out)
    assert verdict.correct, verdict.reason
    suite, held = verdict.suite_results(), verdict.holdout_results()
    assert [s["scenario"] for s in suite] == ["rows64_cols1024"]
    assert [s["scenario"] for s in held] == [s.name for s in load_task(TASK).holdout("cpu", 3, 90417)]
    assert all(s["holdout"] is True for s in held) and not any("holdout" in s for s in suite)
    # the headline is the suite's alone, whatever the hold-out timed
    assert verdict.speedup == pytest.approx(suite[0]["speedup"])
    assert set(verdict.groups) == {"cols"} and verdict.groups["cols"]["n"] == 1
    h = verdict.holdout
    assert h["n"] == 3 and h["seed"] == 90417 and h["correct"] == 3
    assert h["speedup"] == pytest.approx(geomean([s["speedup"] for s in held]))
    assert sum(g["n"] for g in h["groups"].values()) == 3 and all(g.startswith("holdout_") for g in h["groups"])
    report = json.loads(out.read_text())
    assert report["holdout"]["seed"] == 90417 and sum(bool(s.get("holdout")) for s in report["scenarios"]) == 3
    # the summary shows the hold-out line apart; the worker's version names no shape and no seed
    text = verdict.summary()
    assert f"hold-out (3 scenarios, seed 90417): 3/3 correct, geomean {h['speedup']:.3f}x" in text
    assert "hold-out slowest: holdout_s90417_" in text and "correct on all 1 scenarios" in text
    hidden = verdict.summary(holdout_shapes=False)
    # (a seed that no other number of the report, a time or a bandwidth, could read as)
    assert "3/3 correct" in hidden and "holdout_s" not in hidden and "90417" not in hidden


@pytest.mark.slow
def test_a_kernel_wrong_only_off_the_suite_fails_on_the_holdout(tmp_path):
    cols = sorted(suite_cols())
    held = load_task(TASK).holdout("cpu", 3, 21)
    assert not {s.params["cols"] for s in held} & set(cols)
    path = tmp_path / "suite_only.cpp"
    seed_source = open(SEED).read().replace("ks_rmsnorm", "seed_impl")
    known = " && ".join(f"cols != {c}" for c in cols)
    path.write_text(seed_source + '\nextern "C" int ks_rmsnorm(const float* x, const float* w, float* y, int rows,'
                    ' int cols, float eps) {\n  int status = seed_impl(x, w, y, rows, cols, eps);\n'
                    f'  if ({known}) y[0] += 1.0f;\n  return status;\n}}\n')
    plain = judge(TASK, path, "cpu", quick=True, scenarios="rows64_cols1024", seed=3)
    assert plain.correct, plain.reason  # right on the suite...
    verdict = judge(TASK, path, "cpu", quick=True, scenarios="rows64_cols1024", seed=3, holdout=3, holdout_seed=21)
    assert not verdict.correct and verdict.speedup is None  # ... wrong on shapes it has not seen
    assert verdict.suite_results()[0]["correct"] and verdict.holdout["correct"] == 0
    assert verdict.holdout["speedup"] is None
    assert "3 of 4 scenarios failed (3 of 3 hold-out); first: holdout_s21_00_" in verdict.reason
    hidden = verdict.summary(holdout_shapes=False)
    assert "INCORRECT" in hidden and "3 hold-out scenarios failed" in hidden and "holdout_s" not in hidden
    assert "withheld" in verdict.failure_reason(shapes=False)


def test_bad_holdout_requests_are_one_sentence():
    with pytest.raises(TaskError, match="0 or more"):
        judge(TASK, SEED, "cpu", quick=True, holdout=-1)
    with pytest.raises(TaskError, match="defines no hold-out sampler"):
        from kernelseek.harness import Task

        class Bare(Task):
            name, archs = "bare", ("cpu",)

            def scenarios(self, arch):
                return load_task(TASK).scenarios(arch)

        judge(Bare(), SEED, "cpu", quick=True, holdout=2)


def kernelseek(*args):
    return subprocess.run([sys.executable, "-m", "kernelseek", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_cli_holdout_with_seed_draws_the_same_sample_and_records_it(tmp_path):
    runs = []
    for name, seeds in (("a", ["--seed", "1"]), ("b", ["--seed", "5", "--holdout-seed", "1"])):
        out = tmp_path / f"{name}.json"
        result = kernelseek("eval", SEED, "--arch", "cpu", "--quick", "--scenarios", "rows1_cols4096",
                            "--holdout", "2", *seeds, "--out", str(out))
        assert result.returncode == 0, result.stdout + result.stderr
        assert "hold-out (2 scenarios, seed 1): 2/2 correct" in " ".join(result.stdout.split())
        runs.append(json.loads(out.read_text()))
    a, b = runs  # --seed seeds the sample when --holdout-seed is absent; --holdout-seed wins when given
    assert a["holdout"]["seed"] == b["holdout"]["seed"] == 1
    names = [s["scenario"] for s in a["scenarios"] if s.get("holdout")]
    assert names == [s["scenario"] for s in b["scenarios"] if s.get("holdout")] and len(names) == 2
    assert a["command"].endswith("--holdout 2 --seed 1 --out " + str(tmp_path / "a.json"))
    assert a["speedup"] == pytest.approx(a["scenarios"][0]["speedup"])


def test_cli_negative_holdout_gets_one_sentence():
    result = kernelseek("eval", SEED, "--arch", "cpu", "--holdout", "-3")
    assert result.returncode == 2 and "--holdout -3 must be 0 or more" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.slow
def test_scenarios_lists_the_holdout_sample_a_judgement_recorded():
    result = kernelseek("scenarios", TASK, "--arch", "cpu", "--holdout", "3", "--holdout-seed", "9")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "hold-out, seed 9" in result.stderr  # the title; stdout holds the rows
    for s in load_task(TASK).holdout("cpu", 3, 9):
        assert s.name in result.stdout
