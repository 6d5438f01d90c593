"""Who a run was forked from, and what was forked from it.

    fork.json     in a fork's folder: {parent_run, parent_dir, parent_uuid, step, checkpoint_id,
                  decision_point, replaced, question, workspace_from, created}
    forks.jsonl   in a parent's folder: one line {run, dir, step, created} per fork made from it (appended
                  with one write, so a run that is still going is not disturbed)
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORK_FILE = "fork.json"
CHILDREN_FILE = "forks.jsonl"


def fork_info(run_dir: str | Path) -> dict[str, Any] | None:
    """A fork's record of its parent, or None for a run that is not a fork."""
    path = Path(run_dir) / FORK_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def note_child(parent_dir: Path, child: dict[str, Any]) -> None:
    line = (json.dumps(child) + "\n").encode()
    fd = os.open(parent_dir / CHILDREN_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def children(run_dir: str | Path) -> list[Path]:
    """The folders of the forks made from a run that still exist."""
    path = Path(run_dir) / CHILDREN_FILE
    if not path.is_file():
        return []
    found = []
    for line in path.read_text().splitlines():
        try:
            folder = Path(json.loads(line)["dir"])
        except (ValueError, KeyError, TypeError):
            continue
        if (folder / "config.json").is_file() and folder not in found:
            found.append(folder)
    return found


@dataclass
class Node:
    dir: Path
    fork: dict[str, Any] | None
    children: list[Node] = field(default_factory=list)


def root_of(run_dir: Path) -> Path:
    """The run a family starts from: the parents followed up while their folders exist."""
    seen = {run_dir.resolve()}
    current = run_dir.resolve()
    while (info := fork_info(current)) and Path(info.get("parent_dir", "")).is_dir():
        parent = Path(info["parent_dir"]).resolve()
        if parent in seen:
            break
        seen.add(parent)
        current = parent
    return current


def tree(root: Path, extra: list[Path] = ()) -> Node:
    """The family under `root`: its forks (recorded in forks.jsonl, or any of `extra` naming it as parent)."""
    extra = [p.resolve() for p in extra]

    def build(folder: Path, seen: set[Path]) -> Node:
        node = Node(folder, fork_info(folder))
        kids = [p.resolve() for p in children(folder)]
        kids += [p for p in extra if p not in kids and Path((fork_info(p) or {}).get("parent_dir", "")).resolve() == folder]
        for kid in kids:
            if kid not in seen:
                seen.add(kid)
                node.children.append(build(kid, seen))
        node.children.sort(key=lambda n: ((n.fork or {}).get("step", 0), n.dir.name))
        return node

    root = root.resolve()
    return build(root, {root})
