"""The trace's events as pydantic models, one per type (the schema in words: kernelseek/trace.py).

Each model names the fields its type requires and their types; further fields are allowed (an event may
carry more, and an older reader must accept a newer writer's). `problem(event)` says in one sentence what
is wrong with an event, or None; the trace keeps the event as written, so traces written before these
models load the same.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kernelseek import validation

DECISION_POINTS = ("done", "claimed_limit", "plateau", "failing", "no_evaluation")
INTERJECTION = "interjection"  # a human message sent with `kernelseek ask`, at no decision point
QUESTION_KINDS = ("layer_shift", "reject_limit", "inform", "other")

Whole = Annotated[int, Field(strict=True)]  # a whole number (not true or false)
Number = Annotated[int, Field(strict=True)] | Annotated[float, Field(strict=True)]
CandidateId = Annotated[int, Field(strict=True)] | Annotated[str, Field(strict=True)]
Text = Annotated[str, Field(strict=True)]
Flag = Annotated[bool, Field(strict=True)]
Count = Annotated[int, Field(strict=True, ge=0)]


class Common(BaseModel):
    """What every event carries."""

    model_config = ConfigDict(extra="allow")
    seq: Whole
    time: Text
    type: Text
    step: Whole
    key: Text


class RunStart(Common):
    task: Text
    kernel: Text
    arch: Text
    mode: Text
    graph: Text
    worker: Text | None
    target: Number | None
    budgets: dict


class ToolCallRequest(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: Text


class ModelCall(Common):
    model: Text | None
    prompt_tokens: Whole | None
    completion_tokens: Whole | None
    cost_usd: Number | None
    content: Text | None
    tool_calls: list[ToolCallRequest]


class ToolStart(Common):
    name: Text
    arguments: dict


class ToolCall(Common):
    name: Text
    arguments: dict
    result: Text | None
    ok: Flag


class Holdout(BaseModel):
    """An evaluation's hold-out sample: its size, the seed that draws it, how many were right, their geomean."""

    model_config = ConfigDict(extra="allow")
    n: Annotated[int, Field(strict=True, ge=1)]
    seed: Count
    correct: Count
    speedup: Number | None

    @model_validator(mode="after")
    def _consistent(self) -> Holdout:
        if self.correct > self.n:
            raise ValueError("correct")
        if self.speedup is not None and self.speedup <= 0:
            raise ValueError("speedup")
        return self


class Evaluation(Common):
    candidate: CandidateId
    parent: CandidateId | None
    path: Text
    sha256: Text | None
    judgement: Text
    correct: Flag
    speedup: Number | None
    reason: Text | None
    best: Flag
    report: Text | None
    holdout: Holdout = None  # type: ignore[assignment] - optional, but never null when present


class DecisionPoint(Common):
    kind: Literal[DECISION_POINTS]  # type: ignore[valid-type]
    detail: Text
    worker_words: Text | None


class Question(Common):
    text: Text
    source: Text
    bank_id: Text | None
    question_kind: Literal[QUESTION_KINDS] | None  # type: ignore[valid-type]
    decision_point: Text


class HumanMessage(Common):
    text: Text
    decision_point: Literal[(*DECISION_POINTS, INTERJECTION)]  # type: ignore[valid-type]
    context: dict | None


class ModelRetry(Common):
    attempt: Annotated[int, Field(strict=True, ge=1)]
    error: Text
    wait_s: Number


class Trim(Common):
    dropped: Count
    dropped_turns: Count
    tokens_before: Count
    tokens_after: Count
    window: Count


class Sanitizer(Common):
    candidate: Any
    passed: Flag
    tools: dict
    reason: Any


class RunEnd(Common):
    reason: Text
    best_speedup: Number | None
    steps: Whole
    cost_usd: Number | None


MODELS: dict[str, type[Common]] = {
    "run_start": RunStart, "model_call": ModelCall, "tool_start": ToolStart, "tool_call": ToolCall,
    "evaluation": Evaluation, "decision_point": DecisionPoint, "question": Question, "human_message": HumanMessage,
    "model_retry": ModelRetry, "trim": Trim, "sanitizer": Sanitizer, "run_end": RunEnd,
}
COMMON_FIELDS = tuple(Common.model_fields)
# the fields each type requires, in the schema's order (the optional `holdout` of an evaluation aside)
EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    kind: tuple(name for name, info in model.model_fields.items() if name not in COMMON_FIELDS and info.is_required())
    for kind, model in MODELS.items()}
HOLDOUT_FIELDS = tuple(Holdout.model_fields)

_ENUMS = {("decision_point", "kind"): "the decision point kind '{}' is unknown",
          ("question", "question_kind"): "the question kind '{}' is unknown",
          ("human_message", "decision_point"): "the human message's decision point '{}' is unknown"}


def _holdout_problem(found: validation.Problem, holdout: Any) -> str:
    loc = found.loc[1:]
    if not isinstance(holdout, dict):
        return "the evaluation's holdout is not an object {n, seed, correct, speedup}"
    if found.kind == "missing":
        return f"the evaluation's holdout lacks the field '{loc[0]}'"
    reason = str(found.context.get("error", ""))  # a check of the whole: which field failed it
    name = loc[0] if loc and loc[0] in HOLDOUT_FIELDS else "speedup" if reason == "speedup" else "correct"
    value = holdout.get(name)
    return {"n": f"the evaluation's holdout n {value!r} is not a positive whole number",
            "seed": f"the evaluation's holdout seed {value!r} is not a whole number, 0 or more",
            "correct": f"the evaluation's holdout correct {value!r} is not a count between 0 and {holdout.get('n')}",
            "speedup": f"the evaluation's holdout speedup {value!r} is not a positive number or null"}[name]


def problem(event: Any) -> str | None:
    """Why `event` is not a valid trace event, or None."""
    if not isinstance(event, dict):
        return "the line is not a JSON object"
    for name in COMMON_FIELDS:
        if name not in event:
            return f"the field '{name}' is missing"
    kind = event["type"]
    if not isinstance(kind, str) or kind not in MODELS:
        return f"the type '{kind}' is unknown (expected one of {', '.join(MODELS)})"
    model = MODELS[kind]
    try:
        model.model_validate(event)
    except ValidationError as error:
        found = validation.problem(error, first=("missing",))
        name = str(found.loc[0])
        value = event.get(name)
        if found.kind == "missing" and len(found.loc) == 1:
            return f"the {kind} event lacks the field '{name}'"
        where = "the field" if name in COMMON_FIELDS else f"the {kind} event's field"
        if name in COMMON_FIELDS:
            return f"{where} '{name}' is {json.dumps(value, default=str)[:60]}, not {validation.expected(Common.model_fields[name].annotation)}"
        if name == "holdout":
            return _holdout_problem(found, value)
        if (kind, name) in _ENUMS and isinstance(value, str):
            return _ENUMS[kind, name].format(value)
        if kind == "trim":
            return f"the trim event's {name} {value!r} is not a whole number, 0 or more"
        if kind == "model_retry" and name == "attempt":
            return f"the model_retry event's attempt {value!r} is not a whole number, 1 or more"
        if kind == "sanitizer":
            return "the sanitizer event's passed is not true or false, or its tools is not an object"
        if name == "tool_calls" and len(found.loc) > 1:
            return "the model_call event's tool_calls are not all objects with a name"
        return (f"{where} '{name}' is {json.dumps(value, default=str)[:60]}, "
                f"not {validation.expected(model.model_fields[name].annotation)}")
    return None
