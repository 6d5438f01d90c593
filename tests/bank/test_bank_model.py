"""The bank's data: the seed bank's coverage and wording, validation of bad files, atomic writes."""

from __future__ import annotations

import collections
import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from kernelseek.bank.classify import operator_words, rule_kind
from kernelseek.bank.model import (
    BankError,
    BankFile,
    Question,
    default_bank_dir,
    load_bank,
    load_bank_file,
    load_stats,
    save_stats,
    write_bank_file,
)
from kernelseek.cli import app
from kernelseek.trace import DECISION_POINTS, QUESTION_KINDS

SEED = default_bank_dir() / "seed.yaml"
ROOT = Path(__file__).resolve().parents[2]


def seed_questions() -> list[Question]:
    return load_bank_file(SEED).questions


def test_seed_bank_size_and_coverage():
    questions = seed_questions()
    assert len(questions) >= 40
    kinds = collections.Counter(q.kind for q in questions)
    assert set(kinds) == set(QUESTION_KINDS)
    assert kinds["layer_shift"] + kinds["reject_limit"] >= 0.75 * len(questions)
    assert 3 <= kinds["inform"] <= 8
    for point in DECISION_POINTS:
        fitting = {q.kind for q in questions if point in q.fits}
        assert {"layer_shift", "reject_limit"} <= fitting, point
    assert all(q.provenance == [{"source": "hand-written"}] for q in questions)


def test_seed_questions_are_short_and_unique():
    questions = seed_questions()
    assert len({q.text.lower() for q in questions}) == len(questions)
    assert all(len(q.text.split()) <= 30 for q in questions)


def test_no_seed_question_names_an_operator_library_or_vendor_trick():
    offenders = {q.id: operator_words(q.text) for q in seed_questions() if operator_words(q.text)}
    assert offenders == {}


@pytest.mark.parametrize("text, word", [
    ("Use TMA multicast here", "tma"), ("Call cuBLAS instead", "cublas"), ("Fuse the softmax", "softmax"),
    ("Is the causal mask skipped?", "causal"), ("Try wgmma with a larger tile", "wgmma"),
    ("Port it to CUTLASS", "cutlass"), ("Does it run well on Hopper?", "hopper"),
    ("Use cp.async for the loads", "cp.async"), ("What does FA3 do?", "fa3"),
])
def test_operator_words_are_found(text, word):
    assert word in operator_words(text)


def test_rule_classifier_agrees_with_the_seed_bank():
    disagreements = {q.id: rule_kind(q.text) for q in seed_questions() if rule_kind(q.text) != q.kind}
    assert disagreements == {}


def write(path: Path, data) -> Path:
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data), encoding="utf-8")
    return path


GOOD = {"id": "q1", "text": "Which layer?", "kind": "layer_shift", "fits": ["plateau"],
        "provenance": [{"source": "hand-written"}]}


@pytest.mark.parametrize("entry, words", [
    ({**GOOD, "kind": "hint"}, ["entry 1 ('q1')", "'kind'", "'hint'"]),
    ({k: v for k, v in GOOD.items() if k != "text"}, ["entry 1 ('q1')", "'text'", "missing"]),
    ({**GOOD, "fits": ["stuck"]}, ["'fits'", "'stuck'"]),
    ({**GOOD, "fits": []}, ["'fits'"]),
    ({**GOOD, "id": "has space"}, ["'id'"]),
    ({**GOOD, "colour": "red"}, ["'colour'", "not a known field"]),
    ({**GOOD, "outcomes": {"asked": "many"}}, ["'outcomes'", "'asked'"]),
    ("just a string", ["entry 1", "not a mapping"]),
])
def test_a_bad_entry_gets_one_sentence_naming_file_entry_and_field(tmp_path, entry, words):
    path = write(tmp_path / "bad.yaml", {"questions": [entry]})
    with pytest.raises(BankError) as error:
        load_bank_file(path)
    message = str(error.value)
    assert str(path) in message and "\n" not in message and message.endswith(".")
    for word in words:
        assert word in message


def test_malformed_yaml_and_shapes(tmp_path):
    with pytest.raises(BankError, match=r"not valid YAML at line \d+"):
        load_bank_file(write(tmp_path / "a.yaml", "questions:\n  - id: [unclosed\n"))
    with pytest.raises(BankError, match="'questions' is missing"):
        load_bank_file(write(tmp_path / "b.yaml", {"name": "x"}))
    with pytest.raises(BankError, match="repeats an earlier entry"):
        load_bank_file(write(tmp_path / "c.yaml", {"questions": [GOOD, GOOD]}))


def test_ids_must_be_unique_across_files(tmp_path):
    write(tmp_path / "one.yaml", {"questions": [GOOD]})
    write(tmp_path / "two.yaml", {"questions": [GOOD]})
    with pytest.raises(BankError, match="already used in one.yaml"):
        load_bank(tmp_path)


def test_cli_reports_a_malformed_bank_in_one_line(tmp_path):
    write(tmp_path / "seed.yaml", {"questions": [{**GOOD, "kind": "hint"}]})
    result = CliRunner().invoke(app, ["bank", "list", "--bank-dir", str(tmp_path)])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) <= 3 and "'kind'" in result.output  # one sentence (rich may wrap it)
    result = CliRunner().invoke(app, ["bank", "list", "--kind", "hint"])
    assert result.exit_code == 1 and "the kind 'hint' is unknown" in result.output


def test_cli_list_and_show_the_seed_bank():
    result = CliRunner().invoke(app, ["bank", "list", "--fits", "failing"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "ls-failing-layer" in result.output and "rl-failing-limit" in result.output
    assert "rl-peak-source" not in result.output  # fits claimed_limit only
    result = CliRunner().invoke(app, ["bank", "show", "rl-how-far"])
    assert result.exit_code == 0 and "reject_limit" in result.output and "hand-written" in result.output
    result = CliRunner().invoke(app, ["bank", "show", "rl-how-fa"])
    assert result.exit_code == 1 and "did you mean rl-how-far" in result.output


def test_a_failed_write_leaves_the_old_file_intact(tmp_path, monkeypatch):
    path = write(tmp_path / "learned-x.yaml", {"name": "x", "questions": [GOOD]})
    before = path.read_bytes()
    bank = load_bank_file(path)
    bank.questions.append(Question(id="q2", text="How far from the ceiling?", kind="reject_limit",
                                   fits=["done"], provenance=[{"source": "hand-written"}]))

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        write_bank_file(bank)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["learned-x.yaml"]  # no temporary file left
    monkeypatch.undo()
    write_bank_file(bank)
    assert [q.id for q in load_bank_file(path).questions] == ["q1", "q2"]


def test_write_refuses_an_entry_it_could_not_read_back(tmp_path):
    path = tmp_path / "learned-y.yaml"
    bank = BankFile(path=path, name="y", description="", questions=[
        Question(id="q1", text="x?", kind="nonsense", fits=["done"])])
    with pytest.raises(BankError):
        write_bank_file(bank)
    assert not path.exists()


# --- the format's models (kernelseek/bank/schema.py): unknown keys anywhere, files written before them ----

@pytest.mark.parametrize("data, words", [
    ({"questions": [GOOD], "version": 2},
     "the field 'version' is not a field of a bank file (its fields are name, description, questions, merged); "
     "remove it or correct its name."),
    ({"questions": [GOOD], "merged": {"q9": {"provenance": [{"source": "session"}], "note": "x"}}},
     "merged 'q9' has the unknown field 'note' (it holds fits and provenance); fix that entry."),
    ({"questions": [{**GOOD, "outcomes": {"asked": 1, "wins": 1}}]},
     "entry 1 ('q1'): the field 'outcomes' has the unknown field 'wins' (expected asked, scored, successes, "
     "mean_gain); fix that entry."),
])
def test_an_unknown_key_anywhere_in_a_bank_file_is_one_sentence(tmp_path, data, words):
    path = write(tmp_path / "learned-x.yaml", data)
    with pytest.raises(BankError) as error:
        load_bank_file(path)
    assert str(error.value) == f"{path}: {words}"


def test_bank_files_written_before_the_models_still_load(tmp_path):
    """tests/fixtures/bank/learned-humans.yaml is what `bank learn` wrote from the two fixture sessions before
    the format became pydantic models (outcomes, session provenance with every key, a `merged` entry)."""
    written = Path(__file__).parents[1] / "fixtures" / "bank" / "learned-humans.yaml"
    bank = tmp_path / "bank"
    bank.mkdir()
    shutil.copy(ROOT / "bank" / "seed.yaml", bank)
    shutil.copy(written, bank)
    raw = yaml.safe_load(written.read_text())
    questions = {q.id: q for q in load_bank(bank)}
    assert len(questions) == len(yaml.safe_load((ROOT / "bank" / "seed.yaml").read_text())["questions"]) + \
        len(raw["questions"])
    for entry in raw["questions"]:  # kept as written: every provenance key, the outcomes
        assert questions[entry["id"]].provenance == entry["provenance"]
        assert questions[entry["id"]].outcomes == entry.get("outcomes", {})
    assert raw["merged"]
    for qid, merged in raw["merged"].items():  # applied to the entries of the seed they name
        assert all(p in questions[qid].provenance for p in merged["provenance"]) and questions[qid].source == "seed.yaml"
    for folder in (ROOT / "bank", ROOT / "evals" / "experiments" / "cpu_forks" / "bank"):  # the shipped banks
        assert load_bank(folder)


# --- stats.json (kernelseek/bank/schema.py's StatsFile): the same one sentence for a bad file ----------------

OUTCOME = {"id": "q1", "seq": 7, "before": 1.0, "after": 1.3, "gain": 1.3, "success": True, "features": ["claim:memory"]}


def _stats(runs: dict) -> dict:
    return {"version": 1, "runs": runs}


@pytest.mark.parametrize("data, words", [
    ({**_stats({}), "total": 3},
     "the field 'total' is not a field of stats.json (its fields are version, runs); remove it or correct its name."),
    ({"version": 1}, "the field 'runs' is missing or not a mapping; restore or delete the file."),
    (_stats([]), "the field 'runs' is missing or not a mapping; restore or delete the file."),
    ({"version": 2, "runs": {}}, "the field 'version' is 2, not 1; this file is in another format."),
    (_stats({"u1": {"outcomes": [], "host": "x"}}),
     "run 'u1': the field 'host' is not a field of a recorded run (its fields are recorded, run, outcomes); "
     "restore or delete the file."),
    (_stats({"u1": {"recorded": "2026-12-01"}}),
     "run 'u1': the field 'outcomes' is missing or not a list; restore or delete the file."),
    (_stats({"u1": {"outcomes": [{"seq": 1}]}}), "run 'u1': an outcome lacks its 'id'; restore or delete the file."),
    (_stats({"u1": {"outcomes": [{**OUTCOME, "wins": 1}]}}),
     "run 'u1': outcome 'q1' has the unknown field 'wins' (its fields are id, seq, before, after, gain, success, "
     "features); restore or delete the file."),
    (_stats({"u1": {"outcomes": [{**OUTCOME, "gain": -1.5}]}}),
     "run 'u1': outcome 'q1' has 'gain' = -1.5, which is not a finite number of 0 or more; restore or delete the "
     "file."),
    (_stats({"u1": {"outcomes": [{**OUTCOME, "before": True}]}}),
     "run 'u1': outcome 'q1' has 'before' = True, which is not a finite number of 0 or more; restore or delete the "
     "file."),
    (_stats({"u1": {"outcomes": [{**OUTCOME, "success": "yes"}]}}),
     "run 'u1': outcome 'q1' has 'success' = 'yes', which is not true or false; restore or delete the file."),
    (_stats({"u1": {"outcomes": [OUTCOME]}, "u2": {"outcomes": [{**OUTCOME, "features": "claim"}]}}),
     "run 'u2': outcome 'q1' has 'features' = 'claim', which is not a list of strings; restore or delete the file."),
])
def test_a_bad_stats_file_is_one_sentence_naming_the_field(tmp_path, data, words):
    path = tmp_path / "stats.json"
    path.write_text(json.dumps(data))
    with pytest.raises(BankError) as error:
        load_stats(path)
    assert str(error.value) == f"{path}: {words}"


def test_stats_as_the_runs_record_them_load_as_written(tmp_path):
    """The shape record_run_outcomes writes (and one without the optional keys) loads unchanged."""
    data = _stats({"u1": {"recorded": "2026-12-01T10:00:00+00:00", "run": "r1", "outcomes": [OUTCOME]},
                   "u2": {"outcomes": [{"id": "q2", "seq": 3, "before": None, "after": 2, "gain": None,
                                        "success": False}]}})
    save_stats(data, tmp_path)
    assert load_stats(tmp_path) == data
    assert load_stats(tmp_path / "absent") == _stats({})


def test_shapes_numbers_and_plurals_are_flagged():
    assert operator_words("Use 128x128 tiles at d128.") == ["128x128", "d128"]
    assert operator_words("Are the warpgroups balanced, and the tensor cores busy?") == ["warpgroup", "tensor cores"]
    assert operator_words("Try a tile of 128 by 64.") == ["128", "64"]
    assert operator_words("How far from the peak are you, in percent?") == []
