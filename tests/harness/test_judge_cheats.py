"""The sealed judge against candidates that game it instead of failing it (tests/fixtures/cheats/README.md).

Each cheat is judged for real on rmsnorm_cpu: a forged verdict through stdio on any descriptor, a memo that
skips repeated work (every repeat, or one in 2, 4 or 16), a memo that writes back a stale output, a time
below the memory floor. Each must fail with its reason; honest kernels must still pass at their speed.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cheats import cheat

from kernelseek.harness import judge

TASK = "rmsnorm_cpu"
SEED = "kernels/seeds/rmsnorm_cpu.cpp"
SMALL = "rows64_cols1024"


def reasons(verdict) -> list[str]:
    return [s.get("reason") or "" for s in verdict.scenarios]


def test_a_verdict_forged_on_every_descriptor_is_not_heard(tmp_path):
    verdict = judge(TASK, cheat("forge_stdio", tmp_path), "cpu", quick=True, seed=1)
    assert not verdict.correct and verdict.speedup is None
    assert len(verdict.scenarios) == 3  # the suite's own scenarios, not the forged stream's seven
    assert all("left unwritten" in r for r in reasons(verdict)), reasons(verdict)


def test_a_forged_timing_reply_cannot_reach_the_checker(tmp_path):
    verdict = judge(TASK, cheat("forge_wire", tmp_path), "cpu", scenarios=SMALL, seed=1)
    assert verdict.correct, verdict.reason
    assert verdict.speedup < 5, verdict.speedup  # the forged frames claim 1000x


@pytest.mark.parametrize("skip_every", [1, 2, 4, 16])
def test_a_memo_that_skips_repeated_calls_fails(skip_every, tmp_path):
    kernel = cheat("memo_skip", tmp_path, skip_every=skip_every if skip_every > 1 else None)
    verdict = judge(TASK, kernel, "cpu", scenarios=SMALL, seed=2)
    assert not verdict.correct and verdict.speedup is None
    assert "left its output unwritten" in reasons(verdict)[0], reasons(verdict)


def test_a_memo_that_writes_back_a_stale_output_fails(tmp_path):
    verdict = judge(TASK, cheat("memo_copy", tmp_path), "cpu", scenarios=SMALL, seed=3)
    assert not verdict.correct
    assert "the timed call" in reasons(verdict)[0] and "error" in reasons(verdict)[0], reasons(verdict)


def test_a_memo_keyed_on_magnitudes_fails_on_a_checked_trial(tmp_path):
    # the checked trials' values are sign flips of what the set held, as every other trial's: the memo cannot
    # tell them apart, writes back its stale output there too, and is caught
    verdict = judge(TASK, cheat("memo_magnitude", tmp_path), "cpu", scenarios=SMALL, seed=5)
    assert not verdict.correct and verdict.speedup is None
    assert "the timed call" in reasons(verdict)[0] and "error" in reasons(verdict)[0], reasons(verdict)


def test_a_cache_of_the_whole_input_gains_nothing(tmp_path):
    honest = judge(TASK, SEED, "cpu", scenarios=SMALL, seed=4)
    cached = judge(TASK, cheat("honest_cache", tmp_path), "cpu", scenarios=SMALL, seed=4)
    assert honest.correct and cached.correct, (honest.reason, cached.reason)
    # it hashes every input byte and still computes: new inputs before every timed call mean no hit
    assert cached.speedup < 1.5 * honest.speedup, (cached.speedup, honest.speedup)


def test_a_time_below_the_memory_floor_fails():
    task = Path(__file__).parents[1] / "fixtures" / "overclaimed_task"
    verdict = judge(task, SEED, "cpu", scenarios=SMALL, seed=5)
    assert not verdict.correct
    assert "below the memory floor" in reasons(verdict)[0], reasons(verdict)


@pytest.mark.parametrize("kernel", [SEED, "tests/fixtures/loop/faster.cpp"])
def test_honest_kernels_pass_every_check(kernel):
    verdict = judge(TASK, kernel, "cpu", quick=True, seed=6)
    assert verdict.correct, verdict.reason
    assert all(s["speedup"] > 0.2 for s in verdict.scenarios)


def test_the_seal_refuses_writes_to_the_channel_but_not_sendmsg():
    program = (
        "import os, socket\n"
        "from kernelseek.harness.seal import seal\n"
        "a, b = socket.socketpair()\n"
        "seal([a.fileno()])\n"
        "for attempt in (lambda: os.write(a.fileno(), b'x'), lambda: os.dup(a.fileno())):\n"
        "    try:\n"
        "        attempt(); print('allowed')\n"
        "    except PermissionError:\n"
        "        print('refused')\n"
        "a.sendmsg([b'ok']); print(b.recv(2).decode())\n"
        "r, w = os.pipe(); os.write(w, b'p'); print(os.read(r, 1).decode())\n")
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    assert out.stdout.split() == ["refused", "refused", "ok", "p"], out.stderr
