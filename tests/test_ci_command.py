"""CI runs the README's test command, word for word: what a contributor runs is what lands."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_ends_with_the_readmes_test_command():
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"- The tests: `([^`]+)`", readme)
    assert command, "README.md has no '- The tests: `COMMAND`' line"
    steps = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    assert steps[-1].strip() == command.group(1)
