"""The sanitizer gate without a GPU: compute-sanitizer's recorded outputs parsed into verdicts, the gate's
command lines, its time limit, its refusals, and the task's sanitizer suite."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
from conftest import HAS_GPU, HAS_NVCC
from faults import write_sanitizer_fault
from sanitizer_support import RECORDED, RecordedSource, recorded_report

from kernelseek.harness import load_task
from kernelseek.harness.build import TARGETS
from kernelseek.harness.judge import judge
from kernelseek.harness.sanitize import (
    Completed,
    ProcessSource,
    SanitizerUnavailable,
    find_sanitizer,
    sanitize,
    sanitize_problem,
    sanitizer_command,
    verdict,
)
from kernelseek.harness.sanitizer_log import parse
from kernelseek.harness.task import TaskError

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ["tiny_causal_ragged", "tiny_varlen"]


def recorded(name: str) -> str:
    return (RECORDED / name).read_text()


def tool_verdict(tool: str, log: str, kernel: str = "fault_x.cu", **kwargs):
    completed = kwargs.pop("completed", Completed(0, False))
    results = kwargs.pop("results", [{"scenario": s, "status": 0, "unwritten": 0} for s in SCENARIOS])
    return verdict(tool, recorded(log), kernels=kwargs.pop("kernels", []), display=kernel, completed=completed,
                   results=results, expected=SCENARIOS, timeout_s=300, **kwargs)


# --- parsing the recorded outputs ------------------------------------------------------------------------

def test_the_h200_recordings_of_the_shipped_kernel_are_clean():
    for name in ("memcheck-clean.log", "racecheck-clean.log"):
        log = parse(recorded(name))
        assert log.findings == [] and log.errors == 0, name  # the program's own lines are not the tool's
    assert parse(recorded("racecheck-clean.log")).summary.startswith("RACECHECK SUMMARY: 0 hazards")


def test_memcheck_finding_names_the_access_kernel_file_and_line():
    log = parse(recorded("memcheck-smem_oob.log"))
    assert log.errors == 18 and len(log.findings) == 18
    first = log.findings[0]
    assert first.what == "Invalid __shared__ read of size 4 bytes"
    assert first.where == "kernel.48213.cu:310" and first.kernel == "_Z11ks_smem_oobi"
    assert first.thread == "(0,0,0) in block (0,0,0)"
    assert "Address 0x464 is out of bounds" in first.lines


def test_racecheck_finding_names_both_accesses_and_the_hazards():
    (race,) = parse(recorded("racecheck-smem_race.log")).findings
    assert race.what == "Error: Race reported between Write access" and race.where == "kernel.48213.cu:307"
    assert race.others == ["Read access at kernel.48213.cu:308"] and race.hazards == 256
    assert parse(recorded("racecheck-smem_race.log")).errors == 1


def test_initcheck_counts_what_it_did_not_print():
    log = parse(recorded("initcheck-uninit_read.log"))
    assert log.errors == 576 and len(log.findings) == 20  # --print-limit 20; "556 were not printed" is no finding
    assert log.findings[3].thread == "(3,0,0) in block (0,0,0)"


def test_older_and_squeezed_spellings_parse_too():
    old = ("========= CUDA-MEMCHECK\n"
           "========= Invalid __global__ read of size 8\n"
           "=========     at 0x000000c8 in /home/u/src/helper.cuh:75:void projection<double>(double*, int)\n"
           "=========     by thread (9,0,0) in block (0,0,0)\n"
           "=========     Address 0x000370e8 is out of bounds\n"
           "=========\n"
           "========= ERROR SUMMARY: 1 error\n")
    (finding,) = parse(old).findings
    assert finding.where == "/home/u/src/helper.cuh:75" and finding.kernel == "void projection<double>(double*, int)"
    squeezed = ("========= Error: Race reported between Write access at 0x460 in myapp.cu:41\n"
                "========= and Read access at 0x7a0 in myapp.cu:51 [508 hazards]\n"
                "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n")
    (race,) = parse(squeezed).findings
    assert race.where == "myapp.cu:41" and race.others == ["Read access at myapp.cu:51"] and race.hazards == 508
    warning = ("========= Warning: Race reported between Write access at k()+0x550 in e.cu:100\n"
               "=========     and Read access at k()+0x580 in e.cu:107 [65536 hazards]\n"
               "========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)\n")
    log = parse(warning)
    assert log.errors == 1 and log.findings[0].severity == "warning"
    sync = ("========= Barrier error detected. Divergent thread(s) in warp\n"
            "=========     at ThreadDivergence(int *, int)+0xf0 in divergence.cu:79\n"
            "=========     by thread (37,0,0) in block (0,0,0)\n"
            "========= ERROR SUMMARY: 1 error\n")
    assert parse(sync).findings[0].where == "divergence.cu:79"


# --- verdicts ----------------------------------------------------------------------------------------------

def test_a_finding_fails_the_tool_with_the_kernels_file_and_line():
    v = tool_verdict("memcheck", "memcheck-smem_oob.log", "fault_smem_oob.cu", kernels=["_Z11ks_smem_oobi"])
    assert v.status == "findings" and not v.passed
    assert v.reason.startswith("Invalid __shared__ read of size 4 bytes at fault_smem_oob.cu:310")  # staged name mapped
    assert "(18 reported in all)" in v.reason and len(v.findings) == 5
    race = tool_verdict("racecheck", "racecheck-smem_race.log", "fault_smem_race.cu", kernels=["_Z12ks_smem_racev"])
    assert "fault_smem_race.cu:307 and Read access at fault_smem_race.cu:308" in race.reason


def test_reports_in_other_code_are_counted_apart():
    v = tool_verdict("initcheck", "initcheck-outside.log", kernels=["_Z14ks_read_uninitPKf"])
    assert v.status == "clean" and v.outside == 1 and v.errors == 1
    own = tool_verdict("initcheck", "initcheck-uninit_read.log", "fault_uninit_read.cu", kernels=["_Z14ks_read_uninitPKf"])
    assert own.status == "findings" and own.outside == 0


def test_an_api_error_is_the_candidates():
    v = tool_verdict("memcheck", "memcheck-api_error.log")
    assert v.status == "findings" and "cudaFuncSetAttribute" in v.reason


def test_no_summary_is_a_failure_and_a_kill_is_a_timeout():
    cut = tool_verdict("memcheck", "memcheck-cut.log", completed=Completed(134, False), tail="Segmentation fault")
    assert cut.status == "failed" and "without its summary (exit status 134): Segmentation fault" in cut.reason
    late = tool_verdict("memcheck", "memcheck-cut.log", completed=Completed(None, True), results=[])
    assert late.status == "timeout" and "within 300 s (0 of 2 scenarios run)" in late.reason


def test_a_clean_log_still_needs_every_scenario_written():
    short = tool_verdict("memcheck", "memcheck-clean.log", results=[{"scenario": SCENARIOS[0], "status": 0, "unwritten": 0}])
    assert short.status == "failed" and "stopped before scenario tiny_varlen" in short.reason
    holes = tool_verdict("racecheck", "racecheck-clean.log",
                         results=[{"scenario": s, "status": 0, "unwritten": 7} for s in SCENARIOS])
    assert holes.status == "failed" and "7 output elements were left unwritten" in holes.reason
    assert tool_verdict("synccheck", "synccheck-clean.log").passed


def test_the_report_passes_only_when_every_tool_is_clean():
    clean = recorded_report("k.cu", {}, kernels=[], scenarios=SCENARIOS)
    assert clean.passed and clean.reason is None and "sanitizer gate: passed" in clean.summary()
    racy = recorded_report("fault_smem_race.cu", {"racecheck": "racecheck-smem_race.log"},
                           kernels=["_Z12ks_smem_racev"], scenarios=SCENARIOS)
    assert not racy.passed and racy.reason.startswith("compute-sanitizer racecheck: Error: Race reported")
    data = racy.to_dict()
    assert data["passed"] is False and data["tools"]["memcheck"]["status"] == "clean"


# --- the command, the time limit, the build ------------------------------------------------------------------

def test_the_command_filters_the_candidates_kernels_except_for_initcheck(tmp_path):
    kernels = ["_Z12ks_smem_racev", "_ZN12_GLOBAL__N_121flash_attn_fwd_kernelILi64EEEvNS_6ParamsE"]
    child = [sys.executable, "-m", "kernelseek.harness.sanitize_child", "spec.json"]
    for tool in ("memcheck", "racecheck", "synccheck", "initcheck"):
        command = sanitizer_command("compute-sanitizer", tool, tmp_path / "x.log", kernels, child)
        assert command[:3] == ["compute-sanitizer", "--tool", tool] and command[-len(child):] == child
        assert "--log-file" in command and "--error-exitcode" in command
        filters = [command[i + 1] for i, word in enumerate(command) if word == "--kernel-name"]
        assert filters == ([] if tool == "initcheck" else [f"kne={k}" for k in kernels])
    assert all("-lineinfo" in TARGETS[arch]["flags"] for arch in ("sm90", "sm100"))


def test_a_tool_past_its_time_limit_is_killed(tmp_path):
    fake = tmp_path / "compute-sanitizer"
    fake.write_text("#!/bin/sh\nsleep 60\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    started = os.times().elapsed
    done = ProcessSource().run("memcheck", [str(fake), "--tool", "memcheck"], tmp_path / "memcheck.log", 0.3,
                               dict(os.environ))
    assert done.timed_out and done.returncode is None and os.times().elapsed - started < 20


@pytest.mark.slow
@pytest.mark.skipif(not HAS_NVCC, reason="builds the fixture with nvcc")
def test_sanitize_end_to_end_on_recorded_outputs(tmp_path):
    path, tool, fragment = write_sanitizer_fault("smem_race", tmp_path)
    source = RecordedSource({"racecheck": "racecheck-smem_race.log"})
    report = sanitize("flash_attn_fwd", path, "sm90", scenarios="tiny_*", source=source, log_dir=tmp_path / "logs")
    assert not report.passed and report.scenarios == [s.name for s in load_task("flash_attn_fwd").scenarios("tiny")]
    assert [t for t, v in report.tools.items() if not v.passed] == [tool]
    assert fragment in report.reason and "fault_smem_race.cu:307" in report.reason
    assert "kne=_Z12ks_smem_racev" in source.commands["memcheck"]  # the fixture's kernel, named by the build
    assert (tmp_path / "logs" / "racecheck.log").read_text() == recorded("racecheck-smem_race.log")
    late = sanitize("flash_attn_fwd", path, "sm90", scenarios="tiny_varlen", tools=["memcheck"],
                    source=RecordedSource(timed_out=("memcheck",)))
    assert list(late.tools) == ["memcheck"] and late.tools["memcheck"].status == "timeout"


# --- refusals ----------------------------------------------------------------------------------------------

def kernelseek(*args: str) -> tuple[int, str]:
    """The CLI in this process: (exit code, its output with the line breaks of a narrow terminal undone)."""
    from typer.testing import CliRunner

    from kernelseek.cli import app

    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, " ".join(result.output.split())


def without_sanitizer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH without compute-sanitizer (and no CUDA_HOME); returns a folder on that PATH."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}:{os.path.dirname(sys.executable)}:/usr/bin:/bin")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    return folder


def test_without_compute_sanitizer_the_option_is_refused_in_one_sentence(tmp_path, monkeypatch):
    without_sanitizer(tmp_path, monkeypatch)
    if find_sanitizer() is not None:
        pytest.skip("compute-sanitizer is installed in the CUDA toolkit here")
    for args in (["--sanitize"], ["--sanitize-only"], ["--quick", "--sanitize"]):
        code, output = kernelseek("eval", "kernels/seeds/flash_attn_fwd.cu", "--arch", "sm90", *args)
        assert code == 2 and "compute-sanitizer was not found" in output and "Traceback" not in output, output
    code, output = kernelseek("run", "flash_attn_fwd", "--arch", "sm90", "--sanitize", "--model", "scripted/x.json")
    assert code == 2 and "compute-sanitizer was not found" in output


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU message")
def test_without_a_gpu_the_option_is_refused_in_one_sentence(tmp_path, monkeypatch):
    fake = without_sanitizer(tmp_path, monkeypatch) / "compute-sanitizer"
    fake.write_text("#!/bin/sh\necho 'fake: must never run'; exit 3\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    code, output = kernelseek("eval", "kernels/seeds/flash_attn_fwd.cu", "--arch", "sm90", "--sanitize")
    assert code == 2 and "no usable CUDA GPU" in output and "compute-sanitizer needs the GPU" in output, output
    assert "fake" not in output and "Traceback" not in output
    code, output = kernelseek("eval", "kernels/seeds/rmsnorm_cpu.cpp", "--arch", "cpu", "--sanitize")
    assert code == 2 and "the cpu target has none" in output


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU refusal")
def test_the_harness_refuses_before_judging():
    with pytest.raises(SanitizerUnavailable):
        judge("flash_attn_fwd", "kernels/seeds/flash_attn_fwd.cu", "sm90", quick=True, sanitize={})
    with pytest.raises(SanitizerUnavailable):
        sanitize("flash_attn_fwd", "kernels/seeds/flash_attn_fwd.cu", "sm90")
    assert "cpu target" in sanitize_problem("cpu")


# --- the task's sanitizer suite ---------------------------------------------------------------------------------

def test_the_sanitizer_suite_covers_every_feature():
    task = load_task("flash_attn_fwd")
    for arch, dims in (("sm90", {64, 96, 128, 192, 256}), ("sm100", {64, 96, 128, 256})):
        suite = task.sanitizer_scenarios(arch)
        params = [s.params for s in suite]
        assert {p["head_dim"] for p in params} == dims
        assert any(p["causal"] for p in params) and any(not p["causal"] for p in params)
        assert any(p["softcap"] > 0 for p in params) and any(p["layout"] == "packed_qkv" for p in params)
        assert any(p["heads_q"] > p["heads_kv"] for p in params)  # GQA
        assert any(p["seqlen_q"] == 1 for p in params) and any(p["seqlen_q"] != p["seqlen_k"] for p in params)
        varlen = [p for p in params if p["layout"] == "varlen"]
        assert any(0 in p["seqlens_q"] for p in varlen) and any(0 in p["seqlens_k"] for p in varlen)
        # fewer query rows than a tile and keys past one chunk: the fallback's loop over chunks
        assert any(sum(p["seqlens_q"]) < 128 and max(p["seqlens_k"]) > 256 for p in varlen)
        assert len({s.name for s in suite}) == len(suite)
        work = sum(task.flops(s) for s in suite)
        assert work < 30e9, f"{work / 1e9:.0f} GFLOP: the suite must stay small enough for racecheck"
    for scenario in [s for s in task.sanitizer_scenarios("sm90") if s.name.startswith("san_")]:  # not the suite's
        inputs = task.make_inputs(scenario, 7, "cpu")
        outputs = task.new_outputs(scenario, inputs, "cpu")
        assert outputs["out"].shape == inputs["q"].shape


def test_the_second_gpu_task_names_a_small_sanitizer_suite():
    task = load_task("add_rmsnorm")
    for arch in ("sm90", "sm100"):
        suite = task.sanitizer_scenarios(arch)
        assert len({s.name for s in suite}) == len(suite)
        assert {s.params["residual"] for s in suite} == {"separate", "none", "inplace"}
        assert sum(s.params["rows"] * s.params["hidden"] for s in suite) < 64 << 20
    for scenario in suite[:3]:
        inputs = task.make_inputs(scenario, 7, "cpu")
        task.new_outputs(scenario, inputs, "cpu")


def test_a_task_without_a_sanitizer_suite_is_refused():
    with pytest.raises(TaskError, match="names no sanitizer suite"):
        load_task("rmsnorm_cpu").sanitizer_scenarios("cpu")
