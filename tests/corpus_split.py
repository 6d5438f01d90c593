"""The one split of a labelled corpus into a development part and a held-out part.

A text is held out when the first 32 bits of its SHA-256 are divisible by 3 (about a third of the
texts). The split depends on nothing but the text, so it never changes as rows are added or reordered,
and nobody chooses which rows are held out. Rules may be revised by reading the `dev` part's failures;
of the `heldout` part only the numbers are printed.
"""

from __future__ import annotations

import hashlib


def split_of(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return "heldout" if int(digest[:8], 16) % 3 == 0 else "dev"
