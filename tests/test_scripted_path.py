"""A scripted model's relative script path is found as tasks are: here, else in the project, else in the package,
so the README's first run (`scripted/evals/examples/first_run.yaml`) works from any folder."""

import pytest

from kernelseek.models.scripted import ScriptError, load_script, script_path


def test_the_first_run_script_is_found_from_a_folder_outside_any_project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = script_path("evals/examples/first_run.yaml")
    assert path.is_absolute() and path.is_file()
    replies = load_script("evals/examples/first_run.yaml")
    # the worker evaluates a kernel, then ends its turn claiming a limit (a decision point), then evaluates again
    assert [bool(r.get("tool_calls")) for r in replies[:3]] == [True, False, True]
    assert "memory-bound" in replies[1]["content"]


def test_a_file_in_the_current_folder_comes_first(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evals" / "examples").mkdir(parents=True)
    (tmp_path / "evals" / "examples" / "first_run.yaml").write_text("- content: mine\n")
    assert load_script("evals/examples/first_run.yaml") == [{"content": "mine"}]


def test_a_script_that_is_nowhere_is_one_sentence(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScriptError, match="no such model script"):
        load_script("evals/examples/no_such.yaml")
