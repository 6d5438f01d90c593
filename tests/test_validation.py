"""The one translation of pydantic's errors: which problem is reported first, its field path without
pydantic's branch tags, and the sentence for the common kinds."""

from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kernelseek.validation import expected, problem, sentence


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    size: int = Field(gt=0)


class Outer(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str
    mode: Literal["auto", "none"] = "auto"
    ratio: float = Field(1.0, ge=0.5, allow_inf_nan=False)
    parts: list[Inner] | dict[str, Inner] = []


def _error(**data) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        Outer(**data)
    return caught.value


def test_an_unknown_field_is_reported_before_a_missing_one_and_a_wrong_value():
    error = _error(ratio=0.1, colour="red")  # name missing, ratio too small, colour unknown
    assert sentence(problem(error), fields=Outer.model_fields) == \
        "the field 'colour' is unknown; the fields are name, mode, ratio, parts."
    assert problem(error, first=("missing",)).field == "name"
    assert problem(error, first=()).field == "name"  # the schema's order: name comes first


def test_common_kinds_read_as_one_sentence_each():
    assert sentence(problem(_error(name="a", ratio=0.1))) == "the field 'ratio' must be at least 0.5, not 0.1."
    assert sentence(problem(_error(name="a", ratio=float("inf")))) == \
        "the field 'ratio' must be a finite number, not inf."
    assert sentence(problem(_error(name="a", mode="human"))) == \
        "the field 'mode' must be one of 'auto' or 'none', not 'human'."
    assert sentence(problem(_error(name=3)), name="--name") == "--name must be a string, not 3."
    assert sentence(problem(_error(name="a", ratio="x")), hints={"ratio": "be a ratio such as 1.5"}) == \
        "the field 'ratio' must be a ratio such as 1.5, not 'x'."


def test_a_union_reports_the_branch_the_data_was_meant_for():
    error = _error(name="a", parts=[{"size": 0}])
    found = problem(error, first=(), deepest=True)
    assert found.path == ("parts", "size")  # the list branch's item, without pydantic's index and branch tags
    assert sentence(found) == "the field 'parts.size' must be a finite number above 0, not 0."
    assert found.loc[0] == "parts" and len(found.loc) > len(found.path)


def test_a_fields_type_in_words():
    assert expected(int | None) == "a whole number or null"
    assert expected(int | float) == "a number"
    assert expected(Literal["a", "b"]) == "a string"
