"""LangGraph Studio (`langgraph dev`): the checkpointer `langgraph.json` names, so that a run started there
is resumed and reported from the CLI.

The server keeps its checkpoints in `<runs>/studio.sqlite` (the runs folder as `kernelseek run` finds it:
$KERNELSEEK_RUNS, else the user's data directory). A run the graph makes there writes that file and the
server's thread id into its `config.json`; `kernelseek resume <id>` and `kernelseek trace show <id>` then
open the same checkpoints as any other run's.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from kernelseek.agent.run_store import default_runs_dir
from kernelseek.settings import ConfigError

STUDIO_CHECKPOINTS = "KERNELSEEK_STUDIO_CHECKPOINTS"  # set in the server's process while its checkpointer is open


def checkpoints_file() -> Path:
    return default_runs_dir() / "studio.sqlite"


@asynccontextmanager
async def checkpointer() -> AsyncIterator[Any]:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path = checkpoints_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        os.environ[STUDIO_CHECKPOINTS] = str(path)
        try:
            yield saver
        finally:
            os.environ.pop(STUDIO_CHECKPOINTS, None)


def server_checkpoints() -> str | None:
    """The Studio server's checkpoint file, when the graph runs inside `langgraph dev`."""
    return os.environ.get(STUDIO_CHECKPOINTS)


def check_runs_dir(runs_dir: Path) -> None:
    """A run folder inside the folder `langgraph dev` watches would restart the server at the first file the
    worker writes: refuse it."""
    if not server_checkpoints():
        return
    watched = Path.cwd().resolve()
    if Path(runs_dir).resolve().is_relative_to(watched):
        raise ConfigError(f"runs_dir {runs_dir} is inside {watched}, which `langgraph dev` watches for changes (a "
                          "file a run writes there restarts the server); leave runs_dir empty (the user's data "
                          "directory) or name a folder outside it.")
