"""Rows for people and for scripts: a rich table on a terminal; in a pipe, tab-separated lines that are
never truncated or wrapped (a header line, then one line per row); with --json, JSON.

Cells are plain text, never markup: a question that contains `[/bold]` prints as written.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text


def plain(value: Any) -> str:
    """A cell on one line: tabs and line breaks become spaces."""
    text = "-" if value is None else str(value)
    return " ".join(text.replace("\t", " ").splitlines()) if ("\n" in text or "\r" in text or "\t" in text) else text


def print_rows(console: Console, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
               wide: Sequence[str] = (), right: Sequence[str] = (), titled: bool = True) -> None:
    """The rows as a table on a terminal, else as TSV on stdout, its title on stderr (stdout holds the header
    line and the rows alone). `wide` columns fold on a terminal; the others keep one line; `right` ones are
    right-aligned; `titled=False` leaves the title out of a pipe (the caller has printed it)."""
    if not console.is_terminal:
        if titled:
            note(console, title)
        print("\t".join(plain(c) for c in columns))
        for row in rows:
            print("\t".join(plain(cell) for cell in row))
        return
    table = Table(title=Text(title))
    for column in columns:
        table.add_column(column, overflow="fold", no_wrap=column not in wide, ratio=1 if column in wide else None,
                         min_width=24 if column in wide else None, justify="right" if column in right else "left")
    for row in rows:
        table.add_row(*(Text(plain(cell)) for cell in row))
    console.print(table)


def print_json(data: Any) -> None:
    """JSON on stdout, whatever stdout is (no colour, no wrapping)."""
    print(json.dumps(data, indent=1, default=str))


def note(console: Console, message: str) -> None:
    """A line about the rows (a count, a hint): beside the table on a terminal, on stderr in a pipe, so that
    stdout holds the rows alone."""
    if console.is_terminal:
        console.print(Text(message))
    else:
        Console(stderr=True, highlight=False, soft_wrap=True).print(Text(message))
