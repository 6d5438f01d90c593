"""The libraries a kernel may not use are the task folder's (`Task.forbidden_libraries`), not the harness's:
the guard refuses what the folder names, nothing when it names nothing, a change of the list is a new build,
the worker is told the list, and a malformed list is one sentence naming the file."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from kernelseek.agent import prompts
from kernelseek.harness import BuildError, Task, TaskError, build_kernel, judge, load_task

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "kernels" / "seeds" / "rmsnorm_cpu.cpp"  # includes <cmath>


def task_forbidding(tmp_path: Path, libraries: str) -> Path:
    """A copy of rmsnorm_cpu whose task.py declares `forbidden_libraries = <libraries>`."""
    folder = tmp_path / "strict_cpu"
    shutil.copytree(ROOT / "evals" / "tasks" / "rmsnorm_cpu", folder)
    task_py = folder / "task.py"
    text, n = re.subn(r"^    forbidden_libraries = .*$", f"    forbidden_libraries = {libraries}", task_py.read_text(),
                      count=1, flags=re.M)
    assert n == 1, "rmsnorm_cpu's task.py declares forbidden_libraries on one line"
    task_py.write_text(text)
    return folder


def test_the_guard_refuses_what_the_task_folder_forbids_and_nothing_by_default(tmp_path):
    task = load_task(task_forbidding(tmp_path, '{"the C math library": "c?math"}'))
    assert task.forbidden_libraries == {"the C math library": "c?math"}
    with pytest.raises(BuildError) as error:
        build_kernel(SEED, "cpu", forbidden_libraries=task.forbidden_libraries)
    assert str(error.value).startswith(f"guard: {SEED}:") and "(the C math library is not allowed)" in str(error.value)
    # the harness's own default forbids no library: the same seed builds for a task that names none
    assert Task.forbidden_libraries == {}
    assert Path(build_kernel(SEED, "cpu").library).is_file()
    # and the shipped CPU task's list does not touch the C++ library either
    assert Path(build_kernel(SEED, "cpu", forbidden_libraries=load_task("rmsnorm_cpu").forbidden_libraries)
                .library).is_file()


def test_the_judge_guards_with_the_task_folders_list(tmp_path):
    folder = task_forbidding(tmp_path, '{"the C math library": "c?math"}')
    verdict = judge(folder, SEED, "cpu", quick=True)
    assert not verdict.correct and not verdict.scenarios  # refused before anything ran
    assert "(the C math library is not allowed)" in verdict.reason


def test_a_change_of_the_list_is_a_new_build(tmp_path):
    cache = tmp_path / "cache"
    first = build_kernel(SEED, "cpu", forbidden_libraries={"Eigen": r"eigen\d*"}, cache_dir=cache)
    again = build_kernel(SEED, "cpu", forbidden_libraries={"Eigen": r"eigen\d*"}, cache_dir=cache)
    other = build_kernel(SEED, "cpu", forbidden_libraries={"Eigen": r"eigen\d*", "MKL": r"mkl.*"}, cache_dir=cache)
    assert not first.cached and again.cached and again.library == first.library
    assert not other.cached and other.library != first.library


def test_the_worker_is_told_the_tasks_list():
    flash = load_task("flash_attn_fwd").forbidden_libraries
    assert prompts.describe_forbidden(flash) == " (no CUTLASS, CuTe, cuBLAS, cuDNN, Thrust)"
    assert prompts.describe_forbidden({}) == ""
    text = prompts.SYSTEM.format(description="", kernel="k.cu", arch="sm90", target="",
                                 forbidden=prompts.describe_forbidden(flash))
    assert "headers may be included (no CUTLASS, CuTe, cuBLAS, cuDNN, Thrust); the kernel" in " ".join(text.split())


@pytest.mark.parametrize(("libraries", "words"), [
    ('["cutlass"]', "forbidden_libraries is ['cutlass']; make it a dict from each library's name to a pattern"),
    ('{"CUTLASS": 1}', "forbidden_libraries is {'CUTLASS': 1}; make it a dict"),
    ('{"Broken": "cut(lass"}', "forbidden_libraries['Broken'] = 'cut(lass' is not a regular expression"),
])
def test_a_malformed_list_is_one_sentence_naming_the_file(tmp_path, libraries, words):
    folder = task_forbidding(tmp_path, libraries)
    with pytest.raises(TaskError) as error:
        load_task(folder)
    message = str(error.value)
    assert message.startswith(f"{folder / 'task.py'}: ") and words in message and "\n" not in message
