"""Parallel work on Ray (kernelseek/engine/), on the CPU task with the scripted sessions of cpu_demo: an
experiment on Ray's local cluster of 2 workers survives a worker process killed mid-run and a Ctrl-C, repeating
no finished run and no step; without Ray the same experiment runs one run after another and says how to get
parallelism; `kernelseek eval A B --parallel 2` gives the verdicts that judging each alone gives.

Ray is in the dev extra (pyproject.toml), so CI runs these; they take minutes on a small machine (slow)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from experiment_support import demo_config

from kernelseek.engine import no_ray_line, ray_available
from kernelseek.trace import read_trace

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "from kernelseek.cli import main; main()"]
NO_RAY_CLI = [sys.executable, "-c", "import sys; sys.modules['ray'] = None; from kernelseek.cli import main; main()"]
GRAPHS = ("kernelseek", "tool_rich", "no_question")
FIXTURES = ROOT / "tests" / "fixtures" / "loop"



@pytest.fixture
def ray_installed() -> None:  # not a skip: CI must run these, and the dev extra installs Ray
    if not ray_available():
        pytest.fail("Ray is not installed in this environment; `pip install -e '.[dev]'` installs it.")



def environment(tmp_path: Path) -> dict[str, str]:
    bank = tmp_path / "bank"
    if not bank.exists():
        shutil.copytree(ROOT / "bank", bank)  # the repository's bank statistics stay untouched
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True", "COLUMNS": "200", "KERNELSEEK_BANK": str(bank)}


def events(run: Path) -> list[dict]:
    trace = run / "trace.jsonl"
    return read_trace(trace) if trace.is_file() else []


def finished(run: Path) -> bool:
    return any(e["type"] == "run_end" for e in events(run))


def assert_whole(run: Path) -> list[dict]:
    """The run ended once, started once, and recorded no step twice (resumed or not)."""
    trace = events(run)
    kinds = [e["type"] for e in trace]
    assert kinds.count("run_start") == 1 and kinds[-1] == "run_end", (run, kinds)
    assert len({e["key"] for e in trace}) == len(trace), run
    steps = [e["step"] for e in trace if e["type"] == "model_call"]
    assert steps == list(range(1, len(steps) + 1)), (run, steps)
    return trace


class Lines:
    """The lines a process prints, read as they come."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.lines: list[str] = []
        self.thread = threading.Thread(target=lambda: self.lines.extend(proc.stdout), daemon=True)
        self.thread.start()

    def text(self) -> str:
        return "".join(self.lines)

    def find(self, prefix: str, contains: str) -> str | None:
        return next((ln for ln in list(self.lines) if ln.startswith(prefix) and contains in ln), None)


def wait_for(condition, timeout_s: float, what: str, proc: subprocess.Popen, lines: Lines):  # noqa: ANN001, ANN201
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError(f"{what}: not seen (exit {proc.poll()}); output:\n{lines.text()[-4000:]}")


@pytest.mark.slow
def test_experiment_on_ray_survives_a_killed_worker_and_a_ctrl_c(tmp_path, ray_installed):
    env, config, out = environment(tmp_path), demo_config(tmp_path), tmp_path / "out"
    runs = {g: out / "runs" / f"{g}-r0" for g in GRAPHS}
    command = [*CLI, "experiment", str(config), "--out", str(out), "--parallel", "2"]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    lines = Lines(proc)
    try:
        # a run on Ray's local cluster of 2 workers, past its first step: kill its worker process
        def running_mid_run() -> tuple[str, int] | None:
            for g in GRAPHS:
                line = lines.find(f"{g}-r0: running on ", "(worker pid ")
                if line and not finished(runs[g]) and any(e["type"] == "model_call" for e in events(runs[g])):
                    return g, int(line.rsplit("(worker pid ", 1)[1].split(")")[0])
            return None

        victim, pid = wait_for(running_mid_run, 300, "a run past its first step on a Ray worker", proc, lines)
        steps_before = sum(e["type"] == "model_call" for e in events(runs[victim]))
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: lines.find(f"{victim}-r0: rescheduled (attempt 2), resuming from its last checkpoint", ""),
                 120, f"{victim}-r0 rescheduled after its worker was killed", proc, lines)
        # then Ctrl-C (the terminal sends it to the whole process group) once a run has finished
        wait_for(lambda: any(finished(r) for r in runs.values()), 400, "a finished run", proc, lines)
        os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    lines.thread.join(timeout=10)
    output = " ".join(lines.text().split())
    assert code == 130 and "interrupted; nothing completed is lost" in output, output[-3000:]
    assert "local Ray cluster" in output and "placed" in output and "running" in output
    done_first = [g for g, r in runs.items() if finished(r)]
    assert done_first and len(done_first) < len(GRAPHS), done_first
    kept = {g: (runs[g] / "trace.jsonl").read_bytes() for g in done_first}

    again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    output = " ".join(again.stderr.split())  # progress and notes: stderr
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert f"{len(done_first)} finished already ({', '.join(f'{g}-r0' for g in done_first)}: not run again)" in output
    for g in done_first:  # a finished run is not run again: its trace is byte for byte what it was
        assert (runs[g] / "trace.jsonl").read_bytes() == kept[g]
        assert f"{g}-r0: running on" not in output
    for g in GRAPHS:
        assert_whole(runs[g])
    # the killed run went on from where its worker was lost: the steps it had done are in its one trace
    victim_steps = [e["step"] for e in events(runs[victim]) if e["type"] == "model_call"]
    assert len(victim_steps) >= steps_before
    results = json.loads((out / "results.json").read_text())
    assert results["missing"] == [] and [g["graph"] for g in results["graphs"]] == list(GRAPHS)


@pytest.mark.slow
def test_without_ray_the_experiment_runs_one_run_after_another(tmp_path):
    env, out = environment(tmp_path), tmp_path / "out"
    config = demo_config(tmp_path)
    data = yaml.safe_load(config.read_text())
    del data["graphs"]["tool_rich"]  # two runs suffice to see them go one after the other
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    result = subprocess.run([*NO_RAY_CLI, "experiment", str(config), "--out", str(out), "--parallel", "2"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=900)
    output = " ".join(result.stderr.split())  # progress and notes: stderr
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " ".join(no_ray_line("runs", 2).split()) in output
    assert "Ray cluster" not in output and "running on" not in output
    first, second = (assert_whole(out / "runs" / f"{g}-r0") for g in ("kernelseek", "no_question"))
    assert first[-1]["time"] <= second[0]["time"]  # the second started after the first ended


@pytest.mark.slow
def test_eval_on_ray_gives_the_verdicts_of_each_judgement_alone(tmp_path, ray_installed):
    env = environment(tmp_path)
    kernels = [str(FIXTURES / "faster.cpp"), str(FIXTURES / "wrong.cpp")]
    base = [*CLI, "eval", *kernels, "--arch", "cpu", "--quick", "--seed", "3"]
    alone = subprocess.run([*base, "--out", str(tmp_path / "alone")], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=600)
    on_ray = subprocess.run([*base, "--parallel", "2", "--out", str(tmp_path / "ray")], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=600)
    for result in (alone, on_ray):  # one kernel is wrong: exit status 1, both judged
        assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    # in a pipe the cluster's progress goes to stderr; stdout holds the verdicts alone
    assert "local Ray cluster" in on_ray.stderr and "judging on " in on_ray.stderr
    assert "Ray cluster" not in on_ray.stdout and "judging on " not in on_ray.stdout and "verdicts" in on_ray.stdout
    assert "Ray cluster" not in alone.stdout + alone.stderr
    for name in ("faster", "wrong"):
        a, r = (json.loads((tmp_path / d / f"{name}.json").read_text()) for d in ("alone", "ray"))
        assert a["kernel"] == r["kernel"] and a["correct"] == r["correct"] and a["judgement"] == r["judgement"]
        assert [(s["scenario"], s["correct"]) for s in a["scenarios"]] == [(s["scenario"], s["correct"])
                                                                           for s in r["scenarios"]]
        assert (a["reason"] is None) == (r["reason"] is None)
    assert json.loads((tmp_path / "ray" / "faster.json").read_text())["correct"] is True
    assert json.loads((tmp_path / "ray" / "wrong.json").read_text())["correct"] is False


def test_eval_of_several_kernels_needs_a_folder_for_out(tmp_path):
    from typer.testing import CliRunner

    from kernelseek.cli import app

    kernels = [str(FIXTURES / "faster.cpp"), str(FIXTURES / "wrong.cpp")]
    result = CliRunner().invoke(app, ["eval", *kernels, "--arch", "cpu", "--out", str(tmp_path / "a.json")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "with 2 kernels --out names a folder" in " ".join(result.output.split())
    result = CliRunner().invoke(app, ["eval", *kernels, "--arch", "cpu", "--parallel", "0"])
    assert result.exit_code == 2 and "--parallel 0 must be at least 1" in " ".join(result.output.split())
    result = CliRunner().invoke(app, ["eval", kernels[0], kernels[0], "--arch", "cpu"])
    assert result.exit_code == 2 and "named twice" in result.output


def test_a_ray_address_nobody_answers_is_one_sentence(tmp_path, ray_installed):
    from typer.testing import CliRunner

    from kernelseek.cli import app

    result = CliRunner().invoke(app, ["eval", str(FIXTURES / "faster.cpp"), "--arch", "cpu", "--ray-address",
                                      "127.0.0.1:9"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "no Ray cluster answers at 127.0.0.1:9" in " ".join(result.output.split())


def test_an_interrupted_command_cancels_tasks_only_on_a_cluster_it_joined(monkeypatch, ray_installed):
    """A local cluster ends with the command; cancelling its tasks first raced the workers the same Ctrl-C had
    stopped and aborted Ray's core worker (ray-project/ray#54846). A joined cluster's tasks are cancelled."""
    import ray

    from kernelseek.engine.cluster import Cluster

    cancelled = []
    monkeypatch.setattr(ray, "cancel", lambda ref, force=False: cancelled.append((ref, force)))
    Cluster("127.0.0.1:6379", started_here=True, dashboard=None).stop(["a", "b"])
    assert cancelled == []
    Cluster("127.0.0.1:6379", started_here=False, dashboard=None).stop(["a", "b"])
    assert cancelled == [("a", True), ("b", True)]
