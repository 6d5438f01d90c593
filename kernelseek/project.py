"""Where a command finds its data: the project it runs in, else the data the package carries.

A project is a folder laid out as the KernelSeek checkout is (`kernelseek init DIR` makes one):

    bank/            the question bank (*.yaml); a project's bank replaces the package's
    evals/tasks/     task folders (task.py, entry.h); a task is looked up here first, then in the package
    kernels/seeds/   the seed kernels the tasks name (Task.seed is relative to the folder above evals/)
    graphs/          graph files (<name>.py exposing `build(checkpointer=None)`), optional

The project is the current directory or the nearest folder above it that holds `evals/tasks/`. The
package's own copy lies in `kernelseek/_data/` of an installed wheel; an editable install uses the
checkout it was installed from. This module needs the standard library only (the harness uses it).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parent
PACKAGE_DATA = PACKAGE / "_data"
TASKS = Path("evals") / "tasks"


class ProjectError(ValueError):
    """A data file or folder that no project and no package holds, or a folder `init` cannot use."""


def project_root(start: Path | None = None) -> Path | None:
    """The project the current directory lies in: the nearest folder (itself or above) with evals/tasks/."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / TASKS).is_dir():
            return folder
    return None


def package_root() -> Path:
    """The data the package carries: `kernelseek/_data/` in a wheel, else the checkout above the package."""
    if PACKAGE_DATA.is_dir():
        return PACKAGE_DATA
    return PACKAGE.parent


def roots() -> list[Path]:
    """Where data is looked for, in order: the project, then the package (once each)."""
    found = [root for root in (project_root(), package_root()) if root is not None]
    return list(dict.fromkeys(found))


def find(relative: str | Path) -> Path | None:
    """The first root's `relative` file or folder, or None."""
    for root in roots():
        if (root / relative).exists():
            return root / relative
    return None


def task_folder(name: str) -> Path | None:
    """The folder of the task called `name`: the project's, else the package's."""
    if not name or "/" in name or name in (".", ".."):
        return None
    folder = find(TASKS / name)
    return folder if folder is not None and (folder / "task.py").is_file() else None


def task_folders() -> list[Path]:
    """Every task by name, a project's task hiding the package's of the same name."""
    seen: dict[str, Path] = {}
    for root in roots():
        if (root / TASKS).is_dir():
            for folder in sorted((root / TASKS).iterdir()):
                if (folder / "task.py").is_file():
                    seen.setdefault(folder.name, folder)
    return list(seen.values())


def data_file(folder: Path, relative: str) -> Path:
    """`relative` (as a task names its seed: from the folder above evals/) for the task in `folder`: beside
    that task first, then in the project or the package."""
    folder = folder.resolve()
    if folder.parent.name == "tasks" and folder.parents[1].name == "evals" and (folder.parents[2] / relative).is_file():
        return folder.parents[2] / relative
    return find(relative) or Path(relative)


def bank_dir() -> Path:
    """`$KERNELSEEK_BANK`, else the project's bank/, else the package's."""
    if os.environ.get("KERNELSEEK_BANK"):
        return Path(os.environ["KERNELSEEK_BANK"])
    return find("bank") or package_root() / "bank"


def writable_bank_dir() -> Path:
    """Where a learned bank is written: never inside an installed package."""
    folder = bank_dir()
    if folder.resolve().is_relative_to(PACKAGE):
        raise ProjectError("there is no project here to learn into (the package's own bank is read-only); "
                           "make one with `kernelseek init DIR` and run the command in it, or pass --bank-dir.")
    return folder


def graph_names() -> list[str]:
    names: dict[str, None] = {}
    for root in roots():
        for file in sorted((root / "graphs").glob("*.py")):
            if not file.name.startswith("_"):
                names.setdefault(file.stem, None)
    return list(names)


def graph_file(name: str) -> Path | None:
    if not name or not name.replace("_", "").isalnum():
        return None
    return find(Path("graphs") / f"{name}.py")


def load_graph(name: str, checkpointer: Any = None) -> Any:
    """The compiled graph that `graphs/<name>.py` builds, loaded from its file (no module `graphs` is
    installed: the graph files are data, as langgraph.json loads them)."""
    file = graph_file(name)
    if file is None:
        raise ValueError(f"--graph '{name}': there is no graphs/{name}.py here or in the package; use one of "
                         f"{', '.join(graph_names())}.")
    module_name = f"kernelseek_graph_{name}"
    module = sys.modules.get(module_name)
    if module is None or getattr(module, "__file__", None) != str(file):
        spec = importlib.util.spec_from_file_location(module_name, file)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return module.build(checkpointer=checkpointer)


def user_data_dir() -> Path:
    """The user's own KernelSeek data (runs, bank statistics): $XDG_DATA_HOME/kernelseek, else
    ~/.local/share/kernelseek (a relative XDG_DATA_HOME is ignored, as the XDG specification says)."""
    data = os.environ.get("XDG_DATA_HOME", "")
    return (Path(data) if os.path.isabs(data) else Path.home() / ".local" / "share") / "kernelseek"
