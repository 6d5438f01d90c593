"""LangGraph Studio: `langgraph dev` (the in-memory server of langgraph-cli[inmem]) serves the graphs of
`langgraph.json`; their settings form is the context schema; a scripted run started through the server's API
stops at its question and is resumed and reported from the CLI; bad settings are one sentence. (The server
drops context keys its schema lacks; `test_loop_units` checks that the graph refuses them.)"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from loop_support import ROOT, env, events, run_cli, script

pytestmark = pytest.mark.slow  # the server takes 5-30 s to start


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _project(folder: Path) -> Path:
    """The repository's langgraph.json, its paths made absolute, in a folder of its own: the server watches
    and writes (.langgraph_api/) there, not in the repository."""
    spec = json.loads((ROOT / "langgraph.json").read_text())
    absolute = lambda target: str(ROOT / target.removeprefix("./"))  # noqa: E731
    spec["dependencies"] = [str(ROOT)]
    spec["graphs"] = {name: absolute(target) for name, target in spec["graphs"].items()}
    spec["checkpointer"]["path"] = absolute(spec["checkpointer"]["path"])
    folder.mkdir()
    (folder / "langgraph.json").write_text(json.dumps(spec))
    return folder


@pytest.fixture
def server(tmp_path):
    project, port = _project(tmp_path / "project"), _free_port()
    log = open(tmp_path / "server.log", "w")
    variables = env(KERNELSEEK_RUNS=str(tmp_path / "runs"), XDG_DATA_HOME=str(tmp_path / "xdg"),
                    LANGSMITH_TRACING="false", LANGGRAPH_CLI_NO_ANALYTICS="1")
    proc = subprocess.Popen([str(Path(sys.executable).parent / "langgraph"), "dev", "--no-browser", "--no-reload",
                             "--port", str(port)], cwd=project, env=variables, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/ok", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("langgraph dev did not start:\n" + (tmp_path / "server.log").read_text()[-3000:])
            time.sleep(0.5)
        yield url, variables, project
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def test_a_run_started_in_studio_is_resumed_and_reported_from_the_cli(server, tmp_path):
    from langgraph_sdk import get_sync_client

    url, variables, project = server
    client = get_sync_client(url=url)
    assistant, = client.assistants.search(graph_id="kernelseek")
    schemas = client.assistants.get_schemas(assistant["assistant_id"])
    form = schemas["context_schema"]["properties"]  # Studio's settings form: typed, described, with defaults
    assert "task" in schemas["context_schema"]["required"] and form["max_steps"]["default"] == 60
    assert form["mode"]["enum"] == ["human", "auto", "none"]
    assert all(field.get("description") for field in form.values())
    assert set(schemas["input_schema"]["properties"]) == {"run_dir"}

    model = script(tmp_path / "s.json", [{"content": "I am done."}])
    thread = client.threads.create()
    final = client.runs.wait(thread["thread_id"], "kernelseek", input={},
                             context={"task": "rmsnorm_cpu", "model": model, "mode": "human", "judge_start": False,
                                      "max_steps": 3})
    assert client.threads.get_state(thread["thread_id"])["next"] == ["questioner"]  # waiting for a person
    run_dir = Path(final["run_dir"])
    assert run_dir.parent == tmp_path / "runs"

    resumed = run_cli(["resume", run_dir.name], input="/stop\n", env=variables)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "stopped by the person at the prompt" in resumed.stdout
    assert [e["type"] for e in events(run_dir)] == ["run_start", "model_call", "decision_point", "human_message",
                                                    "run_end"]
    shown = run_cli(["trace", "show", run_dir.name, "--json"], env=variables)
    assert shown.returncode == 0 and json.loads(shown.stdout.splitlines()[-1])["type"] == "run_end"
    assert client.threads.get_state(thread["thread_id"])["next"] == []  # the server sees the run's end too

    task = {"task": "rmsnorm_cpu", "model": model}
    for context, sentence in [({**task, "max_steps": 0}, "max_steps 0 must be a whole number, at least 1."),  # the form's field
                              ({**task, "runs_dir": str(project / "runs")}, "`langgraph dev` watches"),
                              ({"model": model}, "the setting 'task' is missing"),
                              ({**task, "task": "no_such_task"}, "no such task")]:
        with pytest.raises(Exception) as failed:  # noqa: PT011 - the SDK raises a bare Exception
            client.runs.wait(None, "kernelseek", input={}, context=context)
        message = str(failed.value)
        assert sentence in message and "Traceback" not in message and "validation error" not in message, message
    assert not (project / "runs").exists()
