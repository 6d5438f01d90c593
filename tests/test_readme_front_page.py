"""The README is a front page: short, its lines readable, its quick start first and pasteable, the rest of the
reference in docs/ and every link to it alive."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def quick_start() -> list[str]:
    """The quick start's shell lines as they would be pasted (continuations joined)."""
    text = README.read_text()
    section = text[text.index("## Quick start"):]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def test_the_readme_is_at_most_150_lines_of_at_most_110_characters():
    lines = README.read_text().splitlines()
    assert len(lines) <= 150
    assert [n for n, line in enumerate(lines, 1) if len(line) > 110] == []


def test_the_quick_start_sets_up_then_puts_the_command_on_path_then_runs_and_forks():
    lines = quick_start()
    assert lines[0].split("#")[0].strip() == "bash setup.sh"
    assert ".venv/bin" in lines[1] and lines[1].startswith("export PATH=")
    commands = [line.split()[1] for line in lines[2:]]
    assert commands[0] == "run" and "trace" in commands and "fork" in commands
    assert "scripted/" in lines[2], "the quick start's run needs no model"


def test_every_link_of_the_readme_and_the_docs_leads_to_a_file_that_exists():
    pages = [README, *sorted(DOCS.glob("*.md"))]
    for page in pages:
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)} links to {target}, which is missing"


def test_every_page_of_the_docs_is_linked_from_the_readme():
    linked = set(re.findall(r"\]\(docs/([^)#]+)", README.read_text()))
    assert {page.name for page in DOCS.glob("*.md")} <= linked
