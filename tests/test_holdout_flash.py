"""The hold-out sampler of flash_attn_fwd: deterministic, drawn from the suite's distribution, valid for
the task and for its headline baseline. CPU only: no kernel runs here."""

from __future__ import annotations

import math
import sys
from collections import Counter

import pytest
import torch

from kernelseek.harness import Task, TaskError, load_task

TASK = load_task("flash_attn_fwd")
suites = sys.modules[type(TASK).__module__].suites  # the task folder's own scenarios.py, as task.py imports it

SAMPLE = {arch: TASK.holdout(arch, 400, 11) for arch in ("sm90", "sm100")}


def test_the_same_seed_draws_the_same_sample_and_another_seed_another():
    a, b = TASK.holdout("sm90", 24, 1), TASK.holdout("sm90", 24, 1)
    assert [s.to_dict() for s in a] == [s.to_dict() for s in b]
    other = TASK.holdout("sm90", 24, 2)
    assert [s.params for s in other] != [s.params for s in a]
    # scenario i depends only on (arch, seed, i): a smaller sample is a prefix of a larger one (bar its name width)
    assert [s.params for s in TASK.holdout("sm90", 5, 1)] == [s.params for s in a[:5]]
    assert a[7].name.startswith("holdout_s1_07_d") and all(s.group.startswith("holdout") for s in a)
    assert TASK.holdout("sm90", 0, 1) == []


def test_names_are_unique_and_never_the_suites():
    for arch, sample in SAMPLE.items():
        names = [s.name for s in sample]
        assert len(set(names)) == len(names)
        assert not set(names) & {s.name for s in TASK.scenarios(arch)}
        assert all(s.name.startswith("holdout_s11_") and not s.quick for s in sample)
    # two seeds' samples never collide either: the seed is in the name
    assert not {s.name for s in TASK.holdout("sm90", 30, 1)} & {s.name for s in TASK.holdout("sm90", 30, 12)}


def test_every_sampled_scenario_is_valid_and_no_larger_than_the_suites_largest():
    for arch, sample in SAMPLE.items():
        bounds = suites.limits(arch)
        for s in sample:
            p = s.params
            assert suites.problem(arch, p, bounds) is None, (s.name, suites.problem(arch, p, bounds))
            size = suites.size_of(p)
            assert all(size[k] <= bounds[k] for k in bounds), s.name
            assert p["heads_q"] % p["heads_kv"] == 0 and 1 <= p["seqlen_q"] <= 16384 and 1 <= p["seqlen_k"] <= 16384
            if p["layout"] == "varlen":
                lq, lk = p["seqlens_q"], p["seqlens_k"]
                assert len(lq) == len(lk) == p["batch"]
                assert p["seqlen_q"] == max(lq) and p["seqlen_k"] == max(lk)
                if s.group == "holdout_varlen":  # a synthetic batch: an empty sequence, at most 16k tokens
                    assert 0 in lq + lk and sum(lq) <= 16384 and sum(lk) <= 16384
            if p["layout"] == "packed_qkv":
                assert p["seqlen_q"] == p["seqlen_k"] and p["heads_q"] == p["heads_kv"]
            if p["softcap"]:
                assert p["magnitude"] == 2.0
            assert 4 * size["work"] == TASK.flops(s)  # the size measure counts what the FLOP count does


def test_the_sample_covers_the_suites_features_with_lengths_off_the_grid():
    sample = [s for s in SAMPLE["sm90"] if not s.group.startswith("holdout_model_")]
    suite = TASK.scenarios("sm90")
    assert {s.params["head_dim"] for s in sample} == {s.params["head_dim"] for s in suite} == {64, 96, 128, 192, 256}
    assert {s.params["layout"] for s in sample} == {"contiguous", "varlen", "packed_qkv"}
    assert {s.params["causal"] for s in sample} == {True, False}
    groups = Counter(s.group for s in sample)
    assert set(groups) == {f"holdout_{g}" for g in ("dense", "ragged", "decode", "varlen", "strided", "softcap", "gqa")}
    ratios = {s.params["heads_q"] // s.params["heads_kv"] for s in sample}
    assert 1 in ratios and len(ratios) >= 4
    assert any(s.params["heads_kv"] == 1 for s in sample)  # MQA
    contiguous = [s.params for s in sample if s.params["layout"] == "contiguous"]
    unequal = [p for p in contiguous if p["seqlen_q"] != p["seqlen_k"]]
    assert 0.25 < len(unequal) / len(contiguous) < 0.9  # q != k often
    assert any(p["seqlen_q"] > p["seqlen_k"] for p in unequal)  # ... and sometimes more queries than keys
    assert sum(p["seqlen_q"] <= p["seqlen_k"] for p in unequal) > len(unequal) / 2  # ... though usually fewer
    lengths = [p["seqlen_k"] for p in contiguous]
    powers = sum(n & (n - 1) == 0 for n in lengths)
    assert powers < len(lengths) / 10  # real models do not come in powers of two
    assert min(lengths) < 64 and max(lengths) > 8192
    # log-uniform-ish: each octave of 32..16k holds some of the square lengths, none holds most
    square = [p["seqlen_q"] for p in contiguous if p["seqlen_q"] == p["seqlen_k"]]
    octaves = Counter(int(math.log2(n)) for n in square)
    assert len(octaves) >= 8 and max(octaves.values()) < len(square) / 3
    softcapped = [s for s in sample if s.params["softcap"]]
    assert 0.05 < len(softcapped) / len(sample) < 0.4


def test_half_the_sample_is_real_models_attention_reported_apart():
    models = sys.modules[type(TASK).__module__].suites.models
    for sample in SAMPLE.values():
        drawn = [s for s in sample if s.group.startswith("holdout_model_")]
        assert [s.name for s in drawn] == [s.name for s in sample[1::2]]
        assert {s.group for s in drawn} == {"holdout_model_prefill", "holdout_model_decode", "holdout_model_chunked"}
        configs = {m[0]: m[1:] for m in models.MODELS}
        for s in drawn:
            p = s.params
            hq, hkv, d, cap = configs[p["model"]]
            assert (p["head_dim"], p["softcap"]) == (d, cap) and p["causal"] == (p["seqlen_q"] > 1)
            assert (p["heads_q"], p["heads_kv"]) in {models.heads_per_gpu(hq, hkv, tp) for tp in models.TP_DEGREES}
            if s.group == "holdout_model_prefill":
                assert p["seqlen_q"] == p["seqlen_k"] and p["layout"] == "contiguous"
            elif s.group == "holdout_model_chunked":
                assert p["batch"] == 1 and p["seqlen_q"] < p["seqlen_k"]
            else:  # decode: one continuous batch, each sequence a few new tokens against its own cache
                assert p["layout"] == "varlen" and set(p["seqlens_q"]) == {p["seqlen_q"]} and p["seqlen_q"] <= 8
        used = {s.params["model"] for s in drawn}
        assert len(used) >= len(models.MODELS) // 2
        assert sum(s.params["heads_q"] != s.params["heads_kv"] for s in drawn) > len(drawn) / 2  # GQA mostly


def test_tensor_parallel_splits_as_serving_engines_accept():
    models = sys.modules[type(TASK).__module__].suites.models
    assert models.heads_per_gpu(32, 8, 4) == (8, 2)
    assert models.heads_per_gpu(64, 8, 8) == (8, 1)
    assert models.heads_per_gpu(8, 4, 8) == (1, 1)  # key/value heads replicated when fewer than the degree
    assert models.heads_per_gpu(28, 4, 8) is None  # query heads do not split eight ways
    assert models.heads_per_gpu(40, 10, 4) is None  # nor do ten key/value heads four ways


def test_every_sampled_scenario_is_one_fa3_and_fa4_run():
    for arch, sample in SAMPLE.items():
        for s in sample:
            assert suites.baseline_supports(arch, s.params) is None, s.name
    # the support rule agrees with the suites (which the baselines run on the H200) and rejects what they cannot
    assert all(suites.baseline_supports("sm90", s.params) is None for s in TASK.scenarios("sm90"))
    assert all(suites.baseline_supports("sm100", s.params) is None for s in TASK.scenarios("sm100"))
    d192 = next(s for s in TASK.scenarios("sm90") if s.params["head_dim"] == 192)
    assert suites.baseline_supports("sm100", d192.params) and not suites.baseline_supports("sm90", d192.params)
    assert suites.baseline_supports("sm90", {**d192.params, "head_dim": 320})
    assert suites.baseline_supports("sm90", {**d192.params, "heads_q": 10, "heads_kv": 4})


def test_sm100_excludes_d192_as_its_suite_does():
    assert 192 not in {s.params["head_dim"] for s in SAMPLE["sm100"]}
    assert {s.params["head_dim"] for s in SAMPLE["sm100"]} == {64, 96, 128, 256}
    assert 192 in {s.params["head_dim"] for s in SAMPLE["sm90"]}


def test_small_sampled_scenarios_build_inputs_outputs_and_a_reference_on_the_cpu():
    sample = sorted(SAMPLE["sm90"], key=lambda s: suites.size_of(s.params)["work"])
    picked = {}
    for s in sample:  # the smallest of each layout, causal and not
        picked.setdefault((s.params["layout"], s.params["causal"]), s)
    assert len(picked) == 6
    for s in picked.values():
        p = s.params
        inputs = TASK.make_inputs(s, 5, "cpu")
        outputs = TASK.new_outputs(s, inputs, "cpu")
        total_q = sum(p["seqlens_q"]) if p["layout"] == "varlen" else None
        assert inputs["q"].shape[-2:] == (p["heads_q"], p["head_dim"])
        assert inputs["k"].shape[-2:] == (p["heads_kv"], p["head_dim"])
        if total_q is not None:
            assert inputs["q"].shape[0] == total_q and inputs["cu_k"][-1] == sum(p["seqlens_k"])
            assert outputs["lse"].shape == (p["heads_q"], total_q)
        else:
            assert inputs["q"].shape[:2] == (p["batch"], p["seqlen_q"])
            assert outputs["lse"].shape == (p["batch"], p["heads_q"], p["seqlen_q"])
        assert outputs["out"].shape == inputs["q"].shape and torch.isnan(outputs["out"].float()).all()
        if suites.size_of(p)["work"] < 2e7:
            ref = TASK.reference(s, inputs)
            assert not torch.isnan(ref["out"]).any()
            allowed = TASK.fallback_errors(s, inputs, ref)
            good = {"out": ref["out"].to(torch.bfloat16), "lse": ref["lse"].clone()}
            assert TASK.within_tolerance(TASK.errors(s, good, ref), allowed) is None


def test_a_task_without_a_sampler_says_so():
    class Bare(Task):
        name = "bare"
        archs = ("cpu",)

    with pytest.raises(TaskError, match="defines no hold-out sampler"):
        Bare().holdout("cpu", 3, 1)
