"""The judge against memo cheats on the GPU: kernels that skip their work on the device (inside CUDA graph
replays) when a call's pointers and the first bytes of its input repeat, on every repeated call or on every
2nd, 4th or 16th, are judged not correct, for a timed call's output left unwritten or stale; the shipped
kernels stay correct on their quick suites, none of their scenarios failed on the memory floor."""

import pytest
from cheats import MEMO_FLAG, memo_flag

from kernelseek.harness import judge

pytestmark = pytest.mark.gpu
SMALL = {"flash_attn_fwd": "ragged_d64_113x203*",  # two small scenarios: causal and not
         "add_rmsnorm": "decode_h4096_r1*"}  # decode rows 1, 16 and 128 of hidden 4096
SHIPPED = {"flash_attn_fwd": "kernels/hopper/flash_attn_fwd/flash_attn_fwd.cu", "add_rmsnorm": "kernels/hopper/add_rmsnorm/add_rmsnorm.cu"}


@pytest.mark.parametrize("skip_every", [None, 2, 4, 16], ids=lambda n: f"skip_every_{n or 1}")
@pytest.mark.parametrize("task", sorted(MEMO_FLAG))
def test_device_flag_memo_is_not_correct(task, skip_every, tmp_path):
    verdict = judge(task, memo_flag(task, tmp_path, skip_every), "sm90", scenarios=SMALL[task], timeout_s=60)
    assert not verdict.correct and verdict.speedup is None, verdict.summary()
    reasons = [s.get("reason") or "" for s in verdict.scenarios]
    assert any("left its output unwritten" in r or "the timed call" in r for r in reasons), reasons


@pytest.mark.parametrize("task", sorted(SHIPPED))
def test_shipped_kernel_is_correct_on_the_quick_suite(task):
    verdict = judge(task, SHIPPED[task], "sm90", quick=True)
    assert not [s["reason"] for s in verdict.scenarios if "floor" in (s.get("reason") or "")]
    assert verdict.correct, verdict.summary()
