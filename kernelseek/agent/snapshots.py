"""The workspace at each decision point, kept so a fork can start from it (`kernelseek fork`).

`candidates/` holds only what the harness judged; at a decision point the workspace may also hold an
edit not yet judged, notes, scripts and copies the worker keeps. So the questioner saves the workspace,
as it is when the decision point is reached, to `decisions/<step>/workspace/` before it asks. The copy
is made once (a questioner replayed after a crash or answered later finds it there) and appears
atomically (copied beside, then renamed). Regular files up to MAX_FILE_BYTES are kept; bigger ones
(build products) and special files are left out and listed in `decisions/<step>/skipped.json`.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

MAX_FILE_BYTES = 32 << 20
DECISIONS = "decisions"


def snapshot_dir(run_dir: str | Path, step: int) -> Path:
    return Path(run_dir) / DECISIONS / str(step)


def save(run_dir: str | Path, workspace: Path, step: int) -> Path:
    """Keep the workspace as it is at the decision point of `step` (once); returns the snapshot folder."""
    final = snapshot_dir(run_dir, step)
    if (final / "workspace").is_dir():
        return final
    partial = final.with_name(f"{step}.partial")
    if partial.exists():
        shutil.rmtree(partial)
    (partial / "workspace").mkdir(parents=True)
    skipped = copy_tree(workspace, partial / "workspace")
    if skipped:
        (partial / "skipped.json").write_text(json.dumps(skipped, indent=1))
    if final.exists():  # a folder without its workspace: left by an older, interrupted copy
        shutil.rmtree(final)
    os.replace(partial, final)
    return final


def copy_tree(source: Path, dest: Path) -> list[str]:
    """Copy the regular files and folders of `source` into `dest` (links are not followed); returns what
    was left out, as paths relative to `source` with the reason."""
    skipped = []
    for root, dirs, files in os.walk(source):
        here = Path(root)
        target = dest / here.relative_to(source)
        target.mkdir(parents=True, exist_ok=True)
        for name in list(dirs):
            if (here / name).is_symlink():
                dirs.remove(name)
                skipped.append(f"{(here / name).relative_to(source)} (a link)")
        for name in files:
            path = here / name
            relative = path.relative_to(source)
            if path.is_symlink() or not path.is_file():
                skipped.append(f"{relative} (not a regular file)")
            elif path.stat().st_size > MAX_FILE_BYTES:
                skipped.append(f"{relative} ({path.stat().st_size} bytes, above {MAX_FILE_BYTES})")
            else:
                shutil.copy2(path, target / name)
    return skipped


def saved_workspace(run_dir: str | Path, step: int) -> Path | None:
    """The workspace kept at the decision point of `step`, or None (a run recorded before snapshots)."""
    folder = snapshot_dir(run_dir, step) / "workspace"
    return folder if folder.is_dir() else None
