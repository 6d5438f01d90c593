"""Counterfactual forks, end to end on the CPU task (kernelseek/forks/): a scripted run with two decision
points (evals/experiments/cpu_forks/parent.yaml, --mode none) is forked at the second with a question of
another kind. The fork starts from that decision point's checkpoint (no earlier step runs again: its trace
and the scripted model's call log show it), its workspace is the parent's of that step (an unjudged edit
and a note beside it), its result differs as the script's branch says, a fork killed with SIGKILL resumes
like any run, a person can type the fork's question, and a forks experiment writes its per-kind table and
page from the forks' traces."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest
import yaml
from loop_support import (
    CLI,
    FIXTURES,
    ROOT,
    env,
    events,
    graph_values,
    kill_9_once_logged,
    run_cli,
    shell,
    source,
)

DEMO = ROOT / "evals" / "experiments" / "cpu_forks"
BANK = DEMO / "bank"
LAYER = "LAYER: how is the work of one row split, and could independent accumulators share it?"


def _script(folder: Path) -> Path:
    """The demo's parent script plus a branch that sleeps (for the kill -9 test), as JSON."""
    data = yaml.safe_load((DEMO / "parent.yaml").read_text())
    data["after_question"].append({"contains": "SLOW:", "replies": [
        {"content": "Think first.", "tool_calls": [shell("echo forked >> log.txt; sleep 8")]},
        {"content": "Now the fast one.", "tool_calls": [
            {"name": "write_file", "arguments": {"path": "start.cpp", "content": source("faster")}},
            {"name": "evaluate", "arguments": {}}]},
        {"content": "Done."}]})
    path = folder / "parent.json"
    path.write_text(json.dumps(data, indent=1))
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The recorded parent run (shared by the tests here: recording it is the slow part)."""
    base = tmp_path_factory.mktemp("forks")
    runs = base / "runs"
    variables = {"XDG_DATA_HOME": str(base / "xdg"), "KERNELSEEK_CACHE": str(base / "cache"),
                 "KERNELSEEK_BANK": str(BANK), "KERNELSEEK_RUNS": str(runs)}
    model = f"scripted/{_script(base)}"
    made = run_cli(["run", "rmsnorm_cpu", "--kernel", str(FIXTURES / "start.cpp"), "--model", model, "--mode", "none",
                    "--max-steps", "5", "--run-id", "parent"],
                   env=env(KERNELSEEK_SCRIPTED_LOG=str(base / "parent.log"), **variables))
    assert made.returncode == 0, made.stdout + made.stderr
    return {"base": base, "runs": runs, "env": variables, "parent": runs / "parent"}


def _cli(world, args, log: Path | None = None, **kwargs):
    extra = {"KERNELSEEK_SCRIPTED_LOG": str(log)} if log else {}
    return run_cli(args, env=env(**world["env"], **extra), **kwargs)


def _log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


@pytest.mark.slow
def test_parent_has_two_decision_points(world):
    parent = world["parent"]
    points = events(parent, "decision_point")
    assert [(p["step"], p["kind"]) for p in points] == [(2, "done"), (4, "done")]
    assert not events(parent, "question")  # --mode none: the worker was only told to continue
    judged = [e["candidate"] for e in events(parent, "evaluation")]
    assert sorted(set(judged)) == [0, 1, 2]  # the start, slower (its full judgement is the gate's call), wrong
    wrong, = (e for e in events(parent, "evaluation") if e["candidate"] == 2)
    assert not wrong["correct"]
    assert (parent / "decisions" / "4" / "workspace" / "notes.txt").read_text().strip() == "plan-b"
    assert (parent / "decisions" / "4" / "workspace" / "start.cpp").read_text() == source("wrong")
    assert (parent / "decisions" / "2" / "workspace" / "start.cpp").read_text() == source("slower")
    assert len(_log(world["base"] / "parent.log")) == 5  # one model call per step
    listed = _cli(world, ["fork", "parent", "--list"])
    assert listed.returncode == 0 and "no question" in listed.stdout
    listed = _cli(world, ["fork", "parent", "--list", "--json"])  # stdout: the JSON alone
    assert listed.returncode == 0, listed.stderr
    assert [(p["step"], p["decision_point"]) for p in json.loads(listed.stdout)] == [(2, "done"), (4, "done")]


@pytest.mark.slow
def test_fork_at_the_second_decision_point(world):
    runs, log = world["runs"], world["base"] / "fork1.log"
    made = _cli(world, ["fork", "parent", "--at", "4", "--kind", "layer_shift", "--steps", "2", "--run-id", "f1",
                        "--no-run"], log)
    assert made.returncode == 0, made.stdout + made.stderr
    fork = runs / "f1"
    # the workspace is the parent's at step 4: the unjudged edit and the note, not a judged candidate
    assert (fork / "workspace" / "start.cpp").read_text() == source("wrong")
    assert (fork / "workspace" / "notes.txt").read_text().strip() == "plan-b"
    assert sorted(p.name for p in (fork / "candidates").glob("*.cpp")) == ["0.cpp", "1.cpp"]  # judged by step 4
    assert (fork / "best" / "kernel.cpp").read_text() == source("start")
    info = json.loads((fork / "fork.json").read_text())
    assert info["parent_run"] == "parent" and info["step"] == 4 and info["replaced"] is None
    assert info["question"]["text"] == LAYER and info["question"]["question_kind"] == "layer_shift"
    assert not _log(log)  # making the fork called no model

    driven = _cli(world, ["resume", "f1"], log)
    assert driven.returncode == 0, driven.stdout + driven.stderr
    trace = events(fork)
    assert trace[0]["type"] == "run_start" and trace[0]["step"] == 4 and trace[0]["fork"]["parent_run"] == "parent"
    assert [e["type"] for e in trace[:3]] == ["run_start", "decision_point", "question"]
    assert trace[2]["text"] == LAYER and trace[2]["fork"] is True
    assert min(e["step"] for e in trace) == 4  # nothing of steps 1-3 ran again
    assert [e["step"] for e in trace if e["type"] == "model_call"] == [5, 6]
    assert [(c["reply"], c["branch"]) for c in _log(log)] == [(0, "LAYER:"), (1, "LAYER:")]
    evaluations = events(fork, "evaluation")
    assert {e["candidate"] for e in evaluations} == {2}  # only the new candidate was judged
    assert evaluations[-1]["best"] and evaluations[-1]["judgement"] == "full"
    # the result differs from the parent's as the script's branch says: the fast kernel instead of the broken edit
    assert (fork / "best" / "kernel.cpp").read_text() == source("faster")
    parent_end, = events(world["parent"], "run_end")
    fork_end, = events(fork, "run_end")
    assert fork_end["best_speedup"] > 2 * parent_end["best_speedup"]
    assert fork_end["steps"] == 6 and "step budget" in fork_end["reason"]

    # LangGraph's own fork: the fork's latest checkpoint descends from the parent's checkpoint of step 4
    from graphs import load_graph
    from kernelseek.agent.run_store import Run

    opened = Run.open(fork)
    with opened.checkpointer() as saver:
        graph = load_graph("kernelseek", saver)
        snap = graph.get_state(opened.thread())
        by_id = {s.config["configurable"]["checkpoint_id"]: s for s in graph.get_state_history(opened.thread())}
    lineage, latest = [], snap
    while snap is not None:
        lineage.append(snap.config["configurable"]["checkpoint_id"])
        snap = by_id.get(snap.parent_config["configurable"]["checkpoint_id"]) if snap.parent_config else None
    assert info["checkpoint_id"] in lineage and lineage.index(info["fork_checkpoint_id"]) == \
        lineage.index(info["checkpoint_id"]) - 1
    assert snap is None and latest.values["run_dir"] == str(fork)

    shown = _cli(world, ["trace", "show", "f1"])
    assert shown.returncode == 0 and "FORK of run parent at step 4" in " ".join(shown.stdout.split())
    tree = _cli(world, ["runs", "parent", "--json"])
    family = json.loads(tree.stdout)
    assert family["run"] == "parent" and "f1" in [c["run"] for c in family["children"]]
    assert "f1" in _cli(world, ["runs"]).stdout


@pytest.mark.slow
def test_a_fork_killed_mid_run_resumes(world):
    runs, log = world["runs"], world["base"] / "killed.log"
    proc = subprocess.Popen([*CLI, "fork", "parent", "--at", "4", "--question", "SLOW: take your time here.",
                             "--steps", "3", "--run-id", "killed"], cwd=ROOT,
                            env=env(**world["env"], KERNELSEEK_SCRIPTED_LOG=str(log)),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    fork = runs / "killed"
    # once the fork's first step is inside its sleeping shell call
    kill_9_once_logged(proc, fork / "workspace" / "log.txt", "forked", "the fork's first step")
    before = events(fork)
    assert [e["step"] for e in before if e["type"] == "model_call"] == [5]
    resumed = _cli(world, ["resume", "killed"], log)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    after = events(fork)
    assert after[:len(before)] == before
    assert max(Counter(e["key"] for e in after).values()) == 1
    assert [e["step"] for e in after if e["type"] == "model_call"] == [5, 6, 7]
    assert (fork / "workspace" / "log.txt").read_text().split() == ["forked"]  # the cut-off call was not run again
    assert [c["branch"] for c in _log(log)] == ["SLOW:"] * 3  # step 5's reply was kept, not asked for again
    assert (fork / "best" / "kernel.cpp").read_text() == source("faster")


@pytest.mark.slow
def test_a_person_types_the_forks_question(world):
    typed = "LAYER: typed by a person at the prompt"
    made = _cli(world, ["fork", "parent", "--at", "2", "--run-id", "typed", "--no-run"], input=typed + "\n")
    assert made.returncode == 0, made.stdout + made.stderr
    shown = " ".join(made.stderr.replace("│", " ").split())  # the prompt is not the command's output
    assert "decision point: done" in shown and "at step 2 the run was asked: no question" in shown
    fork = world["runs"] / "typed"
    message, = events(fork, "human_message")
    question, = events(fork, "question")
    assert message["text"] == typed and question["source"] == "human" and question["step"] == 2
    assert (fork / "workspace" / "start.cpp").read_text() == source("slower")  # the parent's at step 2
    values = graph_values(fork)
    assert typed in values["messages"][-1]["content"] and values["step"] == 2
    no_answer = _cli(world, ["fork", "parent", "--at", "2", "--run-id", "typed2", "--no-run"], input="")
    assert no_answer.returncode == 3 and "no question came on stdin" in no_answer.stderr  # errors go to stderr
    assert "Traceback" not in no_answer.stdout + no_answer.stderr and not (world["runs"] / "typed2").exists()


@pytest.mark.slow
def test_forks_experiment_table_and_page(world):
    config = world["base"] / "cpu_forks.yaml"
    data = yaml.safe_load((ROOT / "evals" / "experiments" / "cpu_forks.yaml").read_text())
    data["forks"].update(run="parent", kinds=["layer_shift", "inform", "none"], bank=str(BANK))
    config.write_text(yaml.safe_dump(data))
    out = world["base"] / "experiment"
    done = _cli(world, ["experiment", str(config), "--out", str(out)])
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((out / "results.json").read_text())
    rows = {s["kind"]: s for s in results["per_point"]}
    assert set(rows) == {"layer_shift", "inform", "none"} and all(r["forks"] == 1 for r in rows.values())
    assert rows["layer_shift"]["gain_median"] > 2  # the fast kernel within 2 evaluations
    assert rows["inform"]["gain_median"] == 1.0 and rows["inform"]["wrong_median"] == 1  # judged the broken edit
    assert rows["none"]["gain_median"] == 1.0  # asked nothing: the parent's own course
    for fork in results["forks"]:  # the table's figures are the forks' traces'
        trace = events(out / "forks" / fork["run_id"])
        assert trace[0]["fork"]["step"] == 4
        assert fork["evaluations"] == len({e["candidate"] for e in trace if e["type"] == "evaluation"})
    table = (out / "table.md").read_text()
    assert "layer_shift" in table and "gain within 2 evaluations" in table
    # the scripted worker is named in the table, the plateau step is a column, and three forks are too few
    assert "plateau step (median)" in table and all(r["worker"] == "scripted" for r in rows.values())
    assert results["verdict"]["outcome"] == "insufficient evidence" and "the worker is scripted" in table
    assert "verdict: large gains follow layer-shift and reject-limit questions more than inform ones" in done.stdout
    assert rows["layer_shift"]["plateau_median"] is not None and rows["inform"]["plateau_median"] is None
    analysed = _cli(world, ["trace", "analyze", str(out)])  # the forks folder, as causal evidence
    assert "by forks (same prefix, a different question): insufficient evidence" in analysed.stdout
    assert "the worker is scripted" in analysed.stdout
    page = (out / "index.html").read_text()
    assert 'id="kinds"' in page and 'id="forks"' in page and "data:image/png;base64," in page
    again = _cli(world, ["experiment", str(config), "--out", str(out)])
    assert again.returncode == 0 and "3 finished already" in again.stderr
