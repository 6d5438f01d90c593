"""Experiment provenance: each graph's model or command, scripted models marked plainly, the git commit and
the package versions, in results.json, table.md and the page."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from kernelseek.commands.experiment import _print_table as print_table
from kernelseek.experiment.config import load_experiment
from kernelseek.experiment.report import write_report

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.filterwarnings("error::UserWarning")  # an empty plot draws no legend rather than warning
def test_results_name_each_graphs_worker_and_what_produced_them(tmp_path, capsys):
    config = tmp_path / "exp.yaml"
    script = tmp_path / "s.json"
    script.write_text("[]")
    config.write_text("name: prov\ntask: rmsnorm_cpu\nbudgets: {max_steps: 2}\ngraphs:\n"
                      "  kernelseek: {model: scripted/s.json}\n  tool_rich: {model: anthropic/claude-sonnet-4-5}\n"
                      "  no_question: {worker_command: 'claude -p {prompt}'}\n")
    results = write_report(load_experiment(config), [], tmp_path / "out", missing=[])
    prov = results["provenance"]
    assert prov["workers"]["kernelseek"]["kind"] == "scripted" and prov["scripted"] == ["kernelseek"]
    assert prov["workers"]["tool_rich"] == {"kind": "model", "name": "anthropic/claude-sonnet-4-5"}
    assert prov["workers"]["no_question"] == {"kind": "command", "name": "claude -p {prompt}"}
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert prov["git"]["commit"] == head and isinstance(prov["git"]["dirty"], bool)
    assert prov["packages"]["torch"] and prov["packages"]["langgraph"] and prov["packages"]["kernelseek"]
    assert json.loads((tmp_path / "out" / "results.json").read_text())["provenance"] == json.loads(json.dumps(prov))
    table = (tmp_path / "out" / "table.md").read_text()
    assert table.startswith("**SCRIPTED models (kernelseek): their replies are fixed")
    assert "- tool_rich: model anthropic/claude-sonnet-4-5" in table and f"commit {head[:12]}" in table
    page = (tmp_path / "out" / "index.html").read_text()
    assert "<b>SCRIPTED models (kernelseek): their replies" in page and 'id="provenance"' in page
    capsys.readouterr()
    print_table(tmp_path / "out")  # the terminal's table is headed by the same sentence (in a pipe: on stderr)
    shown = capsys.readouterr()
    assert shown.err.startswith("SCRIPTED models (kernelseek): their replies are fixed")
    assert shown.out.startswith("graph\truns\t") and "SCRIPTED" not in shown.out


def test_the_hardware_is_named_where_results_are_made_and_where_runs_were_judged(tmp_path):
    """On this machine (no GPU, no driver) the CPU is named and the GPU list is empty, not an error; a run's
    judgement records its device, and the experiment's provenance names it per run."""
    from kernelseek.experiment.metrics import RunMetrics
    from kernelseek.harness import gpu_info
    from kernelseek.harness.child import device_info

    machine = gpu_info.machine()
    assert machine["cpu"]["name"] and machine["cpu"]["cpus"] == len(os.sched_getaffinity(0))
    if not machine["gpus"]:
        assert gpu_info.describe(machine).startswith("no GPU; CPU ")
    record = device_info("cpu")
    assert record["cpu"] == gpu_info.cpu() and gpu_info.describe_device(record) == f"CPU {record['cpu']['name']}"
    gpu = {"arch": "sm90", "name": "NVIDIA H100 80GB HBM3", "cuda": "13.0", "driver": "580.159.04",
           "clocks": {"clocks.max.sm": "1980 MHz", "driver_version": "580.159.04"}}
    assert gpu_info.describe_device(gpu) == "NVIDIA H100 80GB HBM3 (driver 580.159.04, CUDA 13.0, SM clock max 1980 MHz)"

    config = tmp_path / "exp.yaml"
    config.write_text("name: hw\ntask: rmsnorm_cpu\nbudgets: {max_steps: 2}\ngraphs:\n  kernelseek: {model: m/x}\n")
    run = RunMetrics(run_id="r1", graph="kernelseek", repeat=0, seed=0, finished=True, end_reason="target",
                     start_speedup=1.0, best_speedup=1.0, steps=1, cost_usd=0.0, tokens=0, unpriced_calls=0,
                     evaluations=0, wrong=0, tool_calls=0, tool_counts={}, questions=0, decision_points=0,
                     curve=[], hardware=gpu_info.describe_device(gpu))
    results = write_report(load_experiment(config), [run], tmp_path / "out", missing=[])
    assert results["provenance"]["hardware"] == json.loads(json.dumps(machine))
    assert results["provenance"]["judged_on"] == {"r1": gpu_info.describe_device(gpu)}
    table = (tmp_path / "out" / "table.md").read_text()
    assert f"Judged on {gpu_info.describe_device(gpu)} (1 run); the report written on " in table
    assert "hardware: Judged on NVIDIA H100" in (tmp_path / "out" / "index.html").read_text()


def test_nvidia_smi_readings_are_those_of_the_gpu_in_use_by_its_bus_id(tmp_path, monkeypatch):
    """nvidia-smi lists every GPU whatever CUDA_VISIBLE_DEVICES says; the row read is the one at the driver's
    bus id for this process's device (here a stand-in nvidia-smi with two GPUs)."""
    from kernelseek.harness import gpu_info

    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\n"
                    "echo '00000000:18:00.0, 580.159.04, 1755 MHz, 1980 MHz, 2619 MHz, 2619 MHz, 41, 120.5 W, 700.00 W'\n"
                    "echo '00000000:2A:00.0, 580.159.04, 345 MHz, 1980 MHz, 2619 MHz, 2619 MHz, 33, 70.1 W, 700.00 W'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    second = gpu_info.smi("0000:2a:00.0")
    assert second["clocks.sm"] == "345 MHz" and second["driver_version"] == "580.159.04"
    assert second["temperature.gpu"] == "33" and second["clocks.max.sm"] == "1980 MHz"
    assert gpu_info.smi("0000:99:00.0") == {} and gpu_info.smi() == {}  # not this machine's; which of two?
