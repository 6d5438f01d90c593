"""Where a run's LangGraph checkpoints live: a SQLite file (the default: `checkpoints.sqlite` in the run
folder) or a PostgreSQL database shared by a team or a cluster (`--checkpointer postgresql://...`, LangGraph's
PostgresSaver; `pip install 'kernelseek[postgres]'`). Every run keeps its own thread, so many runs share one
database. Give the password through libpq's own means ($PGPASSWORD, ~/.pgpass), not in the URL: the URL is
recorded in the run's config.json."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from kernelseek.settings import ConfigError

URL_SCHEMES = ("postgres://", "postgresql://")


def is_url(ref: str | Path | None) -> bool:
    return isinstance(ref, str) and ref.startswith(URL_SCHEMES)


def redact(url: str) -> str:
    """The URL with any password (user:PASSWORD@, or ?password=) replaced by ***."""
    url = re.sub(r"(://[^:/@]*:)[^@]+@", r"\1***@", url)  # the user may be empty: postgresql://:pw@host
    return re.sub(r"([?&]password=)[^&]+", r"\1***", url)


def password_warning(url: str | Path | None) -> str | None:
    """One sentence, the password left out, when a database URL carries one: the URL is stored in the run's
    config.json, so the password would be too."""
    if not is_url(url) or redact(str(url)) == url:
        return None
    return (f"{redact(str(url))}: the URL carries a password, and the URL is stored in the run's config.json; "
            "give the password through $PGPASSWORD or ~/.pgpass instead (libpq reads both).")


def hide_password(text: str, url: str) -> str:
    """`text` (a driver's message, say) with the URL's password, wherever it is quoted, replaced by ***."""
    found = re.search(r"://[^:/@]*:([^@]+)@", url) or re.search(r"[?&]password=([^&]+)", url)
    return text.replace(found.group(1), "***") if found else text


def check_ref(ref: str) -> str:
    """`sqlite` (the run's own file) or a PostgreSQL URL; anything else is one sentence."""
    if ref == "sqlite" or is_url(ref):
        return ref
    raise ConfigError(f"--checkpointer {ref!r}: use sqlite (the default, a file in the run folder) or a PostgreSQL "
                      "URL such as postgresql://user@host:5432/kernelseek.")


@contextmanager
def open_saver(ref: str | Path) -> Iterator[Any]:
    """The checkpointer for `ref` (a SQLite file's path, or a PostgreSQL URL), its connection closed on leaving
    the block: a connection left open outlives the run and keeps reading the pages it cached."""
    saver = _postgres(str(ref)) if is_url(ref) else _sqlite(Path(ref))
    with closing(saver.conn):
        yield saver


def _sqlite(path: Path) -> Any:
    from langgraph.checkpoint.sqlite import SqliteSaver

    connection = sqlite3.connect(path, check_same_thread=False)
    try:
        problem = connection.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.DatabaseError as error:
        problem = str(error)
    if problem != "ok":
        connection.close()
        raise ConfigError(f"{path}: the checkpoint database is corrupted ({problem}); restore it from a copy, or "
                          "start a new run (the trace and the candidates are intact).")
    return SqliteSaver(connection)


def _postgres(url: str) -> Any:
    try:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row
    except ImportError:
        raise ConfigError(f"{redact(url)}: PostgreSQL checkpoints need LangGraph's Postgres checkpointer; "
                          "pip install 'kernelseek[postgres]'.") from None
    try:  # the settings PostgresSaver documents for a connection it does not own
        connection = psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row,
                                     connect_timeout=10)
    except psycopg.Error as error:
        reason = " ".join(hide_password(str(error), url).split())[:200]
        raise ConfigError(f"{redact(url)}: cannot connect to the checkpoint database ({reason}); check that the "
                          "server runs and the URL, user and database are right.") from None
    saver = PostgresSaver(connection)
    saver.setup()  # its tables and migrations; does nothing when they exist
    return saver


def has_ended(snapshot: Any) -> bool:
    """Whether a run's latest checkpoint (a LangGraph StateSnapshot) is its end.

    `snapshot.next` alone does not say: LangGraph saves each node's writes as the node finishes and the step's
    checkpoint after, and a process stopped between the two leaves a thread whose `next` is empty though the
    graph has more to do. Its `tasks` still list the step; at the real end there are none."""
    return bool(snapshot.values) and not snapshot.tasks


def pending_nodes(snapshot: Any) -> list[str]:
    """The nodes a resume of this checkpoint goes on from (those of its unfinished step)."""
    return [task.name for task in snapshot.tasks]
