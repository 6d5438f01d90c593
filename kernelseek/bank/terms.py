"""The term map (`bank/terms.yaml`): operator- and vendor-specific words rewritten to their layer.

    text, rewrites = rewrite_terms("Look at the SASS.")   # "Look at the compiled instructions.",
                                                           # ["the SASS -> the compiled instructions"]

Terms match whole words, ignoring case, longest first (so "TMA multicast" wins over "TMA"); a
replacement that starts a sentence is capitalised. A missing map rewrites nothing; a malformed one
raises BankError naming the file and the entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from kernelseek.bank.model import BankError, default_bank_dir

TERMS_FILE = "terms.yaml"


@dataclass(frozen=True)
class Term:
    word: str
    to: str
    layer: str


def terms_path(bank_dir: str | Path | None = None) -> Path:
    return (Path(bank_dir) if bank_dir is not None else default_bank_dir()) / TERMS_FILE


def load_terms(bank_dir: str | Path | None = None) -> list[Term]:
    """The map's terms, longest first; [] when the bank folder has no terms.yaml."""
    path = terms_path(bank_dir)
    if not path.is_file():
        return []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError:
        raise BankError(f"{path}: not valid YAML; fix the syntax.") from None
    entries = data.get("terms") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise BankError(f"{path}: the field 'terms' is missing or not a list; add a list of {{layer, to, terms}}.")
    result: list[Term] = []
    for index, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("to"), str) or not isinstance(entry.get("terms"), list) \
                or not all(isinstance(t, str) and t.strip() for t in entry["terms"]):
            raise BankError(f"{path}: entry {index}: needs 'to' (the replacement) and 'terms' (a list of words); "
                            "fix that entry.")
        result.extend(Term(word=t.strip(), to=entry["to"].strip(), layer=str(entry.get("layer") or ""))
                      for t in entry["terms"])
    return sorted(result, key=lambda t: -len(t.word))


def rewrite_terms(text: str, terms: list[Term] | None = None, *, bank_dir: str | Path | None = None
                  ) -> tuple[str, list[str]]:
    """`text` with every mapped term replaced by its layer's words, and the rewrites made ("a -> b")."""
    terms = load_terms(bank_dir) if terms is None else terms
    if not terms:
        return text, []
    by_word = {t.word.lower(): t for t in terms}
    pattern = re.compile(r"(?<![A-Za-z0-9_.])(" + "|".join(re.escape(t.word) for t in terms) + r")(?![A-Za-z0-9_])",
                         re.IGNORECASE)
    rewrites: list[str] = []

    def replace(match: re.Match[str]) -> str:
        term = by_word[match.group(1).lower()]
        note = f"{match.group(1)} -> {term.to}"
        if note not in rewrites:
            rewrites.append(note)
        before = text[:match.start()].rstrip()
        starts_sentence = not before or before[-1] in ".!?:"
        return term.to[:1].upper() + term.to[1:] if starts_sentence else term.to

    rewritten = pattern.sub(replace, text)
    # "the the compiled instructions": a term's own article is kept by the replacement
    rewritten = re.sub(r"\b(the|a|an) (the|a|an) ", lambda m: m.group(2) + " ", rewritten, flags=re.IGNORECASE)
    return rewritten, rewrites
