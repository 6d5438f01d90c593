"""The memory floor: a task that states the bytes a scenario moves gets, per scenario, the floor
(bytes / the copy bandwidth measured in the judging child before the candidate is loaded) and the
fraction of it each implementation reached; a task that states none gets no floor. On the CPU task."""

from __future__ import annotations

import math
import textwrap

import pytest
from test_judge_process import GOOD, READY, follow

from kernelseek.harness import floors, judge, load_task
from kernelseek.harness.judge import geomean
from kernelseek.harness.records import derive_floor

TASK = "rmsnorm_cpu"
SEED = "kernels/seeds/rmsnorm_cpu.cpp"


@pytest.mark.slow
def test_the_judge_reports_the_fraction_of_the_floor_per_scenario_group_and_suite(tmp_path):
    verdict = judge(TASK, SEED, "cpu", quick=True, seed=2, beside=False)
    assert verdict.correct, verdict.reason
    task = load_task(TASK)
    bandwidth = verdict.floor["copy_bandwidth_Bps"]
    assert 1e8 < bandwidth < 1e13  # a plausible copy bandwidth of one CPU thread, bytes read + written
    fractions = []
    for result in verdict.scenarios:
        scenario = task.find("cpu", result["scenario"])
        assert result["bytes_moved"] == task.bytes_moved(scenario) == 4.0 * (2 * scenario.params["rows"]
                                                                          * scenario.params["cols"] + scenario.params["cols"])
        assert result["floor_s"] == pytest.approx(result["bytes_moved"] / bandwidth)
        for name, t in result["time_s"].items():
            assert result["floor_fraction"][name] == pytest.approx(result["floor_s"] / t)
        fractions.append(result["floor_fraction"]["candidate"])
    assert verdict.floor["fraction"] == pytest.approx(geomean(fractions))
    assert all(0 < f < 5 for f in fractions)  # a time at the floor is a fraction of 1; far above is a bug
    assert verdict.groups["cols"]["floor_fraction"] == pytest.approx(geomean(fractions))
    assert "memory floor (bytes moved / copy bandwidth" in verdict.summary()
    assert "of the memory floor" in verdict.summary()


@pytest.mark.slow
def test_a_task_that_states_no_floor_gets_none(tmp_path):
    folder = tmp_path / "nofloor"
    folder.mkdir()
    (folder / "task.py").write_text(textwrap.dedent("""
        from kernelseek.harness import load_task

        class NoFloor(type(load_task("rmsnorm_cpu"))):
            def bytes_moved(self, scenario):
                return None

        TASK = NoFloor()
    """))
    verdict = judge(folder, SEED, "cpu", scenarios="rows1_cols4096", seed=2, beside=False)
    assert verdict.correct, verdict.reason
    assert verdict.floor is None and "floor_s" not in verdict.scenarios[0]
    assert "memory floor" not in verdict.summary()


def test_a_ready_record_with_a_bandwidth_that_is_not_a_positive_number_is_refused():
    for bad in (0, -1.0, float("nan"), "fast"):
        outcome, _, seen = follow([{**READY, "copy_bandwidth_Bps": bad}, {"event": "start", "scenario": "a"}, GOOD])
        assert outcome["how"] == "invalid" and "copy_bandwidth_Bps" in outcome["why"] and seen == []
    outcome, _, seen = follow([{**READY, "copy_bandwidth_Bps": 4e12}, {"event": "start", "scenario": "a"}, GOOD,
                               {"event": "done"}])
    assert outcome["how"] == "done" and seen


def test_the_floor_is_derived_only_for_a_correct_timed_result():
    result = derive_floor({**GOOD, "time_s": {"candidate": 2e-6, "torch": 4e-6}}, 8e6, 4e12)
    assert result["floor_s"] == pytest.approx(2e-6)
    assert result["floor_fraction"] == pytest.approx({"candidate": 1.0, "torch": 0.5})
    assert "floor_s" not in derive_floor({"correct": False, "reason": "wrong"}, 8e6, 4e12)
    assert "floor_s" not in derive_floor(dict(GOOD), None, 4e12)
    assert "floor_s" not in derive_floor(dict(GOOD), 8e6, None)
    assert math.isfinite(derive_floor(dict(GOOD), 1.0, 1.0)["floor_fraction"]["candidate"])


@pytest.mark.parametrize("time_s, lag_s, invalid", [
    (100e-6, 5e-6, False),  # an idle device answers a synchronize within microseconds
    (10e-6, 40e-6, False),  # host jitter on a tiny call stays under the absolute allowance
    (100e-6, 45e-6, False),
    (10e-6, 90e-6, True),  # a trigger of 10 us whose work runs on for 90 us on a stream of its own
    (400e-6, 250e-6, True),
])
def test_work_that_outlives_the_timed_call_is_an_invalid_timing(time_s, lag_s, invalid):
    why = floors.outlived(time_s, lag_s)
    assert (why is not None) == invalid
    if invalid:
        assert why.startswith("invalid timing: the device went on working") and "outside the timed stream" in why


@pytest.mark.parametrize("time_s, lag_s, host_lag_s, invalid", [
    # the 56 us an honest kernel showed after a 106 us decode call on an H100: where the host was as late
    # after the baseline's calls, its slowness is not the candidate's
    (106e-6, 56e-6, 54e-6, False),
    (106e-6, 56e-6, 2e-6, True),  # the same lag beside a prompt host: work ran on after the call
    (10e-6, 150e-6, 60e-6, True),  # a side-stream kernel's lag on top of a slow host's still fails
    (100e-6, 45e-6, -1e-6, False),  # a baseline's lag is never a credit below zero
])
def test_the_hosts_own_lag_beside_the_baseline_is_not_the_candidates(time_s, lag_s, host_lag_s, invalid):
    why = floors.outlived(time_s, lag_s, host_lag_s)
    assert (why is not None) == invalid
    if invalid and host_lag_s > 0:
        assert "after the baseline's" in why
