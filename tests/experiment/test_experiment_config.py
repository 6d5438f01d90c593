"""`kernelseek experiment` configuration: the demo config loads; each mistake is one sentence naming the file
and the field, through the CLI too (no traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelseek.experiment import ExperimentConfigError, load_experiment
from kernelseek.experiment.runner import check_parallel

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "evals" / "experiments" / "cpu_demo.yaml"
SCRIPT = ROOT / "evals" / "experiments" / "cpu_demo" / "kernelseek.yaml"


def test_the_demo_config():
    e = load_experiment(DEMO)
    assert e.name == "cpu_demo" and e.arch == "cpu" and e.repeats == 2 and e.seeds == [0, 1]
    assert [g.name for g in e.graphs] == ["kernelseek", "tool_rich", "no_question"]
    assert all(g.model.startswith("scripted/") and Path(g.model.removeprefix("scripted/")).is_file() for g in e.graphs)
    assert e.kernel == str(ROOT / "kernels" / "seeds" / "rmsnorm_cpu.cpp")
    assert e.docs == [str(ROOT / "evals" / "experiments" / "cpu_demo" / "docs")]
    assert [(g.name, r) for g, r in e.jobs()][:4] == [("kernelseek", 0), ("tool_rich", 0), ("no_question", 0),
                                                       ("kernelseek", 1)]
    configs = [e.run_configuration(g, r).validate() for g, r in e.jobs()]
    assert [c.mode for c in configs[:3]] == ["auto", "none", "none"]  # only the question-driven graph asks
    assert {c.max_steps for c in configs} == {6} and [c.seed for c in configs] == [0, 0, 0, 1, 1, 1]
    assert {(c.target_gain, c.arch, c.task) for c in configs} == {(1.2, "cpu", str(ROOT / "evals/tasks/rmsnorm_cpu"))}


def test_the_real_model_config_loads():
    e = load_experiment(ROOT / "evals" / "experiments" / "flash_attn_sm90.yaml")
    assert e.arch == "sm90" and e.repeats == 3 and e.level_basis == "baseline" and e.target == 1.16
    assert {g.model for g in e.graphs} == {"anthropic/claude-sonnet-4-5"}
    assert e.kernel == str(ROOT / "kernels" / "seeds" / "flash_attn_fwd.cu")


def test_one_model_for_every_graph(tmp_path):
    path = tmp_path / "real.yaml"
    path.write_text("task: rmsnorm_cpu\nmodel: anthropic/claude-sonnet-4-5\nbudgets: {max_dollars: 3}\nrepeats: 3\n")
    e = load_experiment(path)
    assert e.name == "real" and e.seeds == [0, 1, 2]
    assert {g.model for g in e.graphs} == {"anthropic/claude-sonnet-4-5"} and len(e.graphs) == 3
    c = e.run_configuration(e.graphs[0], 2)
    assert c.max_dollars == 3 and c.max_steps == 60 and c.seed == 2


BAD = [
    ("task: [unclosed", "not valid YAML at line 1"),
    ("- a list", "an experiment file is a mapping"),
    ("task: rmsnorm_cpu\nmodel: m\nbudgets: {max_steps: 3}\ncolour: red", "the field 'colour' is unknown"),
    ("model: m", "the field 'task' is required"),
    ("task: no_such_task\nmodel: m", "the field 'task': no_such_task: no such task folder"),
    ("task: rmsnorm_cpu\narch: sm90\nmodel: m\nbudgets: {max_steps: 3}", "the field 'arch' is 'sm90'"),
    ("task: rmsnorm_cpu\nkernel: nope.cpp\nmodel: m", "the field 'kernel' names"),
    ("task: rmsnorm_cpu\nbudgets: {max_steps: 3}", "the graph kernelseek needs exactly one worker"),
    ("task: rmsnorm_cpu\nmodel: m\nworker_command: c\nbudgets: {max_steps: 3}", "needs exactly one worker"),
    ("task: rmsnorm_cpu\nmodel: scripted/missing.yaml\nbudgets: {max_steps: 3}", "the field 'model' names the model script"),
    ("task: rmsnorm_cpu\nmodel: m\ngraphs: [kernelseek, fancy]\nbudgets: {max_steps: 3}", "the field 'graphs' names 'fancy'"),
    ("task: rmsnorm_cpu\nmodel: m\ngraphs: {tool_rich: {temperature: 1}}\nbudgets: {max_steps: 3}",
     "the field 'graphs.tool_rich' may hold only"),
    ("task: rmsnorm_cpu\nworker_command: c\ngraphs: [tool_rich]\nbudgets: {max_steps: 3}",
     "the graph tool_rich needs the built-in worker"),
    ("task: rmsnorm_cpu\nmodel: m\nrepeats: 2\nseeds: [1]\nbudgets: {max_steps: 3}", "the field 'seeds' must list 2"),
    ("task: rmsnorm_cpu\nmodel: m\nrepeats: 0\nbudgets: {max_steps: 3}", "the field 'repeats' must be at least 1"),
    ("task: rmsnorm_cpu\nmodel: m\nmode: human\nbudgets: {max_steps: 3}", "the field 'mode' is 'human'"),
    ("task: rmsnorm_cpu\nmodel: m\nbudgets: {max_stepz: 3}", "the field 'budgets.max_stepz' is unknown"),
    ("task: rmsnorm_cpu\nmodel: m\nbudgets: {max_steps: 2.5}", "the field 'budgets.max_steps' must be a whole number"),
    ("task: rmsnorm_cpu\nmodel: m\nbudgets: {max_dollars: null}", "the field 'budgets' sets no limit"),
    ("task: rmsnorm_cpu\nmodel: m\nbudgets: {max_steps: 3}\nlevels: [fast]", "the field 'levels' must list"),
    ("task: rmsnorm_cpu\nmodel: m\nbudgets: {max_steps: 3}\nlevel_basis: fa3", "the field 'level_basis'"),
    ("task: rmsnorm_cpu\nmodel: m\nbudgets: {max_steps: 3}\ntarget_gain: 0.9", "the field 'target_gain' must be above 1"),
    ("task: rmsnorm_cpu\nmodel: m\nbudgets: {max_steps: 3}\ndocs: [nowhere]", "the field 'docs' names"),
    ("task: rmsnorm_cpu\nmodel: m\nbudgets: {max_steps: 3}\nname: a/b", "the field 'name' must be"),
]


@pytest.mark.parametrize(("text", "expected"), BAD)
def test_bad_configs_get_one_sentence(tmp_path, text, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ExperimentConfigError) as caught:
        load_experiment(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and expected in message and "\n" not in message


def test_the_cli_reports_a_bad_config_without_a_traceback(tmp_path):
    from kernelseek.cli import app

    path = tmp_path / "bad.yaml"
    path.write_text("task: rmsnorm_cpu\nmodel: m\nbudgets: {max_steps: 3}\nrepeats: two\n")
    result = CliRunner().invoke(app, ["experiment", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "the field 'repeats' must be a whole number" in " ".join(result.output.split())
    missing = CliRunner().invoke(app, ["experiment", str(tmp_path / "missing.yaml")])
    assert missing.exit_code == 2 and "no such experiment file" in " ".join(missing.output.split())
    assert not (tmp_path / "out").exists()


def test_parallel_is_a_positive_count():
    # how many fit at once is Ray's to decide from the cluster's CPUs and GPUs (tests/engine/test_engine_ray.py)
    with pytest.raises(ExperimentConfigError, match="at least 1"):
        check_parallel(0, "cpu")
    check_parallel(1, "cpu")
    check_parallel(10_000, "sm90")
    check_parallel(None, "sm90")


def test_a_run_folder_from_another_configuration_is_refused(tmp_path):
    from kernelseek.experiment.runner import prepare

    path = tmp_path / "e.yaml"
    path.write_text(f"task: rmsnorm_cpu\nmodel: scripted/{SCRIPT}\ngraphs: [no_question]\nbudgets: {{max_steps: 3}}\n")
    jobs = prepare(load_experiment(path), tmp_path / "out")
    assert [(j.label, j.state) for j in jobs] == [("no_question-r0", "new")]
    assert [(j.label, j.state) for j in prepare(load_experiment(path), tmp_path / "out")] == \
        [("no_question-r0", "partial")]
    path.write_text(path.read_text().replace("max_steps: 3", "max_steps: 4"))
    with pytest.raises(ExperimentConfigError, match="was started with max_steps = 3 and the file now gives 4"):
        prepare(load_experiment(path), tmp_path / "out")
    path.write_text(path.read_text().replace("max_steps: 4", "max_steps: 3") + "repeats: 2\n")
    assert [(j.label, j.state) for j in prepare(load_experiment(path), tmp_path / "out")] == \
        [("no_question-r0", "partial"), ("no_question-r1", "new")]  # more repeats: the new ones are added


def test_the_three_graphs_differ_only_in_questions_and_tools(tmp_path):
    import json

    from graphs import load_graph
    from kernelseek.toolrich import TOOLS

    graphs = {name: load_graph(name) for name in ("kernelseek", "tool_rich", "no_question")}
    assert {name: g.name for name, g in graphs.items()} == {n: n for n in graphs}
    nodes = {name: set(g.get_graph().nodes) for name, g in graphs.items()}
    assert nodes["kernelseek"] - {"questioner"} == nodes["tool_rich"] - {"nudge"} == nodes["no_question"] - {"nudge"}
    assert "questioner" not in nodes["tool_rich"] | nodes["no_question"]  # the ablations never ask
    assert [t.name for t in TOOLS] == ["profile", "compiled_code", "search_docs", "lessons"]
    # what the worker is offered: the tool-rich graph's extra tools, and only there
    model = tmp_path / "s.json"
    model.write_text(json.dumps([{"content": "recall", "tool_calls": [{"name": "lessons",
                                                                       "arguments": {"action": "recall"}}]}]))
    for name, graph in graphs.items():
        final = graph.invoke({}, context={"task": "rmsnorm_cpu", "model": f"scripted/{model}", "mode": "none",
                                          "judge_start": False, "max_steps": 1, "runs_dir": str(tmp_path / "runs"),
                                          "run_id": name})
        answer = final["messages"][-1]["content"]
        assert answer.startswith("error: there is no tool 'lessons'") == (name != "tool_rich"), (name, answer)
    assert set(json.loads((ROOT / "langgraph.json").read_text())["graphs"]) == set(graphs)
