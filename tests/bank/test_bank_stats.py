"""Statistics belong to the user, not the repository: outcomes go to the user's data directory (or
--bank-stats), keyed by the run's UUID; a scripted-model run records nothing unless asked; `bank learn`
knows a copied run folder as the session it was copied from."""

from __future__ import annotations

import json
import shutil
import subprocess

from loop_support import ROOT, bank_copy, events, invoke, script

from kernelseek.bank.learn import learn
from kernelseek.bank.model import stats_path
from kernelseek.bank.policy import run_stats_file
from kernelseek.settings import Configuration
from kernelseek.trace import TraceWriter

DONE = [{"content": "I have finished: this is as far as I can take it."}, {"content": "Still finished."}]


def _git_status() -> str:
    """What git sees changed where a run could write into the repository: the bank and a runs folder."""
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--", "bank", "runs"], cwd=ROOT,
                          capture_output=True, text=True).stdout


def _auto_run(tmp_path, runs, run_id, *extra):
    model = script(tmp_path / f"{run_id}.json", DONE)
    result = invoke(["run", "rmsnorm_cpu", "--model", model, "--mode", "auto", "--no-judge-start",
                     "--max-steps", "2", "--runs-dir", str(runs), "--run-id", run_id, *extra])
    assert result.exit_code == 0, result.output
    return runs / run_id


def test_outcomes_are_keyed_by_the_run_uuid_outside_the_repository(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSEEK_BANK", str(bank_copy(tmp_path)))
    before = _git_status()
    stats = tmp_path / "mine" / "stats.json"
    first = _auto_run(tmp_path, tmp_path / "runs-a", "kernelseek-r0", "--bank-stats", str(stats))
    second = _auto_run(tmp_path, tmp_path / "runs-b", "kernelseek-r0", "--bank-stats", str(stats))
    uuids = [json.loads((run / "config.json").read_text())["run_uuid"] for run in (first, second)]
    assert uuids[0] != uuids[1]
    assert [e["run_uuid"] for run in (first, second) for e in events(run, "run_start")] == uuids
    recorded = json.loads(stats.read_text())["runs"]
    assert sorted(recorded) == sorted(uuids)  # the same folder name twice: two entries, none overwritten
    assert all(entry["run"] == "kernelseek-r0" and entry["outcomes"] for entry in recorded.values())
    # a scripted run that names no statistics file records nothing, in the user's folder or the repository
    _auto_run(tmp_path, tmp_path / "runs-c", "quiet")
    assert not stats_path().exists() and not (tmp_path / "bank" / "stats.json").exists()
    assert str(stats_path()).startswith(str(tmp_path))  # the tests' user data directory
    assert _git_status() == before


def test_real_model_runs_record_in_the_user_data_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    seed = str(ROOT / "kernels" / "seeds" / "rmsnorm_cpu.cpp")
    assert run_stats_file(Configuration(task="t", kernel=seed, model="openai/gpt-5")) == \
        tmp_path / "data" / "kernelseek" / "stats.json"
    assert run_stats_file(Configuration(task="t", kernel=seed, model="scripted/x.json")) is None
    assert run_stats_file(Configuration(task="t", kernel=seed, model="scripted/x.json",
                                        bank_stats=str(tmp_path / "s.json"))) == tmp_path / "s.json"


def _human_session(folder, uuid):
    writer = TraceWriter(folder / "trace.jsonl")
    writer.write("run_start", step=0, key="run_start", task="t", kernel="k", arch="cpu", mode="human",
                 graph="kernelseek", worker="scripted", target=None, budgets={}, run_uuid=uuid)
    writer.write("evaluation", step=1, key="e0", candidate=0, parent=None, path="x", sha256="0", judgement="full",
                 correct=True, speedup=1.0, reason=None, best=True, report=None)
    context = {"best_speedup": 1.0, "best": "", "last_report": "", "worker_words": ""}
    writer.write("human_message", step=2, key="2:questioner:human", text="Where does the time go per row?",
                 decision_point="plateau", context=context)
    writer.write("question", step=2, key="2:questioner:question", text="Where does the time go per row?",
                 source="human", bank_id=None, question_kind=None, decision_point="plateau")
    writer.write("human_message", step=3, key="3:worker:inbox:1", text="Also try a bigger block.",
                 decision_point="interjection", context=context)


def test_bank_learn_dedupes_a_copied_run_on_its_uuid(tmp_path):
    original = tmp_path / "runs" / "session"
    original.mkdir(parents=True)
    _human_session(original, "7d5c0a53-0b9e-4a59-9d0e-0c9f1f7e2a10")
    copy = tmp_path / "runs" / "session-copy"
    shutil.copytree(original, copy)
    summary = learn([original, copy], bank_dir=tmp_path / "bank")
    assert summary.messages == 2 and summary.already == 1 and len(summary.added) == 1
    text = (tmp_path / "bank" / "learned-humans.yaml").read_text()
    assert "7d5c0a53-0b9e-4a59-9d0e-0c9f1f7e2a10" in text and "asked: 1" in text
    assert "bigger block" not in text  # a message sent with `kernelseek ask` is not a question to learn
