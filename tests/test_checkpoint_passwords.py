"""A password in the checkpoint database's URL: the command warns (the URL is stored in the run's
config.json), and the password itself is printed nowhere: not in the warning, not in an error."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kernelseek.checkpoints import hide_password, password_warning, redact
from kernelseek.cli import app

SECRET = "s3cr3t-pw"
NOBODY = "127.0.0.1:9"  # the discard port: no PostgreSQL server answers there


@pytest.mark.parametrize(("url", "password"), [
    (f"postgresql://me:{SECRET}@db:5432/ks", SECRET), (f"postgresql://:{SECRET}@db/ks", SECRET),
    (f"postgres://me@db/ks?sslmode=require&password={SECRET}", SECRET),
    (f"postgresql://me:{SECRET}/x@db/ks", f"{SECRET}/x")])  # a slash a user forgot to encode
def test_a_url_with_a_password_is_warned_of_without_it(url, password):
    warning = password_warning(url)
    assert warning and "carries a password" in warning and "$PGPASSWORD" in warning
    assert SECRET not in warning and SECRET not in redact(url) and "***" in redact(url)
    assert hide_password(f"the driver said {password}.", url) == "the driver said ***."


@pytest.mark.parametrize("url", ["postgresql://me@db:5432/ks", "postgresql://me:@db/ks", "sqlite",
                                 "postgresql:///ks?sslmode=require"])
def test_a_url_without_a_password_is_not_warned_of(url):
    assert password_warning(url) is None and redact(url) == url


def _invoke(*args: str):  # noqa: ANN201 - click's Result
    return CliRunner().invoke(app, list(args))


def test_run_warns_of_the_password_and_its_error_does_not_show_it(tmp_path):
    url = f"postgresql://me:{SECRET}@{NOBODY}/ks?connect_timeout=2"
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": "Nothing to change."}]))
    result = _invoke("run", "rmsnorm_cpu", "--model", f"scripted/{script}", "--checkpointer", url, "--runs-dir",
                     str(tmp_path / "runs"))
    said = " ".join(result.stderr.split())
    assert result.exit_code == 2, said
    assert f"warning: postgresql://me:***@{NOBODY}/ks?connect_timeout=2: the URL carries a password" in said
    assert "error: " in said and "Traceback" not in said  # nothing answers there: one sentence
    assert SECRET not in result.stdout + result.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())  # no run was made


def test_resume_warns_of_a_stored_password(tmp_path):
    from kernelseek.agent.make_run import make_run
    from kernelseek.settings import RunRequest

    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": "Nothing to change."}]))
    run = make_run(RunRequest(task="rmsnorm_cpu", model=f"scripted/{script}", runs_dir=str(tmp_path / "runs"),
                              run_id="r", unconfined=True))
    config = json.loads((run.dir / "config.json").read_text())  # as a run made with that URL has it
    config["checkpoints"] = f"postgresql://me:{SECRET}@{NOBODY}/ks?connect_timeout=2"
    (run.dir / "config.json").write_text(json.dumps(config))
    result = _invoke("resume", "r", "--runs-dir", str(tmp_path / "runs"))
    said = " ".join(result.stderr.split())
    assert "the URL carries a password" in said and "error: " in said, said
    assert SECRET not in result.stdout + result.stderr
