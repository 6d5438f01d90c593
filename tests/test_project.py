"""A project folder (`kernelseek init DIR`): commands find their data there first, then in the package."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from kernelseek import project, scaffold
from kernelseek.bank.model import load_bank
from kernelseek.cli import app
from kernelseek.harness.task import load_task, seed_kernel

REPO = Path(__file__).resolve().parents[1]


def test_init_lays_out_a_project_and_overwrites_nothing(tmp_path):
    folder = tmp_path / "mine"
    result = CliRunner().invoke(app, ["init", str(folder)])
    assert result.exit_code == 0, result.output
    for part in ("bank/seed.yaml", "evals/tasks/rmsnorm_cpu/task.py", "evals/tasks/rmsnorm_cpu/entry.h",
                 "kernels/seeds/rmsnorm_cpu.cpp", "README.md"):
        assert (folder / part).is_file(), part
    assert (folder / "bank/seed.yaml").read_text() == (REPO / "bank/seed.yaml").read_text()
    # the term map too, so that `bank learn` in the project rewrites what it knows ("the SASS" and the like)
    assert (folder / "bank/terms.yaml").read_text() == (REPO / "bank/terms.yaml").read_text()
    from kernelseek.bank.terms import rewrite_terms

    assert rewrite_terms("Look at the SASS.", bank_dir=folder / "bank")[0] == "Look at the compiled instructions."
    again = CliRunner().invoke(app, ["init", str(folder)])
    assert again.exit_code == 2 and "exists already" in again.output and "Traceback" not in again.output


def test_commands_in_a_project_use_its_data_then_the_package(tmp_path, monkeypatch):
    folder = tmp_path / "mine"
    scaffold.init_project(folder)
    bank = yaml.safe_load((folder / "bank/seed.yaml").read_text())
    bank["questions"] = bank["questions"][:2] + [{"id": "mine-1", "text": "Where does the time go?",
                                                  "kind": "other", "fits": ["done"]}]
    (folder / "bank/seed.yaml").write_text(yaml.safe_dump(bank))
    (folder / "kernels/seeds/rmsnorm_cpu.cpp").write_text("// my seed\n")
    (folder / "graphs").mkdir()
    (folder / "graphs/mine.py").write_text("def build(checkpointer=None):\n    return ('my graph', checkpointer)\n")
    monkeypatch.delenv("KERNELSEEK_BANK", raising=False)
    monkeypatch.chdir(folder / "evals")  # anywhere inside the project
    assert project.project_root() == folder.resolve()
    assert [q.id for q in load_bank()][-1] == "mine-1" and len(load_bank()) == 3  # the project's bank only
    mine = load_task("rmsnorm_cpu")
    assert mine.folder == (folder / "evals/tasks/rmsnorm_cpu").resolve()
    assert seed_kernel(mine).read_text() == "// my seed\n"
    packaged = load_task("flash_attn_fwd")  # not in the project: the package's
    assert packaged.folder == (REPO / "evals/tasks/flash_attn_fwd").resolve()
    assert seed_kernel(packaged) == REPO / "kernels/seeds/flash_attn_fwd.cu"
    assert project.load_graph("mine", checkpointer="cp") == ("my graph", "cp")
    assert {"mine", "kernelseek", "tool_rich", "no_question"} <= set(project.graph_names())
    result = CliRunner().invoke(app, ["scenarios", "nosuch"])
    assert result.exit_code == 2 and "flash_attn_fwd" in result.output and "rmsnorm_cpu" in result.output


def test_outside_any_project_the_package_data_is_used(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KERNELSEEK_BANK", raising=False)
    assert project.project_root() is None
    assert project.bank_dir() == project.package_root() / "bank"
    assert load_task("rmsnorm_cpu").folder == (project.package_root() / "evals/tasks/rmsnorm_cpu").resolve()
    try:
        project.load_graph("nope")
    except ValueError as error:
        assert "no graphs/nope.py" in str(error) and "kernelseek" in str(error)
    else:
        raise AssertionError("an unknown graph was loaded")
