"""The gate decides on measurements, not on one noisy quick reading: a faster candidate whose quick reading
comes out below the best's earlier quick reading is still fully judged and becomes the best; one whose quick
reading is clearly below (beyond the measured spread) is not fully judged.

The session drives the real CLI, graph, tools and judge on the CPU task; only the quick readings of the two
candidates are set (after the real quick judgement ran), so the outcome does not depend on the machine's
timing noise."""

from __future__ import annotations

import pytest
from loop_support import EVALUATE, FIXTURES, events, invoke, script, write

from kernelseek.agent import gate, harness_node

KERNEL = "start.cpp"


@pytest.mark.slow
def test_a_faster_candidate_with_a_low_quick_reading_still_becomes_the_best(tmp_path, monkeypatch):
    real = harness_node._judge
    quick_of_start: dict[str, float] = {}

    def judged(run, path, n, quick):  # noqa: ANN001, ANN202
        result = real(run, path, n, quick)
        if quick and n == 0:
            quick_of_start["speedup"] = result["speedup"]
        elif quick and n == 1:  # slower.cpp: reads at 0.3 of the best's quick speedup, clearly slower
            result["speedup"], result["noise"] = quick_of_start["speedup"] * 0.3, 0.02
        elif quick and n == 2:  # faster.cpp (about ten times the start): reads 1% below the best's quick speedup
            result["speedup"], result["noise"] = quick_of_start["speedup"] * 0.99, 0.02
        return result

    monkeypatch.setattr(harness_node, "_judge", judged)
    model = script(tmp_path / "script.json", [
        {"content": "Recompute the sum.", "tool_calls": [write("slower", KERNEL), EVALUATE]},
        {"content": "Restructure the loops.", "tool_calls": [write("faster", KERNEL), EVALUATE]},
    ])
    runs = tmp_path / "runs"
    result = invoke(["run", "rmsnorm_cpu", "--kernel", str(FIXTURES / "start.cpp"), "--model", model,
                     "--mode", "none", "--target-gain", "2", "--max-steps", "3",
                     "--runs-dir", str(runs), "--run-id", "gate"])
    assert result.exit_code == 0, result.output
    run = runs / "gate"
    by_candidate: dict[int, list[dict]] = {}
    for e in events(run, "evaluation"):
        by_candidate.setdefault(e["candidate"], []).append(e)
    start, slower, faster = (by_candidate[n] for n in range(3))
    assert [e["judgement"] for e in slower] == ["quick"] and slower[0]["correct"] and not slower[0]["best"]
    assert faster[0]["speedup"] < start[0]["speedup"]  # its quick reading is below the best's
    assert [e["judgement"] for e in faster] == ["quick", "full"] and faster[1]["best"]
    assert faster[1]["speedup"] > start[1]["speedup"]  # chosen on the full judgement's suite speedup
    assert faster[1]["holdout"]["n"] == 3  # the full judgement still carries its hold-out
    assert "target gain 2x over the starting kernel met" in " ".join(result.output.split())
    assert (run / "best" / "kernel.cpp").read_text() == (FIXTURES / "faster.cpp").read_text()


def test_the_band_comes_from_the_recorded_spreads():
    scenarios = [{"speedup": 2.0, "spread": {"candidate": 0.1, "torch": 0.2}},
                 {"speedup": 2.1, "spread": {"candidate": 0.05, "torch": 0.05}},
                 {"speedup": 1.9, "spread": {"candidate": 0.3, "torch": 0.1}},
                 {"speedup": None, "correct": False}]
    assert gate.judgement_noise(scenarios) == 0.3
    assert gate.judgement_noise([{"speedup": 1.0}]) is None
    assert gate.band(None, None) == gate.MIN_BAND and gate.band(0.4, 0.4) == gate.MAX_BAND
    best = {"quick_speedup": 3.01, "quick_noise": 0.15}
    assert not gate.clearly_slower({"speedup": 2.98, "noise": 0.02}, best)  # the 3.6x candidate
    assert not gate.clearly_slower({"speedup": 2.60, "noise": 0.05}, best)  # within the 20% band
    assert gate.clearly_slower({"speedup": 2.30, "noise": 0.05}, best)
    assert not gate.clearly_slower({"speedup": 0.1}, None)  # no best yet: always fully judged
