"""The layout table (docs/layout.md, linked from the README) names what the tree holds: every tracked top-level
folder, and every package and module of kernelseek/ (a new one added without a word in the table fails here)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _table() -> dict[str, str]:
    text = (ROOT / "docs" / "layout.md").read_text()
    rows = re.findall(r"^\| `([^`]+)/` \| (.+) \|$", text, re.MULTILINE)
    return dict(rows)


def test_the_layout_table_names_every_top_level_folder():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    folders = {path.split("/", 1)[0] for path in tracked if "/" in path}
    assert set(_table()) == folders


def test_the_layout_table_names_every_part_of_kernelseek():
    row = _table()["kernelseek"]
    named = set(re.findall(r"`([^`]+)`", row))
    package = ROOT / "kernelseek"
    parts = {f"{p.name}/" for p in package.iterdir() if (p / "__init__.py").is_file()}
    parts |= {p.name for p in package.glob("*.py") if p.name not in ("__init__.py", "__main__.py")}
    assert parts - named == set(), "name these in docs/layout.md's table"
    assert len(parts) > 15
