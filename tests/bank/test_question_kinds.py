"""The rule classifier measured on questions labelled before its rules were written
(tests/corpora/question_kinds.yaml). The test prints the accuracy on the dev half (the rules were written
from it), on the held-out half and on the whole, and holds the whole set and the held-out half to 85%."""

from __future__ import annotations

from pathlib import Path

import yaml

from kernelseek.bank.classify import rule_kind
from kernelseek.trace import QUESTION_KINDS

CORPUS = Path(__file__).parents[1] / "corpora" / "question_kinds.yaml"
BAR = 0.85


def questions(split: str | None = None) -> list[dict]:
    rows = yaml.safe_load(CORPUS.read_text())["questions"]
    return [q for q in rows if split is None or q["split"] == split]


def test_the_labelled_set_covers_every_kind():
    rows = questions()
    assert len(rows) >= 60 and len({q["text"] for q in rows}) == len(rows)
    for split in ("dev", "heldout"):
        assert {q["kind"] for q in questions(split)} == set(QUESTION_KINDS)


def test_rule_classifier_accuracy_on_the_labelled_set(capsys):
    results = {}
    for split in ("dev", "heldout", None):
        rows = questions(split)
        wrong = [(q["kind"], rule_kind(q["text"]), q["text"]) for q in rows if rule_kind(q["text"]) != q["kind"]]
        results[split] = 1 - len(wrong) / len(rows)
        with capsys.disabled():
            print(f"\nquestion-kind classifier, {split or 'all'} ({len(rows)} questions): accuracy {results[split]:.3f}")
            for label, got, text in wrong:
                print(f"  labelled {label}, classified {got}: {text}")
    assert results[None] >= BAR and results["heldout"] >= BAR


def test_the_review_s_two_misfiled_questions():
    assert rule_kind("Look at the SASS.") == "layer_shift"
    assert rule_kind("What limits the occupancy here?") == "layer_shift"
