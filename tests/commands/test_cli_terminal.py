"""Tables on a real terminal (a pseudo-terminal): every cell whole at 80 columns, wrapped, never cut."""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernelseek.bank.model import load_bank

REPO = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run_in_a_terminal(*args: str, columns: int) -> tuple[int, list[str]]:
    """The real command with stdout and stderr a pseudo-terminal `columns` wide; its exit status and its
    lines, colours removed."""
    leader, follower = os.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "50", "TERM": "xterm-256color", "PYTHONPATH": str(REPO)}
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(name, None)
    child = subprocess.Popen([sys.executable, "-m", "kernelseek", *args], cwd=REPO, env=env, stdin=follower,
                             stdout=follower, stderr=follower, close_fds=True)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError as error:  # EIO: the child ended and closed the terminal's last follower
            if error.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    status = child.wait(timeout=60)
    text = ANSI.sub("", b"".join(chunks).decode()).replace("\r\n", "\n")
    return status, text.splitlines()


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("columns", [80, 100])
def test_bank_list_on_a_narrow_terminal_shows_every_question_whole(columns):
    status, lines = run_in_a_terminal("bank", "list", columns=columns)
    assert status == 0, "\n".join(lines)
    assert all(len(line) <= columns for line in lines)
    assert not any("…" in line for line in lines)  # nothing is cut with an ellipsis
    assert not any("│" in line or "┃" in line for line in lines)  # too narrow for a table: one record per row
    shown = _words(" ".join(lines))
    for question in load_bank():
        assert _words(question.text) in shown, question.id
        assert f"{question.id} kind {question.kind} fits {','.join(question.fits)}" in shown


def test_bank_list_on_a_wide_terminal_is_a_table_whose_text_column_is_whole():
    status, lines = run_in_a_terminal("bank", "list", columns=160)
    assert status == 0, "\n".join(lines)
    rows = [line for line in lines if line.startswith("│")]
    assert rows and all(len(line) <= 160 for line in lines)
    assert all(line.count("│") == 8 for line in rows)  # 7 cells: no column is cut off on the right
    texts = _words(" ".join(line.split("│")[7] for line in rows))  # the text column, read down
    ids = {line.split("│")[1].strip() for line in rows} - {""}
    for question in load_bank():
        assert _words(question.text) in texts, question.id
    assert ids == {question.id for question in load_bank()}


def test_the_experiment_table_on_a_narrow_terminal_gives_each_figure_a_line(tmp_path):
    config = REPO / "evals" / "experiments" / "cpu_demo.yaml"
    status, lines = run_in_a_terminal("experiment", str(config), "--report-only", "--out", str(tmp_path / "out"),
                                      columns=80)
    assert status == 1, "\n".join(lines)  # no run has finished: the table of what there is, and the exit says so
    assert all(len(line) <= 80 for line in lines) and not any("│" in line or "…" in line for line in lines)
    start = lines.index("per graph (medians over repeats)")
    for graph in ("kernelseek", "tool_rich", "no_question"):  # each graph's figures under its name, one a line
        at = lines.index(graph, start)
        assert lines[at + 1].split() == ["runs", "0/0"]
        assert lines[at + 2].startswith("    best speedup: median [min–max]  ")
