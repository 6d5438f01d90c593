"""Experiment provenance: each graph's model or command, scripted models marked plainly, the git commit and
the package versions, in results.json, table.md and the page."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kernelseek.experiment.config import load_experiment
from kernelseek.experiment.report import write_report

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # draws the (empty) curves with matplotlib
@pytest.mark.filterwarnings("error::UserWarning")  # an empty plot draws no legend rather than warning
def test_results_name_each_graphs_worker_and_what_produced_them(tmp_path):
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
    assert table.startswith("**Scripted models** (kernelseek)")
    assert "- tool_rich: model anthropic/claude-sonnet-4-5" in table and f"commit {head[:12]}" in table
    page = (tmp_path / "out" / "index.html").read_text()
    assert "<b>Scripted models</b>" in page and 'id="provenance"' in page
