"""`kernelseek init DIR`: lay out a project folder (kernelseek/project.py says how commands find its data)
with the package's question bank, one example task and that task's seed kernel."""

from __future__ import annotations

import shutil
from pathlib import Path

from kernelseek.harness.task import load_task
from kernelseek.project import TASKS, ProjectError, package_root

EXAMPLE_TASK = "rmsnorm_cpu"
PROJECT_README = """\
# A KernelSeek project

Commands run in this folder (or below it) find their data here first, then in the installed package:

- `bank/`            the question bank (`seed.yaml`, copied from the package; `kernelseek bank learn` writes here)
- `evals/tasks/`     task folders: `{task}/` is an example to copy for your own operator
                     (`task.py` defines TASK; `entry.h` declares the C entry point)
- `kernels/seeds/`   the seed kernels the tasks start from (a task names its own in `seed`)

Try it: `kernelseek scenarios {task}`, `kernelseek eval kernels/seeds/{seed} --arch cpu`,
`kernelseek run {task} --model scripted/PATH` (see the README of KernelSeek).
"""


def init_project(folder: Path) -> list[Path]:
    """Lay out a project in `folder` (created if absent): the package's bank, one example task and its seed.
    Refuses to overwrite a file that exists."""
    source = package_root()
    task_src = source / TASKS / EXAMPLE_TASK
    seed_rel = load_task(task_src).seed
    # the term map comes with the bank: without it `bank learn` in the project would generalise nothing
    copies = [(source / "bank" / name, folder / "bank" / name) for name in ("seed.yaml", "terms.yaml")]
    copies += [(file, folder / TASKS / EXAMPLE_TASK / file.name) for file in sorted(task_src.iterdir())
               if file.is_file() and file.suffix in (".py", ".h", ".md")]
    copies.append((source / seed_rel, folder / seed_rel))
    copies.append((None, folder / "README.md"))
    existing = [dest for _, dest in copies if dest.exists()]
    if existing:
        raise ProjectError(f"{existing[0]}: exists already; `kernelseek init` makes a new project and "
                           "overwrites nothing — pick an empty or new folder.")
    if folder.exists() and not folder.is_dir():
        raise ProjectError(f"{folder}: is a file; pass a folder for the project.")
    written = []
    for src, dest in copies:
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src is None:
            dest.write_text(PROJECT_README.format(task=EXAMPLE_TASK, seed=Path(seed_rel).name))
        else:
            shutil.copyfile(src, dest)
        written.append(dest)
    return written
