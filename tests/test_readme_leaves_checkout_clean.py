"""The README's and docs/' examples: every `kernelseek` command they show is one the CLI accepts (its
subcommand and options exist), and those that run on a CPU leave `git status` as it was: runs, statistics,
reports and caches go to the user's data directory (or wherever a flag says), never into the checkout."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from kernelseek.cli import app

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = "/tmp/kernelseek-readme-script.json"

# Each example as the README writes it (checked below), then how it runs here.
EXAMPLES = [
    ("kernelseek scenarios flash_attn_fwd --arch sm90", ["scenarios", "flash_attn_fwd", "--arch", "sm90"]),
    ("kernelseek run rmsnorm_cpu --model scripted//tmp/script.json --mode auto --target-gain 1.5 --max-steps 3",
     ["run", "rmsnorm_cpu", "--model", f"scripted/{SCRIPT}", "--mode", "auto", "--target-gain", "1.5",
      "--max-steps", "3", "--run-id", "readme", "--unconfined"]),
    ("kernelseek trace show RUN_ID", ["trace", "show", "readme"]),
    ("kernelseek bank list", ["bank", "list"]),
    ("kernelseek trace analyze", ["trace", "analyze", "{runs}"]),
    ("kernelseek report RUN_ID", ["report", "readme", "--json"]),
    ("kernelseek runs", ["runs"]),
]


def pages() -> dict[str, str]:
    """The README and every page of docs/, by name."""
    return {str(p.relative_to(ROOT)): p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]}


def shown_commands() -> list[tuple[str, str]]:
    """(page, command line) for every `kernelseek ...` line of a bash block, continuations joined."""
    found = []
    for page, text in pages().items():
        for block in re.findall(r"```bash\n(.*?)```", text, re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.strip()
                if line.startswith("cd ") and "&&" in line:  # `cd myproject && kernelseek ...`
                    line = line.split("&&", 1)[1].strip()
                if line.startswith("kernelseek "):
                    found.append((page, line))
    return found


def _parse(line: str) -> None:
    """Parse a shown command with the CLI's own parser, as far as its last subcommand, without running it.
    `[--opt]` (optional, as usage lines write it) is parsed as if given."""
    words = shlex.split(line.replace("[", "").replace("]", ""), comments=True)[1:]
    command, name = typer.main.get_command(app), "kernelseek"
    while True:
        context = command.make_context(name, list(words))
        if not hasattr(command, "resolve_command"):  # a command, not a group: parsed
            return
        # a group keeps its subcommand's words apart (click's protected args; typer's copy names them privately)
        protected = getattr(context, "_protected_args", None) or getattr(context, "protected_args", [])
        rest = [*protected, *context.args]
        if not rest:
            return
        name, command, words = command.resolve_command(context, rest)


def test_every_command_the_readme_and_the_docs_show_is_one_the_cli_accepts(capsys):
    shown = shown_commands()
    assert len(shown) > 40 and any(page.startswith("docs/") for page, _ in shown)
    refused = []
    for page, line in shown:
        try:
            _parse(line)
        except Exception as error:  # noqa: BLE001 - the parser's own exceptions, a --help's exit among them
            if type(error).__name__ != "Exit":
                refused.append(f"{page}: {line}: {getattr(error, 'format_message', lambda e=error: str(e))()}")
    capsys.readouterr()  # what a shown `--help` printed
    assert refused == []


NOT_DATA = ("__pycache__", ".pytest_cache/", ".ruff_cache/", ".venv/", ".egg-info/")


def _status() -> set[str]:
    """Changed, untracked and ignored paths (an ignored runs/ folder would hide a run written into the
    checkout), less Python's own caches."""
    out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--ignored"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return {line for line in out.splitlines() if not any(part in line for part in NOT_DATA)}


@pytest.mark.slow
@pytest.mark.skipif(not (ROOT / ".git").exists() or shutil.which("git") is None, reason="needs the git checkout")
def test_readme_examples_leave_git_status_as_it_was(tmp_path):
    shown = "\n".join(pages().values())
    for written, _ in EXAMPLES:
        assert written in shown, f"neither the README nor docs/ shows {written!r} any more: update this test"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELSEEK_")}
    env.update(XDG_DATA_HOME=str(tmp_path / "data"), HOME=str(tmp_path / "home"), COLUMNS="200",
               KERNELSEEK_CACHE=str(tmp_path / "cache"))
    (tmp_path / "home").mkdir()
    script = subprocess.run([sys.executable, "-m", "kernelseek.models.scripted", "rmsnorm_cpu.cpp",
                             "tests/fixtures/loop/wrong.cpp", "tests/fixtures/loop/faster.cpp", ":done"],
                            cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
    Path(SCRIPT).write_text(script)
    before = _status()
    runs = tmp_path / "data" / "kernelseek" / "runs"
    for written, args in EXAMPLES:
        args = [a.replace("{runs}", str(runs)) for a in args]
        done = subprocess.run([sys.executable, "-m", "kernelseek", *args], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, f"{written}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert (runs / "readme" / "trace.jsonl").is_file(), "the run did not go to the user's data directory"
    assert _status() - before == set(), "a README example wrote into the checkout"
