"""The sanitizer gate on the GPU: each fixture (right in value, unsafe in memory) fails with its own tool's
finding and no other's, in one process that goes on judging; the seed passes. Run on the H200 (with
compute-sanitizer); KERNELSEEK_SANITIZER_LOGS=DIR keeps the raw outputs there (DIR/<fixture>/<tool>.log)."""

import os
from pathlib import Path

import pytest
from faults import SANITIZER_WRAPPERS, write_sanitizer_fault

from kernelseek.harness import judge
from kernelseek.harness.sanitize import find_sanitizer, sanitize

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(find_sanitizer() is None, reason="needs compute-sanitizer")]
SEED = "kernels/seeds/flash_attn_fwd.cu"
ONE = "tiny_causal_ragged"  # the fixtures' unsafe kernel runs on every call: one scenario shows it
LOGS = os.environ.get("KERNELSEEK_SANITIZER_LOGS")


def logs(name: str) -> Path | None:
    return Path(LOGS) / name if LOGS else None


@pytest.mark.parametrize("kind", sorted(SANITIZER_WRAPPERS))
def test_the_fixture_is_right_in_value(kind, tmp_path):
    path, _, _ = write_sanitizer_fault(kind, tmp_path)
    verdict = judge("flash_attn_fwd", path, "sm90", scenarios="ragged_d64_113x203*", timeout_s=30)
    assert verdict.correct, verdict.summary()


def test_each_fixture_fails_with_its_tools_finding_and_the_harness_goes_on(tmp_path):
    for kind in sorted(SANITIZER_WRAPPERS):
        path, tool, fragment = write_sanitizer_fault(kind, tmp_path)
        report = sanitize("flash_attn_fwd", path, "sm90", scenarios=ONE, timeout_s=240, log_dir=logs(kind))
        failing = [name for name, v in report.tools.items() if not v.passed]
        assert failing == [tool], (kind, report.summary())
        reason = report.tools[tool].reason
        assert fragment in reason and f"{path.name}:" in reason, reason  # file and line, from -lineinfo
        print(f"{kind}: {report.summary()}")
    clean = sanitize("flash_attn_fwd", SEED, "sm90", scenarios=ONE, timeout_s=240, log_dir=logs("seed-one"))
    assert clean.passed, clean.summary()  # the same process, after three unsafe kernels


def test_a_gated_judgement_of_the_seed_is_correct():
    verdict = judge("flash_attn_fwd", SEED, "sm90", scenarios="ragged_d64_113x203*",
                    sanitize={"scenarios": "tiny_*", "timeout_s": 240})
    assert verdict.correct and verdict.sanitizer["passed"], verdict.summary()
