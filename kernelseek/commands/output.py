"""Rows for people and for scripts: a rich table on a terminal; in a pipe, tab-separated lines that are
never truncated or wrapped (a header line, then one line per row); with --json, JSON.

Cells are plain text, never markup: a question that contains `[/bold]` prints as written.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text


def plain(value: Any) -> str:
    """A cell on one line: tabs and line breaks become spaces."""
    text = "-" if value is None else str(value)
    return " ".join(text.replace("\t", " ").splitlines()) if ("\n" in text or "\r" in text or "\t" in text) else text


def print_rows(console: Console, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
               wide: Sequence[str] = (), right: Sequence[str] = (), titled: bool = True) -> None:
    """The rows as a table on a terminal, else as TSV on stdout, its title on stderr (stdout holds the header
    line and the rows alone). `wide` columns wrap on a terminal; the others keep one line; `right` ones are
    right-aligned; `titled=False` leaves the title out of a pipe (the caller has printed it). A terminal too
    narrow for the table gets each row as a record instead: its short cells on one line, each wide cell
    wrapped below it; no cell is ever cut."""
    if not console.is_terminal:
        if titled:
            note(console, title)
        print("\t".join(plain(c) for c in columns))
        for row in rows:
            print("\t".join(plain(cell) for cell in row))
        return
    cells = [[plain(cell) for cell in row] for row in rows]
    if not _table_fits(console.width, columns, cells, wide):
        return _print_records(console, title, columns, cells, wide)
    table = Table(title=Text(title), expand=bool(wide))
    for index, column in enumerate(columns):
        width = max([len(column)] + [len(row[index]) for row in cells])
        table.add_column(column, overflow="fold", no_wrap=column not in wide, ratio=1 if column in wide else None,
                         min_width=None if column in wide else width,
                         justify="right" if column in right else "left")
    for row in cells:
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)


WIDE_MIN = 30  # a wrapped column narrower than this reads a word or two per line: the rows become records


def _table_fits(width: int, columns: Sequence[str], cells: list[list[str]], wide: Sequence[str]) -> bool:
    """Whether every short column keeps its widest cell and each wide one still gets WIDE_MIN characters
    (a rich table's borders and padding take 3 characters a column and 1 more)."""
    needed = 1 + sum(3 + (WIDE_MIN if column in wide else max([len(column)] + [len(row[i]) for row in cells]))
                     for i, column in enumerate(columns))
    return needed <= width


def _print_records(console: Console, title: str, columns: Sequence[str], cells: list[list[str]],
                   wide: Sequence[str]) -> None:
    """Each row as `first-cell  column value  column value ...`, then its wide cells, indented and wrapped; a
    table without wide cells (all of them figures) instead gives each of a row's cells a line of its own under
    its first, its column's name beside it."""
    console.print(Text(title, style="bold"))
    short = [i for i, column in enumerate(columns) if column not in wide] or [0]
    pad = max((len(columns[i]) for i in short[1:]), default=0)
    for row in cells:
        head = Text(row[short[0]], style="bold")
        for i in (i for i in short[1:] if row[i]):  # an empty cell says nothing
            if wide:
                head.append(f"  {columns[i]} ", style="dim")
                head.append(row[i])
            else:
                head.append(f"\n    {columns[i]:<{pad}}  ", style="dim")
                head.append(row[i])
        console.print(head)
        for i, column in enumerate(columns):
            if column in wide and i not in short:
                console.print(Padding(Text(row[i]), (0, 0, 0, 4), expand=False))


def print_json(data: Any) -> None:
    """JSON on stdout, whatever stdout is (no colour, no wrapping)."""
    print(json.dumps(data, indent=1, default=str))


@contextmanager
def aside(console: Console, when: bool = True) -> Iterator[None]:
    """While in the block (and `when`), what `console` prints goes to stderr: a command printing JSON keeps
    stdout for the JSON alone, its tables and notes still shown."""
    if not when:
        yield
        return
    console.file = sys.stderr
    try:
        yield
    finally:
        console.file = None  # back to whatever sys.stdout is


def note(console: Console, message: str) -> None:
    """A line about the rows (a count, a hint): beside the table on a terminal, on stderr in a pipe, so that
    stdout holds the rows alone."""
    if console.is_terminal:
        console.print(Text(message))
    else:
        Console(stderr=True, highlight=False, soft_wrap=True).print(Text(message))
