"""Preflight: `run` and `experiment` refuse a GPU target without a usable GPU, and a model without its
credentials, before anything is judged or any model called; a scripted model needs no credentials."""

from __future__ import annotations

import pytest
from conftest import HAS_GPU
from loop_support import invoke, script

from kernelseek.preflight import credentials_problem

REPLY = [{"content": "done", "tool_calls": []}]


@pytest.mark.skipif(HAS_GPU, reason="checks the refusal without a GPU")
def test_run_on_a_gpu_target_without_a_gpu_is_refused_before_judging(tmp_path):
    model = script(tmp_path / "s.json", REPLY)
    runs = tmp_path / "runs"
    result = invoke(["run", "flash_attn_fwd", "--arch", "sm90", "--model", model, "--runs-dir", str(runs)])
    output = " ".join(result.output.split())
    assert result.exit_code == 2 and output.startswith("error:") and "no usable CUDA GPU" in output
    assert "would judge every candidate incorrect" in output
    assert not runs.exists() or not any(runs.iterdir())  # no run was made, nothing judged


def test_a_model_without_its_key_is_refused_before_judging(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    runs = tmp_path / "runs"
    result = invoke(["run", "rmsnorm_cpu", "--model", "anthropic/claude-sonnet-4-5", "--runs-dir", str(runs)])
    output = " ".join(result.output.split())
    assert result.exit_code == 2 and "needs $ANTHROPIC_API_KEY, which is not set" in output, output
    assert "Traceback" not in output and output.count("error:") == 1
    assert not runs.exists() or not any(runs.iterdir())


def test_credentials_known_to_litellm(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert "$OPENAI_API_KEY" in credentials_problem("openai/gpt-5")
    assert credentials_problem("openai/gpt-5", {"api_key": "sk-test"}) is None  # --model-arg api_key=...
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert credentials_problem("openai/gpt-5") is None
    assert credentials_problem("scripted/anything.yaml") is None  # the scripted provider needs none
    assert credentials_problem(None) is None  # an external worker command


def test_experiment_checks_every_graphs_model_before_any_run(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = script(tmp_path / "s.json", REPLY)
    config = tmp_path / "exp.yaml"
    config.write_text(f"name: x\ntask: rmsnorm_cpu\nbudgets: {{max_steps: 2}}\n"
                      f"graphs:\n  kernelseek: {{model: {model}}}\n  no_question: {{model: openai/gpt-5}}\n")
    out = tmp_path / "out"
    result = invoke(["experiment", str(config), "--out", str(out)])
    output = " ".join(result.output.split())
    assert result.exit_code == 2 and "the model openai/gpt-5 needs $OPENAI_API_KEY" in output, output
    assert not out.exists()


@pytest.mark.parametrize("ref, words", [
    ("mysql://me@db/x", "use sqlite (the default, a file in the run folder) or a PostgreSQL URL"),
    ("postgresql://me:secret@127.0.0.1:1/nothing", "postgresql://me:***@127.0.0.1:1/nothing: cannot connect"),
])
def test_a_bad_checkpointer_is_one_sentence_and_makes_no_run(tmp_path, ref, words):
    model = script(tmp_path / "s.json", REPLY)
    runs = tmp_path / "runs"
    result = invoke(["run", "rmsnorm_cpu", "--model", model, "--unconfined", "--checkpointer", ref,
                     "--runs-dir", str(runs)])
    output = " ".join(result.output.split())
    assert result.exit_code == 2 and words in output and "secret" not in output, output
    assert not runs.exists() or not any(runs.iterdir())
