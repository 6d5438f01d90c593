"""benchmarks/ncu_source_summary.py reads ncu's per-instruction export: stalls by reason, the hottest
lines, and a barrier polled in a loop are reported from a small export written here."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "ncu_source_summary.py"
HEADER = ["Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed",
          "stall_barrier", "stall_long_sb", "stall_wait", "stall_barrier (Not Issued)"]


def export(path: Path, rows: list[list[object]]) -> None:
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["Kernel Name", "void demo_kernel(int)"])
        out.writerow(HEADER)
        out.writerows(rows)


def summarise(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(folder), "--top", "2"], capture_output=True,
                          text=True, timeout=60)


def test_stalls_hottest_lines_and_a_polled_barrier_are_reported(tmp_path):
    export(tmp_path / "demo-ours-sass.csv", [
        ["0x7fbd7b7c5500", "      HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24", 10, 1000, 0, 0, 10, 0],
        ["0x7fbd7b7c5510", "      WARPGROUP.DEPBAR.LE gsb0, 0x0", 70, 1000, 65, 0, 5, 0],
        ["0x7fbd7b7c5520", "      SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR8+0x30040], R0", 15, 500000, 0, 15, 0, 0],
        ["0x7fbd7b7c5530", "@!P0  BRA 0x7fbd7b7c5520", 5, 500000, 0, 5, 0, 0],
    ])
    (tmp_path / "demo-ours-details.txt").write_text("    Duration                         ms         1.62\n")
    result = summarise(tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Duration ms 1.62" in out
    assert "by reason: barrier 65.0%, long_sb 20.0%, wait 15.0%" in out, out
    hottest = out.split("hottest 2:")[1].splitlines()[1:3]
    assert "DEPBAR" in hottest[0] and "TRYWAIT" in hottest[1], out
    assert "spin loop c5520" in out and "x500000 (1.0 M instructions)" in out, out


def test_a_file_that_is_not_an_ncu_export_is_one_sentence(tmp_path):
    (tmp_path / "x-ours-sass.csv").write_text("==PROF== Error: no kernels were profiled\n")
    result = summarise(tmp_path)
    assert result.returncode != 0
    assert "not an `ncu --page source --csv` export" in result.stderr and "Traceback" not in result.stderr


def test_an_empty_folder_says_what_it_expected(tmp_path):
    result = summarise(tmp_path)
    assert result.returncode != 0 and "no *-sass.csv files" in result.stderr
