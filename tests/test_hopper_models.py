"""The CPU models that back the Hopper kernel's candidates (kernels/hopper/versions/) still run and still
say what NOTES.md quotes from them: they are how a layout or a numerical change was checked without a GPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

VERSIONS = Path(__file__).resolve().parents[1] / "kernels" / "hopper" / "versions"


def run(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(VERSIONS / script), *args], capture_output=True, text=True,
                          timeout=300)


def test_v36_p_tile_lands_where_the_ss_product_reads_it_and_a_wrong_address_is_caught(tmp_path):
    result = run("v36_p_tile_layout_model.py")
    assert result.returncode == 0 and result.stdout.startswith("ok: all 12288 values"), result.stdout
    # the model can fail: the same script with the lane's swizzle added instead of XORed
    source = (VERSIONS / "v36_p_tile_layout_model.py").read_text()
    wrong = source.replace("((lane // 16) ^ (lane % 8)) << 4", "((lane // 16) + (lane % 8)) << 4")
    assert wrong != source
    mutant = tmp_path / "mutant.py"
    mutant.write_text(wrong)
    failed = subprocess.run([sys.executable, str(mutant)], capture_output=True, text=True, timeout=300)
    assert failed.returncode == 1 and failed.stdout.startswith("mismatch:"), failed.stdout


def test_v26_rescale_skip_equals_v24_to_the_bit():
    result = run("v26_rescale_skip_model.py")
    assert result.returncode == 0, result.stderr
    assert "v26 is v24 to the bit on 80 of 80 cases" in result.stdout
