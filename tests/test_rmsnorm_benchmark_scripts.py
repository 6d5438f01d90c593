"""The add_rmsnorm benchmark scripts, as far as a machine without a GPU can take them: the summary reads a
judgement's JSON against the issue's bars, and the launch-floor probe's default scenarios are the ones its
recorded table timed."""

from __future__ import annotations

import json
import sys

from loop_support import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import rmsnorm_summary  # noqa: E402


def test_the_summary_reports_speedups_and_the_floor_on_rows_of_4096_and_more(tmp_path):
    def scenario(name, group, speedup, fraction):
        return {"scenario": name, "group": group, "correct": True, "speedup": speedup,
                "speedup_beside": {"eager": 2 * speedup}, "floor_fraction": {"candidate": fraction, "torch_compile": 0.5}}

    report = {"kernel": "k.cu", "sha256": "abcdef0123", "judgement": "full", "correct": True, "reason": None,
              "arch": "sm90", "speedup": 1.3, "groups": {"prefill": {"n": 2, "correct": 2, "speedup": 1.3,
                                                                    "floor_fraction": 0.9}},
              "floor": {"copy_bandwidth_Bps": 4.2e12, "fraction": 0.7, "holdout_fraction": None},
              "scenarios": [scenario("decode_h4096_r16", "decode", 1.1, 0.1),
                            scenario("prefill_h4096_r4096", "prefill", 1.2, 0.81),
                            scenario("prefill_h8192_r65536", "prefill", 1.5, 0.9)]}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    text = "\n".join(rmsnorm_summary.summarize(path))
    assert "CORRECT" in text and "3/3 correct" in text and "4.20 TB/s" in text
    assert "rows >= 4096 (2 scenarios): floor fraction geomean 0.854, min 0.810" in text
    assert "torch.compile's own floor fraction on rows >= 4096: 0.500" in text


def test_the_headroom_says_what_the_latency_bound_scenarios_would_need_for_the_bar():
    def scenario(name, speedup, compile_fraction, us=None):
        found = {"scenario": name, "speedup": speedup, "floor_fraction": {"candidate": 0.1, "torch_compile": compile_fraction}}
        return found | ({"time_s": {"candidate": us * 1e-6, "torch_compile": us * speedup * 1e-6}} if us else {})

    suite = [scenario("prefill_a", 1.0, 0.8), scenario("prefill_b", 1.0, 0.8),
             scenario("decode_a", 1.1, 0.01, 1.6), scenario("decode_b", 0.9, 0.02, 2.0)]
    text = "\n".join(rmsnorm_summary.headroom(suite))
    # two at most 1.25x (1 / 0.8); 1.2^4 / 1.25^2 = 1.327 over the other two: at least 1.152x each
    assert "bandwidth-bound (2) 1.000x, at the full copy bandwidth at most 1.250x" in text
    assert "latency-bound (2) 0.995x; 1.2x over the suite needs at least 1.152x here" in text
    assert text.index("decode_a") < text.index("decode_b")  # the shortest for torch.compile first (1.76 us, 1.80)
    assert "1.60 us against torch.compile's 1.76 (1.100x)" in text


def test_the_launch_floor_probe_times_the_suites_latency_bound_scenarios():
    """Its default scenarios are the suite's and exactly those torch.compile ran below half the copy floor
    in the judgement its docstring names, and the recorded table on the H100 timed every one of them."""
    import rmsnorm_launch_floor

    from kernelseek.harness import load_task
    names = rmsnorm_launch_floor.default_scenarios(ROOT / rmsnorm_launch_floor.JUDGEMENT)
    suite = {s.name for s in load_task("add_rmsnorm").scenarios("sm90")}
    report = json.loads((ROOT / rmsnorm_launch_floor.JUDGEMENT).read_text())
    bound = {s["scenario"] for s in report["scenarios"]
             if not s.get("holdout") and s["floor_fraction"]["torch_compile"] < 0.5}
    assert set(names) <= suite and set(names) == bound and len(names) == len(set(names)) and len(names) >= 15
    timed = rmsnorm_summary.launch_floor_table((ROOT / "benchmarks" / "results" / "add_rmsnorm-launch-floor-h100.txt").read_text())
    assert bound <= set(timed)


def test_the_launch_bound_reads_the_probes_table_against_the_bar():
    table = rmsnorm_summary.launch_floor_table(
        "H: us a call\n"
        "scenario   empty   k   torch_compile   torch.compile / empty\n"
        "decode_r1   1.00   1.60   1.40   1.40x\n"
        "decode_r16   1.00   2.00   3.00   3.00x\n"
        "geomean of torch.compile over the empty kernel: 2.05x\n")
    assert table == {"decode_r1": {"empty": 1.0, "k": 1.6, "torch_compile": 1.4},
                     "decode_r16": {"empty": 1.0, "k": 2.0, "torch_compile": 3.0}}

    def scenario(name, compile_us, floor_us, fraction):
        return {"scenario": name, "speedup": 1.0, "floor_s": floor_us * 1e-6, "time_s": {"torch_compile": compile_us * 1e-6},
                "floor_fraction": {"candidate": fraction, "torch_compile": fraction}}

    suite = [scenario("decode_r1", 1.4, 0.0, 0.01), scenario("decode_r16", 3.0, 0.1, 0.05),
             scenario("prefill_a", 100.0, 90.0, 0.9), scenario("prefill_b", 100.0, 90.0, 0.9)]
    text = "\n".join(rmsnorm_summary.launch_bound(suite, table, bar=1.2))
    # body: the fastest one-row time over its launch, 1.40 - 1.00; ideals 1.4 / 1.4 and 3.0 / 1.5
    assert "2 scenarios at launch + 0.40 us + their bytes would be 1.414x" in text
    # 1.2^4 / (1 x 2) = 1.0368 over the other two: sqrt(1.0368) = 1.0182 each, x their 0.900
    assert "the other 2 at 0.916 of the copy floor (torch.compile 0.900, this kernel 0.900)" in text
