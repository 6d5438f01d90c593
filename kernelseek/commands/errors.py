"""How every command ends on bad input: one sentence, `error: ...`, and an exit status."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

# on stderr, so that stdout holds only a command's output; one unbroken line in a pipe, at any terminal width
_console = Console(stderr=True, soft_wrap=True, highlight=False)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print the sentence (brackets in it shown as typed, never read as markup) and exit with `code` (2: bad
    input; 1: the work failed; 3: stopped waiting for a person; 130: interrupted)."""
    _console.print(f"[red]error:[/] {escape(message)}")
    raise typer.Exit(code)
