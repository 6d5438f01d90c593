"""The CPU models behind live decisions of the Hopper attention kernel (tests/hopper_models/) still run, still
give the numbers the kernel's comments and kernels/hopper/LAB.md quote, and fail when one line of the
protocol they model is broken: they are how a layout, a schedule or a numerical change was checked without
a GPU. Slow (each runs a few seconds to a minute of pure Python): out of the fast run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MODELS = Path(__file__).resolve().parent / "hopper_models"

pytestmark = pytest.mark.slow


def run(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(MODELS / script), *args], capture_output=True, text=True,
                          timeout=300)


def test_the_p_tile_lands_where_the_ss_product_reads_it_and_a_wrong_address_is_caught(tmp_path):
    result = run("p_tile_layout_model.py")
    assert result.returncode == 0 and result.stdout.startswith("ok: all 12288 values"), result.stdout
    # the model can fail: the same script with the lane's swizzle added instead of XORed
    source = (MODELS / "p_tile_layout_model.py").read_text()
    wrong = source.replace("((lane // 16) ^ (lane % 8)) << 4", "((lane // 16) + (lane % 8)) << 4")
    assert wrong != source
    mutant = tmp_path / "mutant.py"
    mutant.write_text(wrong)
    failed = subprocess.run([sys.executable, str(mutant)], capture_output=True, text=True, timeout=300)
    assert failed.returncode == 1 and failed.stdout.startswith("mismatch:"), failed.stdout


def test_the_rescale_skip_changes_no_bit():
    result = run("rescale_skip_model.py")
    assert result.returncode == 0, result.stderr
    assert "v26 is v24 to the bit on 80 of 80 cases" in result.stdout


def mutant_fails(tmp_path: Path, script: str, old: str, new: str, words: str) -> None:
    """The model with one line of its protocol broken exits non-zero, saying why (it can fail)."""
    source = (MODELS / script).read_text()
    assert source.count(old) == 1, f"{script}: the line to break is gone"
    mutant = tmp_path / script
    mutant.write_text(source.replace(old, new))
    env = {**os.environ, "PYTHONPATH": str(MODELS)}  # the models it imports stay beside the original
    failed = subprocess.run([sys.executable, str(mutant)], capture_output=True, text=True, timeout=300, env=env)
    assert failed.returncode != 0 and words in failed.stderr, failed.stderr[-400:]


def test_the_band_decode_visits_every_tile_once_and_shortens_the_causal_tail(tmp_path):
    result = run("band_model.py")
    assert result.returncode == 0, result.stderr
    assert "decode: every tile exactly once in 4680" in result.stdout
    line = next(x for x in result.stdout.splitlines() if x.startswith("d128 s8192 b2 h16 "))
    v39, v44 = (float(v) for v in line.split()[-2:])
    assert v44 < v39 and (v39, v44) == (1.056, 1.011), line
    mutant_fails(tmp_path, "band_model.py",
                 "band0 = short_nh + (t - short_nh * n_mblocks) // (n_mblocks * band) * band",
                 "band0 = (t - short_nh * n_mblocks) // (n_mblocks * band) * band", "AssertionError")


def test_the_feed_protocol_never_hangs_and_a_wrong_parity_does(tmp_path):
    result = run("feed_protocol_model.py")
    assert result.returncode == 0 and "420 random interleavings, no hang" in result.stdout, result.stderr
    mutant_fails(tmp_path, "feed_protocol_model.py", "cta.q_empty.done((q & 1) ^ 1)", "cta.q_empty.done(q & 1)",
                 "hang")


def test_the_borrowed_o_signals_hold_and_an_early_signal_is_caught(tmp_path):
    result = run("borrowed_o_signal_model.py")
    assert result.returncode == 0 and "2000 random tile sequences" in result.stdout, result.stderr
    mutant_fails(tmp_path, "borrowed_o_signal_model.py", """        yield lambda pv=pv: pv.done
        if w == 0:
            bars["lastV"].arrive(w)""", """        if w == 0:
            bars["lastV"].arrive(w)
        yield lambda pv=pv: pv.done""", "staged over a buffer the other's product still reads")


def test_the_q_releases_hold_and_an_early_q_release_is_caught(tmp_path):
    result = run("q_release_model.py")
    assert result.returncode == 0 and "3000 random tile sequences" in result.stdout, result.stderr
    mutant_fails(tmp_path, "q_release_model.py", """            if it == n_it - 1:
                bars["q_empty"].arrive()""", """            if it == 0:
                bars["q_empty"].arrive()""", "Q loaded while")


def test_the_pairs_visit_every_tile_once_and_even_out_the_half_pairs(tmp_path):
    result = run("pair_balance_model.py")
    assert result.returncode == 0 and "exactly once in 1595" in result.stdout, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("d64 s2048 b8 h32 (tall)"))
    assert "v39 1.149 (1536 pairs)" in line and "v51 1.053 (1408 pairs)" in line, line
    mutant_fails(tmp_path, "pair_balance_model.py", "slot, mb = 2 * g + light, half", "slot, mb = 2 * g, half",
                 "AssertionError")


def test_packing_saves_key_blocks_where_the_sweep_measured_it_slower(tmp_path):
    result = run("gqa_pack_model.py")
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("d128 h40/8 b11 q719"))
    assert "9240 key blocks, busiest CTA 70 in 20 tiles" in line and "8712 key blocks, busiest CTA 69" in line, line
    assert "+1.45 us a packed tile" in line, line
    mutant_fails(tmp_path, "gqa_pack_model.py", "tile = decode_v51(pair, rnd & 1, n, slots)",
                 "tile = decode_v51(pair, 0, n, slots)", "the walk dealt")


def test_the_varlen_decode_visits_every_tile_once_and_feeding_evens_the_causal_batches(tmp_path):
    result = run("varlen_schedule_model.py")
    assert result.returncode == 0, result.stderr
    assert "decode: every tile exactly once, in the table's order, on 212 varlen shapes" in result.stdout
    rows = {x.split()[0]: [float(v) for v in x.split()[2:]] for x in result.stdout.splitlines()
            if x.startswith("varlen_d256_")}
    assert rows["varlen_d256_equal_causal"] == [1.122, 1.0, 0.892], rows
    assert rows["varlen_d256_mixed_causal"] == [1.298, 1.064, 0.819], rows
    # the readable order and the port of the kernel's decode (varlen_table_replay) must agree: one m-block order flipped
    mutant_fails(tmp_path, "varlen_schedule_model.py", "order += [(b, h, n - 1 - (u - s)) for h in range(heads)]",
                 "order += [(b, h, u - s) for h in range(heads)]", "AssertionError")


def test_the_pair_tail_and_the_d192_d256_feeds():
    result = run("pair_tail_model.py")
    assert result.returncode == 0, result.stderr
    assert ("over v51, 50 paired shapes: tail LPT geomean 0.963 (worst 1.000), tail deal 0.985 (worst 1.075)"
            in result.stdout), result.stdout[-300:]
    assert "d192 fed over v51, 13 paired shapes: geomean 0.939 (worst 1.000)" in result.stdout, result.stdout[-300:]
    assert "d256 fed over v51, 12 paired shapes: geomean 0.931 (worst 0.984)" in result.stdout, result.stdout[-300:]


def test_the_l2_rule_launches_two_hold_out_shapes_differently_and_no_suite_shape():
    result = run("l2_grid_decisions.py")
    assert result.returncode == 0, result.stderr
    changed = [line.split()[0] for line in result.stdout.splitlines()]
    # the two shapes it was made for first (listed by the script itself), and no suite shape
    assert changed[:2] == ["holdout_s7_09_d128_q165_k980_cap20_causal", "holdout_s11_17_d128_q204_k1997_causal"], changed
    assert all(name.startswith("holdout_") for name in changed), changed


def test_the_row_bound_mask_hides_exactly_the_keys_the_per_key_mask_hides_and_mutants_are_caught():
    result = run("row_bound_mask_model.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 differences; mutants missed: none" in result.stdout, result.stdout


def test_the_varlen_split_writes_each_partial_once_combines_to_full_attention_and_spreads_long_sequences():
    result = run("varlen_split_model.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "combined as full attention; mutants caught; spread batches faster" in result.stdout, result.stdout
    assert "sanitizer_scenario: {'splits': 7, 'pack': (4, 32)" in result.stdout, result.stdout
    # the split count for spread lengths: what the equal-length bound alone chose, and the makespans
    assert "one_long_many_short: splits 3 -> 16, makespan 43.0 -> 9.0 key blocks" in result.stdout, result.stdout
    assert "equal_128_tiles: splits 1 -> 5, makespan 111.0 -> 115.0 key blocks" in result.stdout, result.stdout


def test_the_tile_decode_divisor_divides_exactly_and_a_mutant_is_caught():
    result = run("fast_div_model.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 differences; mutant (no + 1) caught: True" in result.stdout, result.stdout


def test_the_mask_threshold_agrees_with_the_per_block_test_and_a_threshold_one_block_late_is_caught(tmp_path):
    result = run("mask_threshold_model.py")
    assert result.returncode == 0 and result.stdout.startswith("ok: the threshold agrees"), result.stderr
    mutant_fails(tmp_path, "mask_threshold_model.py",
                 "nb = min(nb, 0 if visible <= 0 else visible // bn)",
                 "nb = min(nb, 0 if visible <= 0 else visible // bn + 1)", "computed unmasked")


def test_k_a_block_ahead_of_v_never_hangs_and_shortens_latency_bound_tiles(tmp_path):
    result = run("load_order_model.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "K ahead ends a tile earlier in 6 of 20 cases, later in none" in result.stdout, result.stdout
    # with V(j) before K(j+1) again (the pairs order) the model finds no gain
    mutant_fails(tmp_path, "load_order_model.py",
                 '[("K", j + 1), ("V", j)]', '[("V", j), ("K", j + 1)]', "earlier in 0")
