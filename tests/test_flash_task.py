"""The flash_attn_fwd task on the CPU: its suites, its reference, its tolerance rule, its FLOP count."""

import math
from collections import Counter

import pytest
import torch

from kernelseek.harness import load_task

TASK = load_task("flash_attn_fwd")
GROUPS = {"grid", "hdim", "ragged", "gqa", "softcap", "varlen", "decode", "strided", "large"}


def test_sm90_suite_covers_every_feature_with_unique_names():
    suite = TASK.scenarios("sm90")
    assert 170 <= len(suite) <= 200
    assert len({s.name for s in suite}) == len(suite)
    assert set(Counter(s.group for s in suite)) == GROUPS
    assert {s.group for s in suite if s.quick} == GROUPS  # the quick subset touches every group
    assert {s.params["head_dim"] for s in suite} == {64, 96, 128, 192, 256}
    grid = [s for s in suite if s.group == "grid"]
    assert all(s.params["batch"] * s.params["seqlen_q"] == 16384 for s in grid)
    assert all(s.params["heads_q"] * s.params["head_dim"] == 2048 for s in grid)
    for s in suite:
        p = s.params
        assert p["heads_q"] % p["heads_kv"] == 0
        if p["layout"] == "varlen":
            assert len(p["seqlens_q"]) == len(p["seqlens_k"]) == p["batch"] and 0 in p["seqlens_q"] + p["seqlens_k"]
            assert p["seqlen_q"] == max(p["seqlens_q"]) and p["seqlen_k"] == max(p["seqlens_k"])
    assert any(s.params["seqlen_q"] == 1 for s in suite) and any(s.params["seqlen_q"] > s.params["seqlen_k"] for s in suite)


def test_sm100_suite_keeps_to_what_fa4_runs_on_blackwell():
    suite = TASK.scenarios("sm100")
    assert suite and all(s.params["head_dim"] != 192 for s in suite)
    assert len(suite) == len(TASK.scenarios("sm90")) - sum(s.params["head_dim"] == 192 for s in TASK.scenarios("sm90"))


@pytest.mark.parametrize("scenario", TASK.scenarios("tiny"), ids=lambda s: s.name)
def test_reference_matches_a_direct_computation(scenario):
    inputs = TASK.make_inputs(scenario, 11, "cpu")
    ref = TASK.reference(scenario, inputs)
    p = scenario.params
    for q, k, v, out_index, lse_index in TASK.sequences(scenario, inputs):
        sq, sk = q.shape[0], k.shape[0]
        group = p["heads_q"] // p["heads_kv"]
        for h in range(p["heads_q"]):
            qh, kh, vh = q[:, h].double(), k[:, h // group].double(), v[:, h // group].double()
            scores = qh @ kh.T * inputs["scale"]
            if p["softcap"]:
                scores = p["softcap"] * torch.tanh(scores / p["softcap"])
            for i in range(sq):
                visible = [j for j in range(sk) if not p["causal"] or j <= i + sk - sq]
                out_row = ref["out"][out_index][i, h].double()
                lse = ref["lse"][lse_index][h, i] if p["layout"] != "varlen" else ref["lse"][lse_index][h][i]
                if not visible:
                    assert torch.all(out_row == 0) and lse == float("-inf")
                    continue
                row = scores[i, visible]
                assert abs(float(lse) - float(torch.logsumexp(row, 0))) < 1e-4
                expected = torch.softmax(row, 0) @ vh[visible]
                assert torch.allclose(out_row, expected, atol=1e-4)


def test_tolerance_rule_passes_bf16_rounding_and_rejects_real_errors():
    scenario = TASK.scenarios("tiny")[1]  # causal with rows that see no key
    inputs = TASK.make_inputs(scenario, 3, "cpu")
    ref = TASK.reference(scenario, inputs)
    allowed = TASK.fallback_errors(scenario, inputs, ref)
    good = {"out": ref["out"].to(torch.bfloat16), "lse": ref["lse"].clone()}
    assert TASK.within_tolerance(TASK.errors(scenario, good, ref), allowed) is None
    wrong_scale = {"out": (ref["out"] * 1.05).to(torch.bfloat16), "lse": ref["lse"]}
    assert "out_max" in TASK.within_tolerance(TASK.errors(scenario, wrong_scale, ref), allowed)
    bad_lse = {"out": good["out"], "lse": ref["lse"] + 0.01}
    assert "lse_max" in TASK.within_tolerance(TASK.errors(scenario, bad_lse, ref), allowed)
    empty_rows_as_zero = {"out": good["out"], "lse": ref["lse"].nan_to_num(neginf=0.0)}
    assert torch.isneginf(ref["lse"]).any()
    assert "lse_max" in TASK.within_tolerance(TASK.errors(scenario, empty_rows_as_zero, ref), allowed)
    one_nan = good["out"].clone()
    one_nan.view(-1)[5] = float("nan")
    assert TASK.within_tolerance(TASK.errors(scenario, {"out": one_nan, "lse": ref["lse"]}, ref), allowed)


def test_flops_follow_flashattention_count():
    grid = {s.name: s for s in TASK.scenarios("sm90")}
    full, causal = grid["grid_d128_s4096"], grid["grid_d128_s4096_causal"]
    assert TASK.flops(full) == 4.0 * 4 * 4096 * 4096 * 128 * 16
    assert math.isclose(TASK.flops(causal) / TASK.flops(full), (4096 + 1) / (2 * 4096))
    # bottom-right alignment: with 3 queries against 799 keys every query sees almost all keys
    ragged = grid["ragged_d64_3x799_causal"]
    assert TASK.flops(ragged) == 4.0 * 2 * (797 + 798 + 799) * 64 * 6


def test_inputs_are_fresh_per_seed_and_packed_views_are_strided():
    scenario = TASK.scenarios("tiny")[4]
    a, b = TASK.make_inputs(scenario, 1, "cpu"), TASK.make_inputs(scenario, 2, "cpu")
    assert not torch.equal(a["q"], b["q"])
    assert a["q"].stride(1) == 3 * scenario.params["heads_q"] * scenario.params["head_dim"]
    outputs = TASK.new_outputs(scenario, a, "cpu")
    assert torch.isnan(outputs["out"].float()).all() and torch.isnan(outputs["lse"]).all()
