"""`kernelseek bank learn` on the two recorded human-mode sessions in tests/fixtures/sessions/."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelseek.bank.classify import classify
from kernelseek.bank.learn import learn
from kernelseek.bank.model import BankError, load_bank, load_bank_file
from kernelseek.cli import app
from kernelseek.trace import TraceError

SESSIONS = Path(__file__).parents[1] / "fixtures" / "sessions"
A, B = SESSIONS / "session-a", SESSIONS / "session-b"

# original text -> (kind, flags) by the rule-based classifier
EXPECTED_KINDS = {
    "You say it's done, but how far from the peak are you, by your own measurement?": ("reject_limit", []),
    "Can you make the change in a smaller step and check it alone?": ("other", []),
    "Use TMA multicast to load the shared operand once per cluster.": ("inform", ["tma", "multicast"]),
    "Is it really bandwidth-bound? Count the bytes that must move at minimum.": ("reject_limit", []),
    "Leave the tiling alone: have you read what the compiler generated for the inner loop?": ("layer_shift", []),
    "Try unrolling the softmax loop by four.": ("inform", ["softmax"]),
    "Which layer haven't you touched yet: the launch, data movement or synchronization?": ("layer_shift", []),
    "Good work, keep going.": ("other", []),
    "Go back to the best candidate and explain why it is correct.": ("other", []),
    "Which scenario fails, and what is special about its sizes?": ("other", []),
    "Have you tried a larger tile?": ("inform", []),
    "What does the launch itself cost on the small scenarios?": ("layer_shift", []),
    "Is the causal mask work skipped for blocks that are fully masked?": ("layer_shift", ["causal"]),
    "Who says this is the best the hardware can do? The baseline runs on the same machine.": ("reject_limit", []),
    "Use cuBLAS for the second product.": ("inform", ["cublas"]),
    "Summarize what you tried and what each attempt gave.": ("other", []),
}
# the three near-duplicates in session-b merge into session-a's entries
MERGED = {
    "You say it's done, but how far from the peak are you, by your own measurement?":
        ("You say it is done, but how far from peak are you by your own measurement?", ["done"], 2, 1.281),
    "Is it really bandwidth-bound? Count the bytes that must move at minimum.":
        ("Is it really bandwidth bound? Count the bytes that must move at minimum!", ["claimed_limit"], 1, 1.1705),
    "Which layer haven't you touched yet: the launch, data movement or synchronization?":
        ("Which layer have you not touched yet - the launch, data movement or synchronization?",
         ["plateau", "done"], 1, 1.0521),
}


@pytest.fixture()
def bank(tmp_path) -> Path:
    folder = tmp_path / "bank"
    folder.mkdir()
    return folder


def test_learn_gives_the_expected_entries(bank):
    summary = learn([A, B], bank_dir=bank)
    assert summary.messages == 19 and len(summary.added) == 16 and len(summary.merged) == 3
    assert summary.sessions == ["session-a", "session-b"]
    entries = {q.text: q for q in load_bank_file(bank / "learned-humans.yaml").questions}
    assert {text: (q.kind, q.flags) for text, q in entries.items()} == EXPECTED_KINDS
    for text, (other, fits, successes, mean_gain) in MERGED.items():
        q = entries[text]
        assert [(p["session"], p["original"]) for p in q.provenance] == [("session-a", text), ("session-b", other)]
        assert q.fits == fits
        assert q.outcomes == {"asked": 2, "scored": 2, "successes": successes, "mean_gain": mean_gain}
    for text, q in entries.items():
        if text not in MERGED:
            assert len(q.provenance) == 1 and q.outcomes["asked"] == 1
    # scored by what followed: best before, best within the next K evaluations, their ratio
    compiler = entries["Leave the tiling alone: have you read what the compiler generated for the inner loop?"]
    p = compiler.provenance[0]
    assert (p["before"], p["after"], p["gain"], p["success"]) == (0.8, 0.95, 1.1875, True)
    assert p["decision_point"] == "plateau" and p["step"] == 8 and p["method"] == "rules"
    tma = entries["Use TMA multicast to load the shared operand once per cluster."]
    assert tma.outcomes["successes"] == 0 and tma.outcomes["mean_gain"] == pytest.approx(1.0167)
    # the learned file loads beside the seed bank, ids unique
    assert len(load_bank(bank)) == 16


def test_relearning_adds_nothing_and_leaves_the_file_byte_for_byte(bank):
    learn([A, B], bank_dir=bank)
    path = bank / "learned-humans.yaml"
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns
    summary = learn([A, B], bank_dir=bank)
    assert summary.already == 19 and not summary.added and not summary.merged and not summary.changed
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime


def test_learning_the_sessions_one_at_a_time_gives_the_same_bank(bank, tmp_path):
    learn([A], bank_dir=bank)
    assert len(load_bank_file(bank / "learned-humans.yaml").questions) == 9
    summary = learn([A, B], bank_dir=bank)
    assert summary.already == 9 and len(summary.added) == 7 and len(summary.merged) == 3
    other = tmp_path / "other"
    other.mkdir()
    learn([A, B], bank_dir=other)
    assert (bank / "learned-humans.yaml").read_bytes() == (other / "learned-humans.yaml").read_bytes()


def test_a_corrupted_trace_stops_learning_and_never_touches_the_bank(bank, tmp_path):
    learn([A], bank_dir=bank)
    path = bank / "learned-humans.yaml"
    before = path.read_bytes()
    broken = tmp_path / "broken"
    shutil.copytree(B, broken)
    lines = (broken / "trace.jsonl").read_text().splitlines()
    lines[10] = lines[10][:25]  # a corrupted line in the middle
    (broken / "trace.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=r"line 11: not valid JSON"):
        learn([A, broken], bank_dir=bank)
    assert path.read_bytes() == before


def test_a_torn_last_line_is_tolerated(bank, tmp_path):
    torn = tmp_path / "torn"
    shutil.copytree(B, torn)
    text = (torn / "trace.jsonl").read_text()
    (torn / "trace.jsonl").write_text(text + '{"seq": 102, "time": "2026')
    assert learn([torn], bank_dir=bank).messages == 10


def test_a_malformed_learned_file_is_left_as_it_is(bank):
    path = bank / "learned-humans.yaml"
    path.write_text("name: x\nquestions:\n  - id: q1\n    text: hi\n    kind: hint\n    fits: [done]\n")
    before = path.read_bytes()
    with pytest.raises(BankError, match=r"learned-humans.yaml: entry 1 \('q1'\): the field 'kind'"):
        learn([A], bank_dir=bank)
    assert path.read_bytes() == before


def test_runs_that_are_not_human_mode_are_skipped(bank, tmp_path):
    auto = tmp_path / "auto"
    auto.mkdir()
    lines = (A / "trace.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["mode"] = "auto"
    (auto / "trace.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    summary = learn([auto], bank_dir=bank)
    assert summary.skipped_runs == ["session-a"] and summary.messages == 0
    assert not (bank / "learned-humans.yaml").exists()


def test_model_classifier_rewrites_and_falls_back(monkeypatch):
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    reply = '{"kind": "inform", "rewrite": "Load each shared input once for several blocks."}'
    result = classify("Use TMA multicast for the shared operand", model="openai/scripted", mock_response=reply)
    assert (result.kind, result.text, result.flags) == ("inform", "Load each shared input once for several blocks.", [])
    assert result.method == "model:openai/scripted"
    result = classify("Use TMA multicast for the shared operand", model="openai/scripted", mock_response="no idea",
                      terms=[])
    assert result.method == "rules" and result.flags == ["tma", "multicast"] and "unusable" in result.note
    # with the repository's term map, the rules' fallback still rewrites the vendor words
    result = classify("Use TMA multicast for the shared operand", model="openai/scripted", mock_response="no idea")
    assert result.text == "Use bulk asynchronous copies shared by a block group for the shared operand"
    assert result.flags == [] and result.rewrites == ["TMA multicast -> bulk asynchronous copies shared by a block group"]


def test_cli_learn_then_show(bank):
    runner = CliRunner()
    result = runner.invoke(app, ["bank", "learn", str(A), str(B), "--bank-dir", str(bank)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "19 human messages in 2 session(s); 0 already learned, 16 new entries, 3 merged" in result.output
    assert "flagged as operator-specific" in result.output
    result = runner.invoke(app, ["bank", "learn", str(A), str(B), "--bank-dir", str(bank)], env={"COLUMNS": "200"})
    assert "19 already learned, 0 new entries" in result.output and "left unchanged" in result.output
    entry = next(q for q in load_bank(bank) if len(q.provenance) == 2 and q.kind == "reject_limit" and "done" in q.fits)
    result = runner.invoke(app, ["bank", "show", entry.id, "--bank-dir", str(bank)], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "session session-a" in result.output and "session session-b" in result.output
    result = runner.invoke(app, ["bank", "learn", "no-such-run", "--bank-dir", str(bank)])
    assert result.exit_code == 1 and "no such run folder" in result.output and "Traceback" not in result.output


def test_a_message_that_was_not_put_as_a_question_is_not_learned(bank, tmp_path):
    run = tmp_path / "stopped"
    shutil.copytree(A, run)
    lines = (run / "trace.jsonl").read_text().splitlines()
    last = json.loads(lines[-1])
    stop = {"seq": last["seq"] + 1, "time": last["time"], "type": "human_message", "step": last["step"],
            "key": "stop", "text": "/stop", "decision_point": "done", "context": {}}
    (run / "trace.jsonl").write_text("\n".join([*lines, json.dumps(stop)]) + "\n")
    summary = learn([run], bank_dir=bank)
    assert summary.messages == 9
    provenance = load_bank_file(bank / "learned-humans.yaml").questions[0].provenance[0]
    assert provenance["worker_words"] == "I think this is done."


REPO_BANK = Path(__file__).resolve().parents[2] / "bank"


@pytest.fixture()
def seeded(bank) -> Path:
    """A bank folder holding the repository's seed bank and term map."""
    shutil.copy(REPO_BANK / "seed.yaml", bank / "seed.yaml")
    shutil.copy(REPO_BANK / "terms.yaml", bank / "terms.yaml")
    return bank


def test_near_duplicates_of_seed_questions_merge_into_them_and_the_seed_file_is_untouched(seeded):
    seed_before = (seeded / "seed.yaml").read_bytes()
    summary = learn([A, B], bank_dir=seeded)
    assert (seeded / "seed.yaml").read_bytes() == seed_before
    # three of the sessions' messages are near-duplicates of seed questions (similarity 0.78 to 0.94)
    assert sorted(set(summary.merged) & {"oth-smaller-step", "oth-explain-best", "oth-summary"}) == \
        ["oth-explain-best", "oth-smaller-step", "oth-summary"]
    assert summary.messages == 19 and len(summary.added) == 13 and len(summary.merged) == 6
    learned = load_bank_file(seeded / "learned-humans.yaml")
    assert set(learned.merged) == {"oth-smaller-step", "oth-explain-best", "oth-summary"}
    texts = {q.text for q in learned.questions}
    assert not texts & {"Summarize what you tried and what each attempt gave.",
                        "Can you make the change in a smaller step and check it alone?"}
    # loaded together, the seed question carries the session's provenance and its outcome
    by_id = {q.id: q for q in load_bank(seeded)}
    smaller = by_id["oth-smaller-step"]
    sessions = [p for p in smaller.provenance if p["source"] == "session"]
    assert [p["original"] for p in sessions] == ["Can you make the change in a smaller step and check it alone?"]
    assert smaller.provenance[0] == {"source": "hand-written"} and "failing" in smaller.fits
    assert smaller.outcomes["asked"] == 1
    # learning again adds nothing
    again = learn([A, B], bank_dir=seeded)
    assert again.already == 19 and not again.changed


def test_the_term_map_rewrites_operator_and_vendor_words_without_a_model(seeded):
    summary = learn([A, B], bank_dir=seeded)
    entries = {p["original"]: q for q in load_bank_file(seeded / "learned-humans.yaml").questions for p in q.provenance}
    tma = entries["Use TMA multicast to load the shared operand once per cluster."]
    assert tma.text == "Use bulk asynchronous copies shared by a block group to load the shared operand once per block group."
    assert tma.flags == [] and tma.kind == "inform" and tma.id in summary.rewritten
    assert tma.provenance[0]["rewrites"] == ["TMA multicast -> bulk asynchronous copies shared by a block group",
                                             "cluster -> block group"]
    causal = entries["Is the causal mask work skipped for blocks that are fully masked?"]
    assert causal.text == "Is the mask work skipped for blocks that are fully masked?" and causal.flags == []
    assert entries["Try unrolling the softmax loop by four."].text == "Try unrolling the normalization loop by four."
    # what the map does not know stays flagged for a person
    cublas = entries["Use cuBLAS for the second product."]
    assert cublas.flags == ["cublas"] and summary.flagged == [cublas.id]


def test_a_near_duplicate_of_another_learned_file_merges_there(seeded):
    learn([A], bank_dir=seeded, name="first")
    first_before = (seeded / "learned-first.yaml").read_bytes()
    summary = learn([B], bank_dir=seeded, name="second")
    assert (seeded / "learned-first.yaml").read_bytes() == first_before
    second = load_bank_file(seeded / "learned-second.yaml")
    first_ids = {q.id for q in load_bank_file(seeded / "learned-first.yaml").questions}
    into_first = set(second.merged) & first_ids
    assert len(into_first) == 3 and into_first <= set(summary.merged)
    merged = next(q for q in load_bank(seeded) if q.id in into_first and q.kind == "reject_limit" and "done" in q.fits)
    assert [p["session"] for p in merged.provenance] == ["session-a", "session-b"]
    assert merged.outcomes["asked"] == 2


def test_a_merge_naming_no_entry_is_one_sentence(seeded):
    (seeded / "learned-x.yaml").write_text(
        "name: x\nquestions: []\nmerged:\n  nope: {fits: [done], provenance: [{source: session}]}\n")
    with pytest.raises(BankError, match=r"learned-x.yaml: merged 'nope' names no entry of another bank file"):
        load_bank(seeded)
