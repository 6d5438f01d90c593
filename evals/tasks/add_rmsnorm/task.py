"""add_rmsnorm: fused residual add + RMSNorm in bf16, the norm before every attention and MLP block of
an LLM, as a single-file CUDA kernel.

The entry point is declared in entry.h beside this file. The reference is float32 from the bf16
inputs; the tolerance: the candidate's error against it at most twice the headline baseline's
(torch.compile of the PyTorch reference) on the same inputs, plus a small absolute term. A memory-
bound operator's bar is the bandwidth: the task states the bytes each scenario must move, and the
judge reports the fraction of that floor (bytes / the measured copy bandwidth) each implementation
reached.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import torch

from kernelseek.harness.task import Scenario, Task

from . import baselines as baseline_adapters
from . import scenarios as suites

BF16 = 2  # bytes an element


class AddRmsNorm(Task):
    name = "add_rmsnorm"
    description = (Path(__file__).parent / "README.md").read_text()
    entry_point = "ks_add_rmsnorm"
    header = "entry.h"
    seed = "kernels/seeds/add_rmsnorm.cu"
    archs = ("sm90", "sm100")
    headline_baseline = {"sm90": "torch_compile", "sm100": "torch_compile"}
    # libraries that would do a kernel's work for it, or hide it: refused by the guard, even from the toolkit
    forbidden_libraries = {"CUTLASS": r"cutlass.*", "CuTe": "cute", "cuBLAS": r"cublas.*", "cuDNN": r"cudnn.*",
                           "Thrust": "thrust"}
    compute_dtype = "bf16"  # its inputs and outputs are bf16; the compute floor is the bf16 tensor-core peak

    def scenarios(self, arch: str) -> list[Scenario]:
        return {"sm90": suites.sm90, "sm100": suites.sm100, "tiny": suites.tiny}[arch]()

    def sanitizer_scenarios(self, arch: str) -> list[Scenario]:
        """Small scenarios of every feature, for compute-sanitizer: see scenarios.sanitize."""
        return suites.sanitize(arch)

    def holdout(self, arch: str, n: int, seed: int) -> list[Scenario]:
        """A real model's hidden size, random rows, residual kinds, strides, magnitudes: see scenarios.py."""
        return suites.holdout(arch, n, seed)

    # --- inputs and outputs ----------------------------------------------------------------------
    def make_inputs(self, scenario, seed, device):
        p = scenario.params
        rows, hidden = p["rows"], p["hidden"]
        g_dev = torch.Generator(device=device).manual_seed(seed)

        def rows_of(stride: int, magnitude: float) -> torch.Tensor:
            """[rows, hidden] bf16 with each row's scale drawn around `magnitude`, inside rows `stride` apart."""
            scale = magnitude * torch.empty(rows, 1, device=device).uniform_(0.25, 2.0, generator=g_dev)
            wide = torch.randn(rows, stride, device=device, generator=g_dev) * scale
            return wide.to(torch.bfloat16)[:, :hidden]

        sx, sr = p["strides"][0], p["strides"][1]
        inputs = {"x": rows_of(sx, p["magnitude"]), "eps": p["eps"],
                  "weight": (1.0 + 0.5 * torch.randn(hidden, device=device, generator=g_dev)).to(torch.bfloat16)}
        if p["residual"] != "none":
            inputs["residual"] = rows_of(sr, p["magnitude"])
        return inputs

    def new_outputs(self, scenario, inputs, device):
        p = scenario.params
        rows, hidden = p["rows"], p["hidden"]

        def poisoned(stride: int) -> torch.Tensor:
            return torch.full((rows, stride), float("nan"), dtype=torch.bfloat16, device=device)[:, :hidden]

        outputs = {"out": poisoned(p["strides"][2])}
        if p["residual"] != "none":
            outputs["residual_out"] = poisoned(p["strides"][3])
        return outputs

    def bind(self, lib):
        fn = getattr(lib, self.entry_point)
        fn.restype = ctypes.c_int
        fn.argtypes = ([ctypes.c_void_p] * 5 + [ctypes.c_int] * 2 + [ctypes.c_longlong] * 4
                       + [ctypes.c_float, ctypes.c_void_p])

        def call(scenario, inputs, outputs, stream):
            p = scenario.params
            x, out, residual = inputs["x"], outputs["out"], inputs.get("residual")
            residual_out = outputs.get("residual_out")
            if p["residual"] == "inplace":
                # in place, as an engine calls it: the residual's values are put in the buffer that becomes
                # the new residual (a copy both this call and the baselines make), then updated there
                residual_out.copy_(residual)
                residual = residual_out
            return fn(x.data_ptr(), residual.data_ptr() if residual is not None else None, inputs["weight"].data_ptr(),
                      out.data_ptr(), residual_out.data_ptr() if residual_out is not None else None,
                      p["rows"], p["hidden"], x.stride(0), residual.stride(0) if residual is not None else 0,
                      out.stride(0), residual_out.stride(0) if residual_out is not None else 0,
                      inputs["eps"], stream or None)

        return call

    # --- the reference and the tolerance ---------------------------------------------------------
    def reference(self, scenario, inputs):
        """float32 throughout from the bf16 inputs: h unrounded, its mean square, the scaled output."""
        h = inputs["x"].float()
        if "residual" in inputs:
            h = h + inputs["residual"].float()
        out = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + inputs["eps"]) * inputs["weight"].float()
        ref = {"out": out}
        if "residual" in inputs:
            ref["residual_out"] = h
        return ref

    def errors(self, scenario, outputs, reference):
        """Absolute errors of out (already normalized: O(weight) in every row), and the residual's errors
        relative to each row's largest |h|, so that a row of small values counts as much as a large one."""
        def measures(diff: torch.Tensor, prefix: str) -> dict[str, float]:
            diff = diff.nan_to_num(nan=float("inf"))
            empty = diff.numel() == 0
            return {f"{prefix}_max": 0.0 if empty else float(diff.max()),
                    f"{prefix}_mean": 0.0 if empty else float(diff.mean())}

        ref_out = reference["out"]
        found = measures((outputs["out"].float() - ref_out).abs(), "out")
        found["out_ref_absmax"] = float(ref_out.abs().max()) if ref_out.numel() else 0.0
        found["out_ref_absmean"] = float(ref_out.abs().mean()) if ref_out.numel() else 0.0
        if "residual_out" in reference:
            ref_h = reference["residual_out"]
            row_max = ref_h.abs().amax(-1, keepdim=True).clamp_min(1e-30) if ref_h.numel() else ref_h
            found.update(measures((outputs["residual_out"].float() - ref_h).abs() / row_max, "residual"))
        return found

    def fallback_errors(self, scenario, inputs, reference):
        return self.errors(scenario, baseline_adapters.reference_bf16(scenario, inputs), reference)

    def within_tolerance(self, errors, allowed):
        # two bf16 roundings (up to 2^-8 of a value each) of the largest output: a kernel may normalise h
        # as stored (rounded to bf16, as the eager reference does: h rounded, then out rounded) or h in
        # float32 (as torch.compile may, fusing the round trip away: out rounded only); either is right,
        # and on a short row the baseline's own error can be far below one rounding of the largest value
        out_atol = 2.0**-7 * max(errors["out_ref_absmax"], 1e-3)
        mean_atol = 2.0**-8 * max(errors["out_ref_absmean"], 1e-3)  # the two roundings' error, on average
        rules = [("out_max", 2 * allowed["out_max"] + out_atol), ("out_mean", 2 * allowed["out_mean"] + mean_atol)]
        if "residual_max" in errors:
            rules += [("residual_max", 2 * allowed["residual_max"] + 2.0**-12),
                      ("residual_mean", 2 * allowed["residual_mean"] + 2.0**-16)]
        for key, bound in rules:
            if not errors[key] <= bound:
                return f"{key} error {errors[key]:.3g} exceeds the bound {bound:.3g}"
        return None

    def baselines(self, arch):
        return baseline_adapters.for_arch(arch)

    def flops(self, scenario):
        """Per element: the add, the square and its sum, and two multiplies."""
        p = scenario.params
        return 5.0 * p["rows"] * p["hidden"]

    def bytes_moved(self, scenario):
        """x (and the residual) read once, out (and residual_out) written once, the weight read once; in
        place, also the copy of the residual into its new buffer that the call makes (read and written)."""
        p = scenario.params
        tensors = {"separate": 4, "none": 2, "inplace": 6}[p["residual"]]
        return float(BF16 * (tensors * p["rows"] * p["hidden"] + p["hidden"]))


TASK = AddRmsNorm()
