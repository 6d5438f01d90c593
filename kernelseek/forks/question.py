"""The question a fork asks in place of the one its parent asked.

    typed(text)            a person's question (source "human", its kind left to the analysis's rules)
    from_bank(id)          a bank question by id
    of_kind(kind, ...)     a bank question of that kind that fits the decision point, drawn with a seed
                           (the question the parent asked is not drawn again when another one is there);
                           kind "none" asks nothing: the worker is only told to continue

Each returns {text, source, bank_id, question_kind, chooser}; text "" means no question. The chooser (recorded
on the fork's question event, as the questioner records its own) is "human", "fork:bank-id" or "fork:kind-draw".
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

from kernelseek.agent.inbox import cap
from kernelseek.forks.points import DecisionPoint, ForkError
from kernelseek.trace import QUESTION_KINDS

NONE = "none"
KINDS = (*QUESTION_KINDS, NONE)


def typed(text: str) -> dict[str, Any]:
    question, _ = cap(text)
    if not question:
        return nothing()
    return {"text": question, "source": "human", "bank_id": None, "question_kind": None, "chooser": "human"}


def nothing() -> dict[str, Any]:
    return {"text": "", "source": None, "bank_id": None, "question_kind": NONE, "chooser": None}


def from_bank(bank_id: str, bank_dir: Path | None = None) -> dict[str, Any]:
    from kernelseek.bank import BankError, load_bank

    try:
        questions = load_bank(bank_dir)
    except BankError as error:
        raise ForkError(str(error)) from None
    for question in questions:
        if question.id == bank_id:
            return {"text": question.text, "source": "bank", "bank_id": question.id, "question_kind": question.kind,
                    "chooser": "fork:bank-id"}
    raise ForkError(f"--bank-id {bank_id}: the bank has no such question; `kernelseek bank list` shows the ids.")


def of_kind(kind: str, point: DecisionPoint, *, seed: int = 0, bank_dir: Path | None = None) -> dict[str, Any]:
    from kernelseek.bank import BankError, load_bank

    if kind not in KINDS:
        raise ForkError(f"--kind {kind}: use one of {', '.join(KINDS)} ({NONE}: ask nothing, only say continue).")
    if kind == NONE:
        return nothing()
    try:
        questions = [q for q in load_bank(bank_dir) if q.kind == kind and not q.flags]
    except BankError as error:
        raise ForkError(str(error)) from None
    if not questions:
        raise ForkError(f"--kind {kind}: the bank has no question of that kind; add one or pick another kind.")
    pool = [q for q in questions if point.kind in q.fits] or questions
    replaced = (point.asked or {}).get("bank_id")
    pool = sorted([q for q in pool if q.id != replaced] or pool, key=lambda q: q.id)
    digest = hashlib.sha256(f"{seed}|{point.step}|{kind}".encode()).digest()
    question = random.Random(int.from_bytes(digest[:8], "big")).choice(pool)
    return {"text": question.text, "source": "bank", "bank_id": question.id, "question_kind": question.kind,
            "chooser": "fork:kind-draw"}
