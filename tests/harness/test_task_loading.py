"""Loading task folders: each folder's own modules (scenarios.py, baselines.py, ...) are the ones its
task.py sees, whatever was loaded before it. The bug this guards against: a second task folder whose
task.py did `import scenarios` silently got flash_attn_fwd's, loaded earlier under the same name."""

from __future__ import annotations

import sys
import textwrap
import types

import pytest

from kernelseek.harness import TaskError, load_task

PLAIN = """
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parent))  # what a user writes: the folder first, then its module
    import scenarios

    from kernelseek.harness.task import Task

    class T(Task):
        name = "{name}"
        def scenarios(self, arch):
            return scenarios.suite()

    TASK = T()
"""
RELATIVE = """
    from kernelseek.harness.task import Task
    from . import scenarios

    class T(Task):
        name = "{name}"
        def scenarios(self, arch):
            from . import scenarios as lazily  # a lazy relative import finds the same module
            assert lazily is scenarios
            return scenarios.suite()

    TASK = T()
"""


def make_task(folder, name, template=PLAIN):
    folder.mkdir(parents=True)
    (folder / "task.py").write_text(textwrap.dedent(template.format(name=name)))
    (folder / "scenarios.py").write_text(f"def suite():\n    return ['{name} scenario']\n")
    return folder


def test_a_second_task_folder_gets_its_own_scenarios_module_not_flash_attn_fwds(tmp_path):
    flash = load_task("flash_attn_fwd")
    assert len(flash.scenarios("sm90")) > 100
    second = load_task(make_task(tmp_path / "second", "second"))
    assert second.scenarios("sm90") == ["second scenario"]
    assert len(flash.scenarios("sm90")) > 100  # the first task still has its own
    # and in the other order, on a fresh load of each
    third = load_task(make_task(tmp_path / "third", "third", RELATIVE))
    assert load_task("flash_attn_fwd").scenarios("sm90")[0].name == flash.scenarios("sm90")[0].name
    assert third.scenarios("sm90") == ["third scenario"]


def test_folders_of_the_same_name_in_different_places_do_not_collide(tmp_path):
    a = load_task(make_task(tmp_path / "a" / "mytask", "from a"))
    b = load_task(make_task(tmp_path / "b" / "mytask", "from b", RELATIVE))
    assert a.scenarios("x") == ["from a scenario"] and b.scenarios("x") == ["from b scenario"]
    assert type(a).__module__ != type(b).__module__


def test_a_module_of_the_same_name_imported_elsewhere_is_left_as_it_was(tmp_path, monkeypatch):
    theirs = types.ModuleType("scenarios")
    monkeypatch.setitem(sys.modules, "scenarios", theirs)
    path_before = list(sys.path)
    task = load_task(make_task(tmp_path / "mine", "mine"))
    assert task.scenarios("x") == ["mine scenario"]
    assert sys.modules["scenarios"] is theirs
    assert sys.path.count(str((tmp_path / "mine").resolve())) <= 1  # only the folder's own insert, if any
    assert [p for p in sys.path if p != str((tmp_path / "mine").resolve())] == path_before


def test_loading_again_runs_the_folders_code_again(tmp_path):
    folder = make_task(tmp_path / "edited", "before", RELATIVE)
    assert load_task(folder).scenarios("x") == ["before scenario"]
    (folder / "scenarios.py").write_text("def suite():\n    return ['after']\n")
    assert load_task(folder).scenarios("x") == ["after"]


def test_a_folder_without_a_task_is_one_clear_sentence(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(TaskError, match="has no task.py"):
        load_task(tmp_path / "empty")
