"""The formats of a bank file and of stats.json as pydantic models (the layouts are in kernelseek/bank/model.py's
docstring).

`load_bank_file` validates the parsed YAML with these and keeps the data as written (provenance mappings
keep every key they have), so a file that loaded before loads the same. A problem is one sentence naming
the file, the entry or `merged` id, the field and the fix: `sentence` turns pydantic's first error into it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints, ValidationError

from kernelseek import validation
from kernelseek.trace import DECISION_POINTS, QUESTION_KINDS

ID = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"
# the areas of a claimed limit (kernelseek.agent.chooser.claim_area), and "any"
CLAIM_AREAS = ("any", "memory", "compute", "launch", "compiler", "other")
DecisionPoint = Literal[DECISION_POINTS]  # type: ignore[valid-type]
# a count or a ratio: finite and not negative (NaN and infinities would poison the policy's means)
Amount = Annotated[int, Field(ge=0, strict=True)] | Annotated[float, Field(ge=0, allow_inf_nan=False, strict=True)]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Provenance(BaseModel):
    """Where an entry came from: {source: hand-written}, or a session's message (any further keys)."""

    model_config = ConfigDict(extra="allow")
    source: Any


class Outcomes(_Closed):
    asked: Amount | None = None
    scored: Amount | None = None
    successes: Amount | None = None
    mean_gain: Amount | None = None


class BankEntry(_Closed):
    id: Annotated[str, StringConstraints(pattern=ID), Field(strict=True)]
    text: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1), Field(strict=True)]
    kind: Literal[QUESTION_KINDS]  # type: ignore[valid-type]
    fits: Annotated[list[DecisionPoint], Field(min_length=1)]
    provenance: list[Provenance] = []
    flags: list[Annotated[str, Field(strict=True)]] = []
    outcomes: Outcomes = Outcomes()
    claims: list[Literal[CLAIM_AREAS]] = []  # type: ignore[valid-type]


class MergedEntry(_Closed):
    """What a learned file adds to an entry of another bank file."""

    fits: list[DecisionPoint] = []
    provenance: list[Provenance]


class BankFileFields(_Closed):
    """The top level; each entry of `questions` is checked on its own (as a BankEntry), to be named by number."""

    name: Any = None
    description: Any = None
    questions: list[Any]
    merged: dict[str, Any] | None = None


ENTRY_FIELDS = tuple(BankEntry.model_fields)
OUTCOME_FIELDS = tuple(Outcomes.model_fields)
FILE_FIELDS = tuple(BankFileFields.model_fields)
_POINTS = ", ".join(DECISION_POINTS)
_WHAT = {  # what a field of an entry must be, for a value of the wrong shape
    "id": "must be a word of letters, digits, '-', '_' or '.'",
    "text": "must be a non-empty string",
    "fits": f"must be a non-empty list of decision points ({_POINTS})",
    "provenance": "must be a list of mappings, each with a 'source'",
    "flags": "must be a list of strings",
    "outcomes": "must be a mapping",
}


def entry_problem(entry: Any) -> tuple[str, str] | None:
    """(field, what is wrong) for a bad bank entry, or None."""
    if not isinstance(entry, dict):
        return ("", "is not a mapping of fields")
    try:
        BankEntry.model_validate(entry)
    except ValidationError as error:
        found = validation.problem(error)
        loc, kind, value = found.loc, found.kind, found.value
        name = str(loc[0])
        if kind == "extra_forbidden" and len(loc) == 1:
            return (name, f"is not a known field (expected {', '.join(ENTRY_FIELDS)})")
        if kind == "missing" and len(loc) == 1:
            return (name, "is missing")
        if name == "kind":
            return ("kind", f"is '{value}', not one of {', '.join(QUESTION_KINDS)}")
        if name == "fits" and kind == "literal_error":
            return ("fits", f"names '{value}', not one of {_POINTS}")
        if name == "outcomes" and len(loc) == 2 and kind == "extra_forbidden":
            return ("outcomes", f"has the unknown field '{loc[1]}' (expected {', '.join(OUTCOME_FIELDS)})")
        if name == "outcomes" and len(loc) >= 2:
            return ("outcomes", f"has '{loc[1]}' = {value!r}, which is not a finite number of 0 or more")
        return (name, _WHAT[name])
    return None


def file_problem(data: Any) -> str | None:
    """What is wrong with a bank file's top level (its entries aside), as the end of a sentence, or None."""
    if not isinstance(data, dict):
        return "the file must be a mapping with a 'questions' list; rewrite it in that shape."
    try:
        BankFileFields.model_validate(data)
    except ValidationError as error:
        first = validation.problem(error)
        name = str(first.loc[0])
        if first.kind == "extra_forbidden":
            return (f"the field '{name}' is not a field of a bank file (its fields are {', '.join(FILE_FIELDS)}); "
                    "remove it or correct its name.")
        if name == "questions":
            return "the field 'questions' is missing or not a list; add a list of questions."
        return "the field 'merged' must map entry ids to {fits, provenance}; fix it."
    return None


def merged_problem(entry: Any) -> str | None:
    """What is wrong with one entry of `merged`, as the middle of a sentence, or None."""
    try:
        MergedEntry.model_validate(entry)
    except ValidationError as error:
        first = validation.problem(error)
        if first.kind == "extra_forbidden" and len(first.loc) == 1:
            return f"has the unknown field '{first.loc[0]}' (it holds fits and provenance)"
        if first.loc[:1] == ("fits",):
            return f"has 'fits' that are not decision points ({_POINTS})"
        return "needs 'provenance', a list of mappings each with a 'source'"
    return None


# --- stats.json ------------------------------------------------------------------------------------------

class StatsOutcome(_Closed):
    """What followed one bank question in one run (kernelseek/bank/outcomes.py's QuestionOutcome, and features)."""

    id: Annotated[str, Field(strict=True)]
    seq: Annotated[int, Field(strict=True)] | None = None
    before: Amount | None = None
    after: Amount | None = None
    gain: Amount | None = None
    success: StrictBool | None = None
    features: list[Annotated[str, Field(strict=True)]] = []


class StatsRun(_Closed):
    recorded: Annotated[str, Field(strict=True)] | None = None
    run: Annotated[str, Field(strict=True)] | None = None
    outcomes: list[Any]  # each checked on its own (as a StatsOutcome), to be named by its id


class StatsFile(_Closed):
    version: Literal[1] = 1
    runs: dict[str, Any]  # each checked on its own (as a StatsRun), to be named by its key


STATS_FIELDS = tuple(StatsFile.model_fields)
RUN_FIELDS = tuple(StatsRun.model_fields)
STATS_OUTCOME_FIELDS = tuple(StatsOutcome.model_fields)
_NUMBERS = ("before", "after", "gain")


def stats_problem(data: Any) -> str | None:
    """What is wrong with a parsed stats.json, as the end of a sentence (after the file's name), or None."""
    if not isinstance(data, dict):
        return "the file must be a mapping with a 'runs' mapping; restore or delete the file."
    try:
        StatsFile.model_validate(data)
    except ValidationError as error:
        first = validation.problem(error)
        name = str(first.loc[0])
        if first.kind == "extra_forbidden":
            return (f"the field '{name}' is not a field of stats.json (its fields are {', '.join(STATS_FIELDS)}); "
                    "remove it or correct its name.")
        if name == "version":
            return f"the field 'version' is {first.value!r}, not 1; this file is in another format."
        return "the field 'runs' is missing or not a mapping; restore or delete the file."
    for key, run in data["runs"].items():
        if problem := _run_problem(run):
            return f"run '{key}': {problem}; restore or delete the file."
    return None


def _run_problem(run: Any) -> str | None:
    try:
        StatsRun.model_validate(run)
    except ValidationError as error:
        first = validation.problem(error)
        name = str(first.loc[0]) if first.loc else ""
        if first.kind == "extra_forbidden":
            return f"the field '{name}' is not a field of a recorded run (its fields are {', '.join(RUN_FIELDS)})"
        if name in ("recorded", "run"):
            return f"the field '{name}' is {first.value!r}, not a string"
        return "the field 'outcomes' is missing or not a list"
    for outcome in run["outcomes"]:
        if problem := _outcome_problem(outcome):
            return problem
    return None


def _outcome_problem(outcome: Any) -> str | None:
    if not isinstance(outcome, dict) or not isinstance(outcome.get("id"), str):
        return "an outcome lacks its 'id'"
    try:
        StatsOutcome.model_validate(outcome)
    except ValidationError as error:
        first = validation.problem(error)
        name, value = str(first.loc[0]), first.value
        if first.kind == "extra_forbidden":
            return (f"outcome '{outcome['id']}' has the unknown field '{name}' (its fields are "
                    f"{', '.join(STATS_OUTCOME_FIELDS)})")
        what = {"seq": "an integer", "success": "true or false", "features": "a list of strings"}
        value = outcome.get(name, value)
        return (f"outcome '{outcome['id']}' has '{name}' = {value!r}, which is not "
                f"{'a finite number of 0 or more' if name in _NUMBERS else what[name]}")
    return None
