"""The README's cluster recipe against a Ray head started as Ray ships it: `ray start --head` on 127.0.0.1 with
Ray's default authentication (Ray 2.60 turns token authentication on for a head when a token is on the machine,
and every `ray.init()` of a local cluster writes one to ~/.ray/auth_token), then `kernelseek eval --parallel 2
--ray-address` against it; a machine without the token is refused in one sentence that says so, in seconds; and
`--parallel` without an address never joins that head, even where Ray's default (`address=None`) would.

The module's head has a home and a Ray temporary folder of its own (HOME, RAY_TMPDIR), so it is found only
through them and no other Ray on the machine is touched. Ray is in the dev extra: CI's quick pass runs these,
the acceptance of the cluster recipe (some 35 s on 2 cores)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kernelseek.engine import ray_available

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-c", "from kernelseek.cli import main; main()"]
FIXTURES = ROOT / "tests" / "fixtures" / "loop"
KERNELS = [str(FIXTURES / "faster.cpp"), str(FIXTURES / "wrong.cpp")]


@dataclass
class Head:
    address: str  # 127.0.0.1:PORT
    env: dict[str, str]  # HOME holding the head's token, RAY_TMPDIR holding its session
    folder: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _jobs(address: str, token: str) -> int:
    """How many drivers have ever connected to the head (its GCS job table)."""
    import grpc
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        reply = gcs_service_pb2_grpc.JobInfoGcsServiceStub(channel).GetAllJobInfo(
            gcs_service_pb2.GetAllJobInfoRequest(), timeout=10, metadata=[("authorization", f"Bearer {token}")])
    return len(reply.job_info_list)


def _own_processes(folder: Path) -> list[int]:
    """The processes of this head: their command lines name its session folder."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(folder).encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


@pytest.fixture(scope="module")  # one head for the three tests: a start and a stop are some 10 s on 2 cores
def head() -> Iterator[Head]:
    if not ray_available():
        pytest.fail("Ray is not installed in this environment; `pip install -e '.[dev]'` installs it.")
    folder = Path(tempfile.mkdtemp(prefix="ksray-", dir="/tmp"))  # short: Ray's socket paths live below it
    home = folder / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "RAY_TMPDIR": str(folder), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "COLUMNS": "200", "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    for variable in ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        env.pop(variable, None)
    ray = str(Path(sys.executable).parent / "ray")
    subprocess.run([ray, "get-auth-token", "--generate"], env=env, capture_output=True, check=True, timeout=120)
    port = _free_port()
    log = (folder / "head.log").open("w")
    proc = subprocess.Popen([ray, "start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--port",
                             str(port), "--num-cpus", "2", "--include-dashboard", "false", "--disable-usage-stats"],
                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    address = f"127.0.0.1:{port}"
    try:
        from kernelseek.engine.auth import probe

        token = (home / ".ray" / "auth_token").read_text().strip()
        deadline = time.monotonic() + 120
        # up: its GCS answers, and `ray start` has written the address file Ray's default joins by
        while probe(address, token) != "ok" or not (folder / "ray" / "ray_current_cluster").is_file():
            assert proc.poll() is None and time.monotonic() < deadline, (folder / "head.log").read_text()[-3000:]
            time.sleep(0.5)
        # the head runs with token authentication: without the token it refuses
        assert probe(address, None) == "refused", (folder / "head.log").read_text()[-3000:]
        yield Head(address, env, folder)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # `ray start --block` stops the head's processes when it ends
        try:
            proc.wait(timeout=5)  # measured: it did not end within 30 s of SIGTERM (90 s of the suite); kill it
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
        for pid in _own_processes(folder):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(folder, ignore_errors=True)


def _eval(head: Head, tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "eval", *KERNELS, "--arch", "cpu", "--quick", "--seed", "3",
                           "--out", str(tmp_path / "out"), *extra], cwd=tmp_path, env=env or head.env,
                          capture_output=True, text=True, timeout=600)


def test_eval_parallel_on_a_started_head_with_ray_default_auth(head, tmp_path):
    token = (Path(head.env["HOME"]) / ".ray" / "auth_token").read_text().strip()
    before = _jobs(head.address, token)
    result = _eval(head, tmp_path, "--parallel", "2", "--ray-address", head.address)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output[-4000:]  # one kernel is wrong: both judged, exit status 1
    assert "InvalidAuthToken" not in output and "local Ray cluster" not in output
    assert f"Ray cluster {head.address.split(':')[0]}" in output or f":{head.address.split(':')[1]}" in output
    assert json.loads((tmp_path / "out" / "faster.json").read_text())["correct"] is True
    assert json.loads((tmp_path / "out" / "wrong.json").read_text())["correct"] is False
    assert _jobs(head.address, token) == before + 1  # our driver joined this head


def test_a_head_that_wants_a_token_we_lack_is_refused_in_one_sentence_at_once(head, tmp_path):
    stranger = tmp_path / "stranger"  # another machine's user: no token in its home
    stranger.mkdir()
    started = time.monotonic()
    result = _eval(head, tmp_path, "--parallel", "2", "--ray-address", head.address,
                   env={**head.env, "HOME": str(stranger)})
    elapsed = time.monotonic() - started
    said = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 2 and "Traceback" not in said, said[-3000:]
    assert f"the Ray cluster at {head.address} refused us: it uses token authentication" in said
    assert "~/.ray/auth_token" in said and "RAY_AUTH_TOKEN" in said
    assert "InvalidAuthToken" not in said  # not Ray's 20 s of warnings
    assert elapsed < 15, elapsed
    # a token that is not the cluster's is named as such
    wrong = tmp_path / "wrong_token"
    wrong.write_text("not-the-cluster-token\n")
    result = _eval(head, tmp_path, "--parallel", "2", "--ray-address", head.address,
                   env={**head.env, "HOME": str(stranger), "RAY_AUTH_TOKEN_PATH": str(wrong)})
    said = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 2 and "the token here is not the cluster's" in said, said[-3000:]


def test_parallel_alone_never_joins_a_running_head(head, tmp_path):
    token = (Path(head.env["HOME"]) / ".ray" / "auth_token").read_text().strip()
    # Ray's default would join this head: its address file is where ray.init(address=None) looks
    assert (head.folder / "ray" / "ray_current_cluster").is_file()
    before = _jobs(head.address, token)
    result = _eval(head, tmp_path, "--parallel", "2")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output[-4000:]
    assert "local Ray cluster" in output and f":{head.address.split(':')[1]} " not in output
    assert _jobs(head.address, token) == before  # no driver of ours ever connected to the head


def test_the_token_is_found_where_ray_looks_in_ray_order(tmp_path, monkeypatch):
    from kernelseek.engine.auth import token

    for variable in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert token() is None
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("from-home\n")
    assert token() == "from-home"
    (tmp_path / "file").write_text("from-path")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "file"))
    assert token() == "from-path"
    monkeypatch.setenv("RAY_AUTH_TOKEN", "from-variable")
    assert token() == "from-variable"


def test_token_mode_is_turned_on_only_when_the_head_wants_the_token_we_have(tmp_path, monkeypatch):
    from kernelseek.engine import auth

    monkeypatch.setenv("HOME", str(tmp_path))
    for variable in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("RAY_AUTH_TOKEN", "secret")
    asked = []

    def head(wants: str | None):  # noqa: ANN202 - a head that accepts `wants` (None: no authentication)
        def probe(address: str, bearer: str | None) -> str:
            asked.append(bearer)
            return "ok" if wants is None or bearer == wants else "refused"
        return probe

    monkeypatch.setattr(auth, "probe", head(None))
    auth.prepare("h:1")
    assert "RAY_AUTH_MODE" not in os.environ and asked == [None]  # a head without authentication: nothing changes
    monkeypatch.setattr(auth, "probe", head("other"))
    with pytest.raises(auth.AuthRefused, match="the token here is not the cluster's"):
        auth.prepare("h:1")
    assert "RAY_AUTH_MODE" not in os.environ
    monkeypatch.setattr(auth, "probe", head("secret"))
    monkeypatch.setattr(auth, "enable_token_mode", lambda: os.environ.__setitem__("RAY_AUTH_MODE", "token"))
    auth.prepare("h:1")
    assert os.environ["RAY_AUTH_MODE"] == "token"
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # chosen here: respected, and named in the error
    with pytest.raises(auth.AuthRefused, match="RAY_AUTH_MODE=disabled here"):
        auth.prepare("h:1")
