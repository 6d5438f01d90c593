"""The rule classifier measured on questions labelled before its rules were written.

tests/corpora/question_kinds.yaml: the first set, split by hand; held to 85% accuracy on the whole and held-out half.
tests/corpora/questions_asked.yaml: a larger set (240 questions) labelled before the rules were revised against
it, split once by a hash of each text (tests/corpus_split.py). The rules were revised by reading its `dev` failures
only: the test prints those, and of the `heldout` part only the numbers, and fails when held-out accuracy is below
0.90 or held-out *inform* recall below 0.85 (an *inform* question read as *layer_shift* pushes the analysis toward
saying the method's claim holds)."""

from __future__ import annotations

from pathlib import Path

import yaml
from corpus_split import split_of

from kernelseek.bank.classify import rule_kind
from kernelseek.trace import QUESTION_KINDS

CORPUS = Path(__file__).parents[1] / "corpora" / "question_kinds.yaml"
WIDE = Path(__file__).parents[1] / "corpora" / "questions_asked.yaml"
BAR = 0.85
ACCURACY_TARGET, INFORM_RECALL_TARGET = 0.90, 0.85


def wide(split: str) -> list[dict]:
    return [q for q in yaml.safe_load(WIDE.read_text())["questions"] if split_of(q["text"]) == split]


def scores(rows: list[dict]) -> tuple[float, float, list[tuple[str, str, str]]]:
    wrong = [(q["kind"], rule_kind(q["text"]), q["text"]) for q in rows if rule_kind(q["text"]) != q["kind"]]
    inform = [q for q in rows if q["kind"] == "inform"]
    inform_recall = sum(rule_kind(q["text"]) == "inform" for q in inform) / len(inform)
    return 1 - len(wrong) / len(rows), inform_recall, wrong


def test_the_wide_set_is_big_covers_every_kind_and_is_split_once():
    rows = yaml.safe_load(WIDE.read_text())["questions"]
    assert len(rows) >= 200 and len({q["text"] for q in rows}) == len(rows)
    assert all(set(q) == {"kind", "text"} for q in rows)  # no hand-chosen split: the hash decides
    for split in ("dev", "heldout"):
        assert {q["kind"] for q in wide(split)} == set(QUESTION_KINDS)
    assert sum(q["kind"] == "inform" for q in wide("heldout")) >= 15


def test_held_out_accuracy_and_inform_recall_on_the_wide_set(capsys):
    dev_accuracy, dev_inform, dev_wrong = scores(wide("dev"))
    accuracy, inform_recall, _ = scores(wide("heldout"))  # its failures are not printed: no rule is tuned on them
    with capsys.disabled():
        print(f"\nquestion-kind classifier, questions_asked dev ({len(wide('dev'))}): accuracy {dev_accuracy:.3f}, "
              f"inform recall {dev_inform:.3f}")
        for label, got, text in dev_wrong:
            print(f"  labelled {label}, classified {got}: {text}")
        print(f"question-kind classifier, questions_asked HELD OUT ({len(wide('heldout'))}): accuracy {accuracy:.3f}, "
              f"inform recall {inform_recall:.3f} (targets: >= {ACCURACY_TARGET}, >= {INFORM_RECALL_TARGET})")
    assert accuracy >= ACCURACY_TARGET and inform_recall >= INFORM_RECALL_TARGET


def test_proposals_and_statements_of_a_mechanism_are_inform():
    for text in ("Would TMA multicast help with the K tiles?", "What if you stored the intermediate in half precision?",
                 "Have you thought about a persistent kernel?", "The register file is 64K registers per SM.",
                 "Asynchronous copies let the next tile load while this one is computed."):
        assert rule_kind(text) == "inform", text
    for text in ("Where does the time actually go?", "What are the warps waiting for most of the time?"):
        assert rule_kind(text) == "layer_shift", text


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
            for label, got, text in wrong if split == "dev" else []:  # held-out failures are not shown
                print(f"  labelled {label}, classified {got}: {text}")
    assert results[None] >= BAR and results["heldout"] >= BAR


def test_the_review_s_two_misfiled_questions():
    assert rule_kind("Look at the SASS.") == "layer_shift"
    assert rule_kind("What limits the occupancy here?") == "layer_shift"
