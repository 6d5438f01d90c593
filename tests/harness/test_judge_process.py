"""The judge's processes: what a child may report, and children that never outlive the judge."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from faults import write_fault

from kernelseek.harness import runner

READY = {"event": "ready", "device": {}, "baselines": {"torch": ["available", {}]}}
GOOD = {"event": "result", "scenario": "a", "group": "g", "correct": True, "timing": "thread CPU time",
        "sets": 2, "trials": 5, "time_s": {"candidate": 1e-5, "torch": 3e-5}, "spread": {"candidate": 0.1},
        "eager_s": {"candidate": 1e-5, "torch": 3e-5},
        "check": {"errors": {"y_max": 0.0}, "allowed": {"y_max": 1e-6}, "relative_to": "torch's error"}}


class ScriptedChild:
    """Stands in for a judge child: hands out the records it was given, then exits."""

    def __init__(self, records):
        self.batches = [list(records)]
        self.closed = False
        self.proc = type("Proc", (), {"poll": staticmethod(lambda: 0 if self.closed else None)})()

    def records(self, wait_s):
        if self.batches:
            return self.batches.pop()
        self.closed = True
        return []


def follow(records, names=("a",)):
    seen = []
    outcome, current = runner._follow(ScriptedChild(records), list(names), seen.append, headline="torch",
                                      flops={"a": 3e6}, start_timeout_s=5, scenario_timeout_s=5)
    return outcome, current, seen


def test_a_valid_report_gets_its_speedup_derived_from_the_times():
    outcome, current, seen = follow([READY, {"event": "start", "scenario": "a"}, GOOD, {"event": "done"}])
    assert outcome["how"] == "done" and current is None
    assert seen[0]["speedup"] == pytest.approx(3.0)
    assert seen[0]["tflops"]["candidate"] == pytest.approx(3e6 / 1e-5 / 1e12)


@pytest.mark.parametrize("bad, why", [
    ({**GOOD, "speedup": 100.0}, "unexpected fields"),  # a speedup is derived here, never taken
    ({**GOOD, "time_s": {"candidate": float("nan"), "torch": 1e-5}}, "not a finite number"),
    ({**GOOD, "time_s": {"candidate": -1.0, "torch": 1e-5}}, "not positive"),
    ({**GOOD, "time_s": {"candidate": 1e-5}}, "without the candidate's and the baseline's times"),
    ({**GOOD, "time_s": {"candidate": 1e-5, "torch": 1e-5, "fast": 1.0}}, "unknown implementation"),
    ({k: v for k, v in GOOD.items() if k != "check"}, "without its check"),
    ({**GOOD, "scenario": "b"}, "while 'a' was running"),
    ({**GOOD, "correct": "yes"}, "not true or false"),
    ({**GOOD, "lag_s": {"candidate": float("inf")}}, "not a finite number"),
    ({**GOOD, "lag_s": {"other": 1e-6}}, "unknown implementation"),
    ({**GOOD, "correct": False}, "reason"),
    ("not json", "not a record"),
])
def test_an_invalid_result_ends_the_child_and_fails_the_scenario(bad, why):
    outcome, current, seen = follow([READY, {"event": "start", "scenario": "a"}, bad, {"event": "done"}])
    assert outcome["how"] == "invalid" and why in outcome["why"], outcome
    assert current == "a" and seen == []


@pytest.mark.parametrize("records, why", [
    ([{"event": "start", "scenario": "a"}], "before ready"),
    ([READY, GOOD], "without a start"),
    ([READY, {"event": "start", "scenario": "b"}], "out of order"),
    ([READY, {"event": "done"}], "done before every scenario"),
    ([READY, READY], "a second ready"),
])
def test_records_out_of_order_are_refused(records, why):
    outcome, _, seen = follow(records, names=("a", "b"))
    assert outcome["how"] == "invalid" and why in outcome["why"], outcome
    assert seen == []


# --- children never outlive the judge ---------------------------------------------------------

def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"kernelseek.harness.child" in cmdline:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_the_judging_child_dies_with_the_judge(how, tmp_path):
    path, _ = write_fault("hang", tmp_path, cpu=True)
    script = textwrap.dedent(f"""
        from kernelseek.harness import judge
        judge("rmsnorm_cpu", {str(path)!r}, "cpu", scenarios="rows64_cols1024", timeout_s=120)
    """)
    judge_proc = subprocess.Popen([sys.executable, "-c", script], env={**os.environ},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (children := _children_of(judge_proc.pid)):
            assert judge_proc.poll() is None and time.monotonic() < deadline, "the judge started no child"
            time.sleep(0.1)
        time.sleep(1.0)  # let it reach the hanging call
        judge_proc.send_signal(how)
        judge_proc.wait(timeout=5)  # Ctrl-C included: it stops within seconds, not after the judgement
        deadline = time.monotonic() + 3
        while any(map(_alive, children)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(map(_alive, children)), f"the child outlived a judge stopped by {how.name}"
    finally:
        judge_proc.kill()
        for pid in _children_of(judge_proc.pid):
            os.kill(pid, signal.SIGKILL)
