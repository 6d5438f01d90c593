"""The judge on the GPU: the seed against FA3, and every fault fixture in one run. Run on the H200."""

import pytest
from faults import CUDA_WRAPPERS, GUARD_WRAPPERS, fake_cutlass, write_fault

from kernelseek.harness import judge

pytestmark = pytest.mark.gpu
SEED = "kernels/seeds/flash_attn_fwd.cu"
SMALL = "ragged_d64_113x203*"  # two small scenarios: causal and not


def test_seed_is_correct_on_the_quick_suite():
    verdict = judge("flash_attn_fwd", SEED, "sm90", quick=True)
    assert verdict.correct, verdict.summary()
    for scenario in verdict.scenarios:
        assert scenario["timing"] == "cuda graph replay"
        assert scenario["eager_s"]["candidate"] > 0


@pytest.mark.parametrize("kind", sorted(CUDA_WRAPPERS))
def test_fault_fixture_fails_with_its_reason(kind, tmp_path):
    path, expected = write_fault(kind, tmp_path)
    verdict = judge("flash_attn_fwd", path, "sm90", scenarios=SMALL, timeout_s=20)
    assert not verdict.correct and verdict.speedup is None
    assert len(verdict.scenarios) == 2
    reasons = [s.get("reason") or "" for s in verdict.scenarios]
    assert any(expected in r for r in reasons), (kind, reasons)


@pytest.mark.parametrize("kind", sorted(GUARD_WRAPPERS))
def test_guard_fixture_is_refused_before_it_runs(kind, tmp_path, monkeypatch):
    monkeypatch.setenv("CPATH", str(fake_cutlass(tmp_path / "include")))
    path, expected = write_fault(kind, tmp_path)
    verdict = judge("flash_attn_fwd", path, "sm90", scenarios=SMALL, timeout_s=20)
    assert not verdict.correct and verdict.scenarios == [] and expected in verdict.reason, verdict.reason


def test_a_comment_naming_cutlass_passes(tmp_path):
    path, _ = write_fault("comment_cutlass", tmp_path)
    verdict = judge("flash_attn_fwd", path, "sm90", scenarios=SMALL, timeout_s=20)
    assert verdict.correct, verdict.summary()


def test_cutlass_fixture_is_refused_before_it_runs():
    verdict = judge("flash_attn_fwd", "tests/fixtures/includes_cutlass.cu", "sm90", scenarios=SMALL)
    assert not verdict.correct and "guard" in verdict.reason and verdict.scenarios == []
