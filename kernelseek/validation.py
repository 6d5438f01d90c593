"""pydantic's validation errors as one sentence: the one translation every schema of the package uses (the run
settings, an experiment file, a bank file and stats.json, a trace event).

pydantic reports every problem it finds, each with a location inside the data, a type and the value. A
person needs the one to fix first, in the words of the field it is about: `problem` picks it (an unknown
field first, then a missing one, then the first in the schema's order; of a union's branches, the deepest)
and gives its field path without pydantic's branch tags; `sentence` words the common kinds of problem
("the field 'levels.0' must be a finite number above 0, not -1."), and each schema words only its own
special cases around it.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import ValidationError

# the order in which kinds of problem are reported: a field that should not be there, then one that is missing
FIRST = ("extra_forbidden", "missing")
_WORDS = {int: "a whole number", float: "a number", str: "a string", bool: "true or false", dict: "an object",
          list: "a list"}


@dataclass(frozen=True)
class Problem:
    """The problem to report: its kind (pydantic's error type, or the schema's own check's), the field path
    (names only), the value found, pydantic's message and its context (bounds)."""

    kind: str
    path: tuple[str, ...]
    value: Any
    message: str
    context: dict[str, Any]
    loc: tuple[Any, ...]  # pydantic's own location, indexes and branch tags included

    @property
    def field(self) -> str:
        return self.path[0] if self.path else ""

    @property
    def where(self) -> str:
        return ".".join(self.path)


def _names(loc: tuple[Any, ...]) -> tuple[str, ...]:
    """A location without list indexes and the tags pydantic gives a union's branches (`int`, `list[str]`,
    `function-after[...]`, a model's class name)."""
    return tuple(str(part) for part in loc if not isinstance(part, int) and not str(part)[:1].isupper()
                 and str(part) not in ("none", "str", "int", "float", "bool")
                 and not str(part).startswith(("list[", "dict[", "function-", "constrained-")))


def problem(error: ValidationError, *, first: tuple[str, ...] = FIRST, deepest: bool = False) -> Problem:
    """The problem to report of `error`: the first of kind `first[0]`, else of `first[1]`, ..., else the
    first in the schema's order. `deepest`: of the problems with that field, the deepest, for a schema
    whose union fields report each branch they tried (the deepest is the branch the data was meant for)."""
    errors = error.errors()
    rank = {kind: i for i, kind in enumerate(first)}
    chosen = min(errors, key=lambda e: rank.get(e["type"], len(first)))
    if deepest:
        chosen = max((e for e in errors if e["loc"][:1] == chosen["loc"][:1]), key=lambda e: len(e["loc"]))
    return Problem(chosen["type"], _names(chosen["loc"]), chosen.get("input"), chosen["msg"],
                   dict(chosen.get("ctx") or {}), tuple(chosen["loc"]))


def expected(annotation: Any) -> str:
    """'a whole number', 'a number or null', ... for a field's annotation."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    args = typing.get_args(annotation) if union else (annotation,)
    bases = [typing.get_args(a)[0] if typing.get_origin(a) is Annotated else a for a in args]
    bases = [str if typing.get_origin(b) is Literal else typing.get_origin(b) or b for b in bases]
    nullable = type(None) in bases
    bases = [b for b in bases if b is not type(None)]
    if set(bases) == {int, float}:
        what = "a number"
    elif set(bases) == {int, str}:
        what = "a candidate id (a whole number or a string)"
    else:
        what = _WORDS.get(bases[0], "valid") if bases else "valid"
    return what + (" or null" if nullable else "")


def sentence(found: Problem, *, name: str | None = None, fields: typing.Iterable[str] = (),
             hints: dict[str, str] | None = None) -> str:
    """The common kinds of problem in one sentence: "{name} must ..., not {value!r}." `name` says the field
    (default: "the field 'a.b'"); `fields` are the known ones, named for an unknown field; `hints` say what a
    field must be ("be a list of graph names") where a value has the wrong shape."""
    name = name or f"the field '{found.where}'"
    value, kind, hint = found.value, found.kind, (hints or {}).get(found.path[-1] if found.path else "")
    if kind == "config":  # a schema's own check, already a sentence
        return found.message
    if kind == "extra_forbidden":
        return f"{name} is unknown; the fields are {', '.join(fields)}." if fields else f"{name} is unknown."
    if kind == "missing":
        return f"{name} is missing" + (f": it must {hint}." if hint else ".")
    if kind in ("finite", "finite_number"):
        return f"{name} must be a finite number, not {value!r}."
    if kind == "greater_than":
        bound = found.context["gt"]
        return f"{name} must be above {bound:g}, not {value!r}." if bound else \
            f"{name} must be a finite number above 0, not {value!r}."
    if kind == "greater_than_equal":
        return f"{name} must be at least {found.context['ge']:g}, not {value!r}."
    if hint:
        return f"{name} must {hint}, not {value!r}."
    if kind == "literal_error":
        return f"{name} must be one of {found.context.get('expected', '')}, not {value!r}."
    if kind in ("int_type", "int_from_float", "int_parsing"):
        return f"{name} must be a whole number, not {value!r}."
    if kind in ("float_type", "float_parsing"):
        return f"{name} must be a number, not {value!r}."
    if kind in ("bool_type", "bool_parsing"):
        return f"{name} must be true or false, not {value!r}."
    if kind == "string_type":
        return f"{name} must be a string, not {value!r}."
    return f"{name} is not valid ({found.message[:1].lower() + found.message[1:]}), not {value!r}."
