"""Retrieval over folders of documents the user points the tool-rich worker at: plain-text search, no service.

Every text file under the folders (Markdown, text, reStructuredText, HTML with its tags dropped, source
files) is cut into passages of a few lines; a query's words are scored against each passage with BM25,
and the best passages come back with their file and line.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

SUFFIXES = {".md", ".txt", ".rst", ".html", ".htm", ".cu", ".cuh", ".h", ".hpp", ".c", ".cc", ".cpp", ".py",
            ".ptx", ".json", ".yaml", ".yml", ".tex"}
PASSAGE_LINES = 12
MAX_FILE_BYTES = 2_000_000
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]+|\d+")
_TAG = re.compile(r"<[^>]+>")


@dataclass
class Passage:
    path: Path
    line: int
    text: str
    words: Counter


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def passages(folders: list[Path]) -> list[Passage]:
    found: list[Passage] = []
    for folder in folders:
        files = [folder] if folder.is_file() else sorted(p for p in folder.rglob("*") if p.is_file())
        for path in files:
            if path.suffix.lower() not in SUFFIXES or path.stat().st_size > MAX_FILE_BYTES:
                continue
            text = path.read_text(errors="replace")
            if path.suffix.lower() in (".html", ".htm"):
                text = re.sub(r"[ \t]+", " ", _TAG.sub(" ", text))
            lines = text.splitlines()
            for start in range(0, len(lines), PASSAGE_LINES // 2):  # overlapping windows
                chunk = "\n".join(lines[start:start + PASSAGE_LINES]).strip()
                if chunk:
                    found.append(Passage(path, start + 1, chunk, Counter(_words(chunk))))
                if start + PASSAGE_LINES >= len(lines):
                    break
    return found


def search_documents(folders: list[str | Path], query: str, *, k: int = 4, width: int = 700) -> str:
    """The `k` passages that best match `query` (BM25), as text for the worker; 'unavailable: ...' without documents."""
    roots = [Path(f).expanduser() for f in folders]
    missing = [str(r) for r in roots if not r.exists()]
    roots = [r for r in roots if r.exists()]
    if not roots:
        where = f" ({', '.join(missing)} does not exist)" if missing else ""
        return ("unavailable: no documents folder is configured" + where +
                "; point the tool-rich graph at one with `docs:` in the experiment config or KERNELSEEK_DOCS.")
    terms = list(dict.fromkeys(_words(query)))
    if not terms:
        return "error: the query has no words to search for."
    corpus = passages(roots)
    if not corpus:
        return f"no text documents under {', '.join(map(str, roots))}."
    n = len(corpus)
    average = sum(sum(p.words.values()) for p in corpus) / n
    df = {t: sum(1 for p in corpus if t in p.words) for t in terms}
    scored = []
    for p in corpus:
        length = sum(p.words.values())
        score = 0.0
        for t in terms:
            f = p.words.get(t, 0)
            if f:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                score += idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * length / average))
        if score > 0:
            scored.append((score, p))
    if not scored:
        return f"no passage matches {query!r} in {len(corpus)} passages under {', '.join(map(str, roots))}."
    scored.sort(key=lambda sp: -sp[0])
    out, seen = [], set()
    for score, p in scored:
        if (p.path, p.line) in seen or len(out) >= k:
            continue
        seen.update({(p.path, p.line), (p.path, p.line + PASSAGE_LINES // 2), (p.path, p.line - PASSAGE_LINES // 2)})
        out.append(f"--- {p.path}:{p.line} (score {score:.2f})\n{p.text[:width]}")
    return "\n".join(out)
