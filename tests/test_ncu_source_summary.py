"""benchmarks/ncu_source_summary.py reads ncu's per-instruction export: stalls by reason, the hottest
lines, and a barrier waited on in a loop (polled or slept on) are reported from a small export written here."""

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
    assert "spin loop c5520" in out and "x500000 (1.0 M instructions, 99.8 % of all; polls)" in out, out


def test_a_wait_that_sleeps_is_told_from_one_that_polls(tmp_path):
    """A wait with a suspend hint retries as TRYWAIT, NANOSLEEP, the phase check and the branch: four lines,
    counted whole, reported as sleeping; the same loop without its NANOSLEEP polls."""
    def wait_rows(sleep: bool) -> list[list[object]]:
        rows = [["0x7f0000000100", "      MOV R0, 0x1", 1, 1000, 0, 0, 1, 0],
                ["0x7f0000000110", "      SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R3+URZ+0x30040], R0", 1, 200000, 0, 1, 0, 0]]
        if sleep:
            rows.append(["0x7f0000000120", "@!P0  NANOSLEEP.SYNCS 0x989680", 1, 200000, 0, 0, 0, 0])
        rows += [["0x7f0000000130", "@!P0  SYNCS.PHASECHK.TRANS64 P0, [R3+URZ+0x30040], R0", 1, 200000, 0, 1, 0, 0],
                 ["0x7f0000000140", "@!P0  BRA 0x7f0000000110", 1, 200000, 0, 1, 0, 0]]
        return rows
    export(tmp_path / "slept-ours-sass.csv", wait_rows(sleep=True))
    export(tmp_path / "polled-base-sass.csv", wait_rows(sleep=False))
    out = summarise(tmp_path).stdout
    assert "spin loop 00110: SYNCS.PHASECHK.TRANS64.TRYWAIT" in out, out
    assert "x200000 (0.8 M instructions, 99.9 % of all; sleeps)" in out, out
    assert "x200000 (0.6 M instructions, 99.8 % of all; polls)" in out, out


def loop_rows(extra_umov: int, spin: int) -> list[list[object]]:
    """A 1000-iteration main loop: two HGMMA, one FMUL (FTZ on one side), extra UMOVs, a spin loop."""
    rows = [["0x7f0000000000", "      HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24", 5, 1000, 0, 0, 5, 0],
            ["0x7f0000000010", "      HGMMA.64x128x16.F32.BF16 R88, R152, gdesc[UR8].tnspB, R88", 5, 1000, 0, 0, 5, 0],
            ["0x7f0000000020", "@!P1  FMUL.FTZ R1, R1, R2" if extra_umov == 0 else "      FMUL R1, R1, R2",
             1, 1000, 0, 0, 1, 0],
            ["0x7f0000000030", "      MOV R0, 0x1", 1, 8, 0, 0, 1, 0]]  # once a tile: not the loop's
    rows += [[f"0x7f00000001{i:02x}", "      UMOV UR9, 0x40000040", 1, 1000, 0, 0, 1, 0] for i in range(extra_umov)]
    if spin:
        rows += [["0x7f0000000200", "      SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR8+0x30040], R0", 1, spin, 0, 1, 0, 0],
                 ["0x7f0000000210", "@!P0  BRA 0x7f0000000200", 1, spin, 0, 1, 0, 0]]
    return rows


def test_the_main_loops_of_both_sides_are_compared_by_opcode_a_block(tmp_path):
    export(tmp_path / "demo-ours-sass.csv", loop_rows(extra_umov=3, spin=500000))
    export(tmp_path / "demo-base-sass.csv", loop_rows(extra_umov=0, spin=0))
    (tmp_path / "demo-ours-details.txt").write_text("    Elapsed Cycles                cycle      1,000\n"
                                                   "    SM Active Cycles              cycle     937.00\n")
    result = summarise(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "SMs active 93.7 % of the elapsed cycles" in result.stdout, result.stdout
    loop = result.stdout.split("== demo, main loop")[1]
    assert loop.startswith(" a key block and warp: ours 6 instructions (1000 iterations), base 3 (1000)"), loop
    assert "UMOV" in loop and "+3.0" in loop  # the spin loop and the once-a-tile MOV are not the loop's
    assert "FMUL" not in loop and "SYNCS" not in loop  # FMUL.FTZ is FMUL


def test_the_loop_is_not_a_peeled_first_block_with_more_wgmma_lines(tmp_path):
    """A causal kernel peels its first key block (run once a tile, 300 times here) with three HGMMA lines
    against the loop's two (run 1000 times): the loop is where most wgmma run."""
    peeled = [[f"0x7f00000003{i:02x}", "      HGMMA.64x112x16.F32.BF16 R120, gdesc[UR8], RZ, !UPT", 1, 300, 0, 0, 1, 0]
              for i in range(3)]
    for side in ("ours", "base"):
        export(tmp_path / f"demo-{side}-sass.csv", loop_rows(extra_umov=0, spin=0) + peeled)
    result = summarise(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "ours 3 instructions (1000 iterations), base 3 (1000)" in result.stdout, result.stdout


def test_a_file_that_is_not_an_ncu_export_is_one_sentence(tmp_path):
    (tmp_path / "x-ours-sass.csv").write_text("==PROF== Error: no kernels were profiled\n")
    result = summarise(tmp_path)
    assert result.returncode != 0
    assert "not an `ncu --page source --csv` export" in result.stderr and "Traceback" not in result.stderr


def test_an_empty_folder_says_what_it_expected(tmp_path):
    result = summarise(tmp_path)
    assert result.returncode != 0 and "no *-sass.csv files" in result.stderr
