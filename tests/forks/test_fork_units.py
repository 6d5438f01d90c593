"""The parts of counterfactual forks that need no run driven: the scripted model's branches, the question a
fork draws, the workspace snapshots, the family tree, and the one-sentence errors of `kernelseek fork` and
of a forks experiment file (tests/forks/test_fork.py drives real forks end to end)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from loop_support import ROOT, invoke

from kernelseek.agent import snapshots
from kernelseek.agent.prompts import NUDGE, QUESTION
from kernelseek.experiment.config import ExperimentConfigError
from kernelseek.forks import family
from kernelseek.forks import question as pick
from kernelseek.forks.points import DecisionPoint, ForkError
from kernelseek.models.scripted import ScriptError, load_script, pick_reply
from kernelseek.trace import TraceWriter

BANK = ROOT / "evals" / "experiments" / "cpu_forks" / "bank"


def _asked(text: str) -> dict:
    return {"role": "user", "content": QUESTION.format(question=text)}


def test_scripted_branches_follow_the_latest_matching_question(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"replies": [{"content": "m0"}, {"content": "m1"}, {"content": "m2"}],
                                "after_question": [{"contains": "layer", "replies": [{"content": "b0"},
                                                                                     {"content": "b1"}]}]}))
    model = str(path)
    system = [{"role": "system", "content": "rules"}, {"role": "user", "content": "begin"}]
    assert pick_reply(model, system)[:2] == (0, None)
    turn = [*system, {"role": "assistant", "content": "m0"}]
    assert pick_reply(model, [*turn, _asked("What about the LAYER below?")])[1:] == ("layer", {"content": "b0"})
    later = [*turn, _asked("the layer"), {"role": "assistant", "content": "b0"},
             {"role": "user", "content": NUDGE.format(best="x", target="y")}]
    assert pick_reply(model, later)[:2] == (1, "layer")  # a later nudge matching no branch keeps the branch
    assert pick_reply(model, [*turn, _asked("something else")])[:2] == (1, None)  # the main line
    with pytest.raises(ScriptError, match="the branch 'layer' has 2 replies"):
        pick_reply(model, [*later, {"role": "assistant", "content": "b1"}])
    path.write_text(json.dumps({"replies": [], "after_question": [{"replies": []}]}))
    with pytest.raises(ScriptError, match="'after_question' must list branches"):
        load_script(path)


def _point(asked: dict | None = None, kind: str = "done") -> DecisionPoint:
    return DecisionPoint(step=4, kind=kind, detail="the worker ended its turn", worker_words="", asked=asked)


def test_the_question_a_fork_draws():
    first = pick.of_kind("layer_shift", _point(), seed=0, bank_dir=BANK)
    assert first == pick.of_kind("layer_shift", _point(), seed=0, bank_dir=BANK)  # a seed draws the same
    assert first["question_kind"] == "layer_shift" and first["source"] == "bank"
    assert pick.of_kind("none", _point(), bank_dir=BANK) == pick.nothing()
    replaced = {"text": "x", "source": "bank", "bank_id": "ls-launch-cost", "question_kind": "layer_shift"}
    drawn = {pick.of_kind("layer_shift", _point(replaced), seed=s)["bank_id"] for s in range(20)}
    assert "ls-launch-cost" not in drawn and len(drawn) > 1  # the real bank: never the replaced one
    with pytest.raises(ForkError, match="--kind sideways: use one of layer_shift"):
        pick.of_kind("sideways", _point())
    with pytest.raises(ForkError, match="--bank-id nope: the bank has no such question"):
        pick.from_bank("nope")
    assert pick.typed("  ") == pick.nothing() and pick.typed("x" * 600)["text"] == "x" * 500


def test_workspace_snapshot_once_and_bounded(tmp_path, monkeypatch):
    work = tmp_path / "workspace"
    (work / "sub").mkdir(parents=True)
    (work / "kernel.cpp").write_text("v1")
    (work / "sub" / "note.txt").write_text("n")
    (work / "big.bin").write_bytes(b"0" * 64)
    (work / "link").symlink_to(work / "kernel.cpp")
    monkeypatch.setattr(snapshots, "MAX_FILE_BYTES", 32)
    folder = snapshots.save(tmp_path, work, 3)
    saved = snapshots.saved_workspace(tmp_path, 3)
    assert (saved / "kernel.cpp").read_text() == "v1" and (saved / "sub" / "note.txt").read_text() == "n"
    assert not (saved / "big.bin").exists() and not (saved / "link").exists()
    skipped = json.loads((folder / "skipped.json").read_text())
    assert any(s.startswith("big.bin") for s in skipped) and any(s.startswith("link") for s in skipped)
    (work / "kernel.cpp").write_text("v2")  # a questioner replayed later finds the first copy
    snapshots.save(tmp_path, work, 3)
    assert (saved / "kernel.cpp").read_text() == "v1"
    assert snapshots.saved_workspace(tmp_path, 5) is None


def _fake_run(folder: Path, points: list[int], fork_of: Path | None = None, step: int = 0) -> Path:
    folder.mkdir(parents=True)
    config = {"task": str(ROOT / "evals" / "tasks" / "rmsnorm_cpu"), "kernel": str(ROOT / "kernels" / "seeds" /
              "rmsnorm_cpu.cpp"), "arch": "cpu", "model": "scripted/x.json", "mode": "none"}
    (folder / "config.json").write_text(json.dumps(config))
    trace = TraceWriter(folder / "trace.jsonl")
    for s in points:
        trace.write("decision_point", step=s, key=f"{s}:questioner:decision", kind="done", detail="d", worker_words="")
    if fork_of is not None:
        (folder / family.FORK_FILE).write_text(json.dumps({"parent_run": fork_of.name, "parent_dir": str(fork_of),
                                                           "step": step, "question": {"text": "q"}}))
        family.note_child(fork_of, {"run": folder.name, "dir": str(folder), "step": step})
    return folder


def test_family_tree(tmp_path):
    root = _fake_run(tmp_path / "root", [2, 4])
    child = _fake_run(tmp_path / "child", [4], fork_of=root, step=4)
    grandchild = _fake_run(tmp_path / "elsewhere" / "grand", [6], fork_of=child, step=6)
    assert family.root_of(grandchild) == root.resolve()
    tree = family.tree(root)
    assert [n.dir.name for n in tree.children] == ["child"]
    assert [n.dir.name for n in tree.children[0].children] == ["grand"]
    shown = invoke(["runs", "--runs-dir", str(tmp_path), "--json"])
    assert shown.exit_code == 0
    trees = [json.loads(line) for line in shown.output.splitlines()]
    assert [t["run"] for t in trees] == ["root"] and trees[0]["children"][0]["children"][0]["run"] == "grand"


def test_fork_command_bad_input_is_one_sentence(tmp_path):
    _fake_run(tmp_path / "runs" / "p", [2, 4])
    runs = str(tmp_path / "runs")
    wrong_step = invoke(["fork", "p", "--at", "3", "--kind", "inform", "--runs-dir", runs])
    assert wrong_step.exit_code == 2
    assert "run p has no decision point at step 3; its decision points are at steps 2, 4" in \
        " ".join(wrong_step.output.split())
    both = invoke(["fork", "p", "--at", "2", "--kind", "inform", "--question", "q", "--runs-dir", runs])
    assert both.exit_code == 2 and "at most one of --question, --bank-id and --kind" in both.output
    no_step = invoke(["fork", "p", "--runs-dir", runs])
    assert no_step.exit_code == 2 and "give --at STEP" in no_step.output
    unknown = invoke(["fork", "nope", "--at", "2", "--runs-dir", runs])
    assert unknown.exit_code == 2 and "no such run" in unknown.output
    no_checkpoints = invoke(["fork", "p", "--at", "2", "--kind", "none", "--runs-dir", runs])
    assert no_checkpoints.exit_code == 2 and "run p has no checkpoints" in no_checkpoints.output
    listed = invoke(["fork", "p", "--list", "--runs-dir", runs])
    assert listed.exit_code == 0 and "decision points of run p" in listed.output
    for result in (wrong_step, both, no_step, unknown, no_checkpoints):
        assert "Traceback" not in result.output


@pytest.mark.parametrize(("forks", "message"), [
    ({"run": "p", "at": [3], "budgets": {"max_steps": 2}}, "names step 3, which is not a decision point of run p"),
    ({"run": "p", "colour": 1}, "the field 'forks.colour' is unknown"),
    ({"run": "p", "kinds": ["sideways"], "budgets": {"max_steps": 2}}, "'forks.kinds' must list question kinds"),
    ({"run": "p"}, "'forks.budgets' must set each fork's budget"),
    ({"run": "p", "budgets": {"max_steps": 0}}, "'forks.budgets.max_steps' must be a whole number above 0"),
    ({"run": "p", "budgets": {"max_steps": 2}, "mode": "human"}, "'forks.mode' must be none or auto"),
    ({"run": "p", "budgets": {"max_steps": 2}, "repeats": 0}, "'forks.repeats' must be a whole number, at least 1"),
    ({"run": "missing", "budgets": {"max_steps": 2}}, "the field 'forks.run': missing: no such run"),
])
def test_forks_experiment_file_errors(tmp_path, forks, message):
    from kernelseek.experiment.forks import load_forks_experiment

    _fake_run(tmp_path / "runs" / "p", [2, 4])
    config = tmp_path / "f.yaml"
    config.write_text(json.dumps({"name": "f", "forks": forks}))
    with pytest.raises(ExperimentConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_forks_experiment(config, runs_dir=tmp_path / "runs")


def test_forks_experiment_file_holds_only_forks(tmp_path):
    from kernelseek.experiment.forks import is_forks_experiment, load_forks_experiment

    config = tmp_path / "f.yaml"
    config.write_text(json.dumps({"forks": {"run": "p"}, "graphs": ["kernelseek"]}))
    assert is_forks_experiment(config)
    with pytest.raises(ExperimentConfigError, match="the field 'graphs' cannot be in a forks experiment"):
        load_forks_experiment(config)
    result = invoke(["experiment", str(config)])
    assert result.exit_code == 2 and "cannot be in a forks experiment" in result.output
