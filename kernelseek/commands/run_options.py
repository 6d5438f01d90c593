"""`kernelseek run`'s options, generated from the run settings (`RunRequest` in kernelseek/settings.py): a
setting is declared once, with its type, default and description, and is an option here and a field of
LangGraph Studio's form. A new setting becomes an option without a line here (tests/commands/test_cli_shape.py
holds the CLI to that)."""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from pydantic_core import PydanticUndefined

from kernelseek.settings import ConfigError, RunRequest, option

# settings that are not options, and why
NOT_OPTIONS = {"task": "the command's argument", "run_uuid": "made anew for each run"}
LIST_OPTIONS = {"model_kwargs"}  # a mapping, given as repeatable KEY=VALUE options
PATH_OPTIONS = {"kernel", "runs_dir", "bank_stats"}  # text in the settings, a path on the command line


def _option_type(name: str, annotation: Any) -> type:
    """The type typer parses the option as: a setting's type without None; Literal choices are read as text
    and checked by the settings model (its sentence names the choices)."""
    if name in LIST_OPTIONS:
        return list[str]
    if name in PATH_OPTIONS:
        return Path
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        annotation = args[0]
    if typing.get_origin(annotation) is Literal:
        return str
    if annotation not in (str, int, float, bool):
        raise TypeError(f"the run setting {name} has the type {annotation}, which no option parses; give it an "
                        "option type in kernelseek/commands/run_options.py.")
    return annotation


def _parameter(name: str, field: Any) -> inspect.Parameter:
    kind = _option_type(name, field.annotation)
    default = None if field.default in (PydanticUndefined, "") or name in LIST_OPTIONS else field.default
    flag = option(name)
    if kind is bool and default is not False:
        flag = f"{flag}/--no-{flag.removeprefix('--')}"
    declared = typer.Option(flag, help=field.description)
    annotation = Annotated[kind if default is not None else kind | None, declared]  # type: ignore[operator]
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def setting_parameters(model: type[RunRequest] = RunRequest) -> list[inspect.Parameter]:
    """One keyword parameter per run setting of `model` (NOT_OPTIONS aside), in the settings' order."""
    return [_parameter(name, field) for name, field in model.model_fields.items() if name not in NOT_OPTIONS]


def with_run_options(command: Callable[..., None], *extra: inspect.Parameter,
                     model: type[RunRequest] = RunRequest) -> Callable[..., None]:
    """`command(task, settings, **extra)` as a typer command whose options are the run settings: the TASK
    argument, an option per setting, then `extra` (options that are not settings). `settings` holds the
    settings given, the ones left out absent, so that the model's defaults apply."""
    task = inspect.Parameter("task", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Annotated[
        str, typer.Argument(help=model.model_fields["task"].description)])
    parameters = [task, *setting_parameters(model), *extra]
    names = [p.name for p in parameters[1:len(parameters) - len(extra)]]

    def typer_command(task: str, **given: Any) -> None:
        settings = {name: given.pop(name) for name in names}
        command(task, {k: v for k, v in settings.items() if v is not None}, **given)

    typer_command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    typer_command.__annotations__ = {p.name: p.annotation for p in parameters}
    typer_command.__doc__, typer_command.__name__ = command.__doc__, command.__name__
    typer_command.__wrapped__ = command  # type: ignore[attr-defined]  # (the signature above still wins)
    return typer_command


def request_of(task: str, settings: dict[str, Any]) -> RunRequest:
    """The options as a RunRequest: --model-arg pairs become the model's arguments, paths are made absolute."""
    settings = dict(settings)
    if "model_kwargs" in settings:
        settings["model_kwargs"] = model_args(settings["model_kwargs"])
    for name in PATH_OPTIONS & set(settings):
        settings[name] = str(Path(settings[name]).expanduser())
    return RunRequest(task=task, **settings)


def model_args(pairs: list[str]) -> dict[str, Any]:
    """--model-arg KEY=VALUE pairs as litellm.completion's arguments (VALUE read as JSON when it parses)."""
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--model-arg '{pair}' is not KEY=VALUE; write e.g. --model-arg temperature=0.2.")
        try:
            kwargs[key] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key] = value
    return kwargs
