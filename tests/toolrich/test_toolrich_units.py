"""The tool-rich graph's extra tools on their own (kernelseek/toolrich/): compiled-code digest, profiler summary,
document retrieval, lessons store — and the same tools as the worker calls them, inside a run's workspace."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from conftest import HAS_NVCC

from kernelseek.agent.tools import ToolContext
from kernelseek.settings import Configuration
from kernelseek.toolrich import TOOLS, LessonStore, code_digest, profile_summary, search_documents
from kernelseek.toolrich.digest import describe_mix, parse_sass, sass_category
from kernelseek.toolrich.profiler import parse_ncu_csv, summarize

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "toolrich"
CPU_SEED = ROOT / "kernels" / "seeds" / "rmsnorm_cpu.cpp"
GPU_SEED = ROOT / "kernels" / "seeds" / "flash_attn_fwd.cu"
CPU_TASK = ROOT / "evals" / "tasks" / "rmsnorm_cpu"
GPU_TASK = ROOT / "evals" / "tasks" / "flash_attn_fwd"


def fake_tool(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


# --- compiled-code digest ---------------------------------------------------------------------------

def test_parse_sass_counts_opcodes_per_function():
    functions = parse_sass((FIXTURES / "sample.sass").read_text())
    assert list(functions) == ["_Z6kernelPfS_", "_Z5otherv"]
    kernel = functions["_Z6kernelPfS_"]
    assert kernel["FFMA"] == 2 and kernel["BRA"] == 2 and kernel["HGMMA"] == 1 and kernel["LDG"] == 1
    assert sum(kernel.values()) == 14 and functions["_Z5otherv"] == {"IMAD": 1, "EXIT": 1}
    assert sass_category("HGMMA") == "tensor core" and sass_category("LDSM") == "shared memory"
    assert sass_category("UTMALDG") == "bulk copy / TMA" and sass_category("LDG") == "global / local memory"
    mix = "\n".join(describe_mix(kernel))
    assert "14 instructions" in mix and "tensor core 1 (7%)" in mix and "FFMA 2" in mix


def test_cpu_digest_is_the_entry_points_x86_mix():
    text = code_digest(CPU_SEED, "cpu", entry_point="ks_rmsnorm")
    assert "x86 instruction mix of ks_rmsnorm" in text and "instructions" in text and "most frequent:" in text
    assert "unavailable" not in text


def test_digest_of_a_kernel_that_does_not_build(tmp_path):
    bad = tmp_path / "bad.cpp"
    bad.write_text("this is not C++")
    assert code_digest(bad, "cpu", entry_point="ks_rmsnorm").startswith("unavailable: the candidate does not build")


@pytest.mark.slow
@pytest.mark.skipif(not HAS_NVCC, reason="needs nvcc")
def test_gpu_digest_registers_without_cuobjdump_and_sass_with_one(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSEEK_CUOBJDUMP", str(tmp_path / "missing"))
    text = code_digest(GPU_SEED, "sm90")
    assert "flash_attn_fwd_kernel" in text and " registers, " in text and "spills:" in text
    assert "SASS instruction mix: unavailable: cuobjdump was not found" in text
    # a stand-in cuobjdump that prints a real-format dump: the mix is parsed from what it prints
    fake = fake_tool(tmp_path, "cuobjdump", f"cat {FIXTURES / 'sample.sass'}")
    monkeypatch.setenv("KERNELSEEK_CUOBJDUMP", str(fake))
    text = code_digest(GPU_SEED, "sm90")
    assert "SASS instruction mix (cuobjdump --dump-sass):" in text and "_Z6kernelPfS_:" in text
    assert "14 instructions" in text


# --- profiler -----------------------------------------------------------------------------------------

def test_profiler_says_why_it_is_unavailable(tmp_path, monkeypatch):
    assert profile_summary(CPU_SEED, "cpu", CPU_TASK) == \
        "unavailable: the profiler needs a GPU target and this run's target is cpu."
    monkeypatch.setenv("KERNELSEEK_NCU", str(tmp_path / "missing"))
    assert profile_summary(GPU_SEED, "sm90", GPU_TASK).startswith("unavailable: Nsight Compute (ncu) was not found")
    monkeypatch.setenv("KERNELSEEK_NCU", str(fake_tool(tmp_path, "ncu", "exit 1")))
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    assert profile_summary(GPU_SEED, "sm90", GPU_TASK) == "unavailable: this machine has no usable CUDA GPU."


def test_ncu_csv_is_condensed_per_kernel():
    rows = parse_ncu_csv((FIXTURES / "details.csv").read_text())
    assert len(rows) == 14
    text = "\n".join(summarize(rows))
    assert text.count("kernel flash_attn_fwd_kernel<128>(Params): grid (4, 8, 2), block (128, 1, 1) "
                      "(2 launches profiled, the last shown)") == 1
    assert "GPU Speed Of Light Throughput: Duration 12.60 us; Compute (SM) Throughput 21.37 %; Memory Throughput" in text
    assert "Occupancy: Achieved Occupancy 6.1 %; Theoretical Occupancy 25 %" in text
    assert "advice [SOLBottleneck, est. 92.5%] This kernel grid is too small" in text


# --- retrieval ------------------------------------------------------------------------------------------

def test_search_documents(tmp_path):
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# Tiling\n\nLarger tiles raise arithmetic intensity.\n" + "filler line\n" * 30)
    (docs / "sub" / "b.txt").write_text("Shared memory bank conflicts serialize accesses.\nPad the row stride.\n")
    (docs / "page.html").write_text("<p>Use <b>warp shuffles</b> for reductions</p>")
    (docs / "image.png").write_bytes(b"\x89PNG bank conflicts")
    text = search_documents([docs], "bank conflicts in shared memory")
    assert text.splitlines()[0].startswith(f"--- {docs / 'sub' / 'b.txt'}:1")
    assert "image.png" not in text
    assert "warp shuffles for reductions" in search_documents([docs], "shuffle reductions warp")
    assert search_documents([docs], "nonexistentword").startswith("no passage matches")
    assert search_documents([], "x").startswith("unavailable: no documents folder is configured")
    assert "does not exist" in search_documents([tmp_path / "nope"], "x")


# --- lessons ---------------------------------------------------------------------------------------------

def test_lessons_store(tmp_path):
    from kernelseek.trace import TraceWriter

    store = LessonStore(tmp_path / "lessons.json")
    assert store.recall() == "no lessons recorded yet."
    store.record("float accumulation kept the error in bounds", "worked", step=3)
    store.record("float accumulation kept the error in bounds", "worked", step=3)  # a replayed step: once
    store.record("unrolling by 16 spilled registers", "failed", step=5)
    with pytest.raises(ValueError, match="outcome 'maybe' is unknown"):
        store.record("x", "maybe")
    with pytest.raises(ValueError, match="empty"):
        store.record("  ")
    assert [e["outcome"] for e in json.loads((tmp_path / "lessons.json").read_text())] == ["worked", "failed"]
    trace = TraceWriter(tmp_path / "trace.jsonl")
    common = dict(path="c", sha256="s", report="r")
    trace.write("evaluation", step=0, key="a", candidate=0, parent=None, judgement="full", correct=True,
                speedup=1.5, reason=None, best=True, **common)
    trace.write("evaluation", step=2, key="b", candidate=1, parent=0, judgement="quick", correct=False,
                speedup=None, reason="1 of 3 scenarios failed", best=False, **common)
    text = store.recall(tmp_path / "trace.jsonl")
    assert "[worked] float accumulation" in text and "[failed] unrolling" in text
    assert "candidate 0 (the starting kernel): correct, 1.500x (full) — became the best" in text
    assert "candidate 1 (from 0): INCORRECT: 1 of 3 scenarios failed" in text


# --- the tools as the worker calls them -------------------------------------------------------------------

def test_tools_inside_a_run_workspace(tmp_path, monkeypatch):
    run = tmp_path / "run"
    (run / "workspace").mkdir(parents=True)
    (run / "workspace" / "rmsnorm_cpu.cpp").write_text(CPU_SEED.read_text())
    Configuration(task=str(CPU_TASK), kernel=str(CPU_SEED), arch="cpu", model="scripted/x").save(run / "config.json")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text("One reciprocal per row instead of a division per element.\n")
    (run / "toolrich.json").write_text(json.dumps({"docs": [str(docs)]}))
    ctx = ToolContext(run / "workspace", timeout_s=60, output_cap=5000)
    tools = {t.name: t for t in TOOLS}
    assert set(tools) == {"profile", "compiled_code", "search_docs", "lessons"}
    assert all(t.schema()["function"]["parameters"]["type"] == "object" for t in TOOLS)

    text, ok = tools["compiled_code"].call({}, ctx)
    assert ok and "x86 instruction mix of ks_rmsnorm" in text
    text, ok = tools["profile"].call({}, ctx)
    assert ok and text.startswith("unavailable:")
    text, ok = tools["search_docs"].call({"query": "reciprocal division"}, ctx)
    assert ok and "notes.md:1" in text
    (run / "toolrich.json").unlink()
    monkeypatch.setenv("KERNELSEEK_DOCS", str(docs))
    assert "notes.md:1" in tools["search_docs"].call({"query": "reciprocal"}, ctx)[0]
    text, ok = tools["lessons"].call({"action": "record", "lesson": "division is slow", "outcome": "failed"}, ctx)
    assert ok and text.startswith("recorded [failed] lesson 1")
    assert "[failed] division is slow" in tools["lessons"].call({"action": "recall"}, ctx)[0]
    text, ok = tools["lessons"].call({"action": "forget"}, ctx)
    assert not ok and "unknown" in text
    text, ok = tools["compiled_code"].call({"path": "missing.cpp"}, ctx)
    assert not ok and "not in the workspace" in text
    assert os.path.isfile(run / "lessons.json")
