"""Cheat fixtures: candidates that game a judge rather than fail it (tests/fixtures/cheats/README.md says what
each one does and what the judge must say about it)."""

from __future__ import annotations

from pathlib import Path

CHEATS = Path(__file__).resolve().parent / "fixtures" / "cheats"


def cheat(name: str, tmp_path: Path, skip_every: int | None = None) -> Path:
    """The fixture `name` ("memo_skip.cpp", or its stem "memo_skip"); with `skip_every`, a variant written
    into `tmp_path` with `#define SKIP_EVERY n` prepended (for the memo cheats, which read that macro)."""
    path = CHEATS / name
    if not path.suffix:
        matches = sorted(p for p in CHEATS.glob(f"{name}.*") if p.suffix in (".cpp", ".cu"))
        if len(matches) != 1:
            raise FileNotFoundError(f"no single cheat fixture named {name!r} in {CHEATS}")
        path = matches[0]
    if not path.is_file():
        raise FileNotFoundError(path)
    if skip_every is None:
        return path
    if "SKIP_EVERY" not in path.read_text():
        raise ValueError(f"{path.name} takes no SKIP_EVERY")
    variant = Path(tmp_path) / f"{path.stem}_skip{skip_every}{path.suffix}"
    variant.write_text(f"#define SKIP_EVERY {int(skip_every)}\n{path.read_text()}")
    return variant
