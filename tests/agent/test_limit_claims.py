"""The claimed-limit detector measured on a labelled corpus of worker utterances (tests/corpora/limit_claims.yaml).

The corpus was written before the rules; the rules were written from its `dev` half only. The test prints
precision and recall on each half and on the whole, and holds the whole corpus to 90% of both."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kernelseek.agent.claims import rule_claim, sentences

CORPUS = Path(__file__).parents[1] / "corpora" / "limit_claims.yaml"
BAR = 0.90


def utterances(split: str | None = None) -> list[dict]:
    rows = yaml.safe_load(CORPUS.read_text())["utterances"]
    return [u for u in rows if split is None or u["split"] == split]


def measure(rows: list[dict]) -> tuple[float, float, list[str]]:
    tp = fp = fn = 0
    wrong = []
    for row in rows:
        heard = rule_claim(row["text"]) is not None
        tp += heard and row["claim"]
        fp += heard and not row["claim"]
        fn += (not heard) and row["claim"]
        if heard != row["claim"]:
            wrong.append(f"{'missed' if row['claim'] else 'false alarm'}: {row['text']}")
    return tp / (tp + fp), tp / (tp + fn), wrong


def test_the_corpus_is_big_enough_and_balanced():
    rows = utterances()
    claims = [r for r in rows if r["claim"]]
    assert len(rows) >= 60 and 0.4 <= len(claims) / len(rows) <= 0.6
    assert {r["split"] for r in rows} == {"dev", "heldout"}
    assert len({r["text"] for r in rows}) == len(rows)


def test_precision_and_recall_on_the_labelled_corpus(capsys):
    results = {split: measure(utterances(split)) for split in ("dev", "heldout", None)}
    with capsys.disabled():
        for split, (precision, recall, wrong) in results.items():
            n = len(utterances(split))
            print(f"\nlimit-claim detector, {split or 'all'} ({n} utterances): precision {precision:.3f}, "
                  f"recall {recall:.3f}")
            for line in wrong:
                print(f"  {line}")
    precision, recall, _ = results[None]
    assert precision >= BAR and recall >= BAR
    held_precision, held_recall, _ = results["heldout"]
    assert held_precision >= BAR and held_recall >= BAR


@pytest.mark.parametrize("text", [
    "within 5% of the roofline", "about as good as it gets on this hardware", "I don't see a way around it",
    "hit the practical ceiling"])
def test_the_phrasings_the_review_found_missed_are_heard(text):
    assert rule_claim(f"I changed the loop. We are {text}.") is not None


def test_the_claiming_sentence_is_returned_and_questions_are_not_claims():
    words = "I fused the passes. Is it memory-bound now? It is memory-bound now; I will stop here."
    assert sentences(words)[0] == "I fused the passes."
    assert rule_claim(words) == "It is memory-bound now;"
    assert rule_claim("Is it memory-bound now? Let me measure.") is None
