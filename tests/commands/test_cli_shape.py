"""The CLI stays thin: small command modules of short functions, every command a module-level function,
and `kernelseek run`'s options generated from the run settings (a new setting is an option without a line
of CLI code)."""

import ast
import inspect
import re
from pathlib import Path

import click
import pytest
import typer
from pydantic import Field
from typer.main import get_command
from typer.testing import CliRunner

from kernelseek.cli import app
from kernelseek.commands.run_options import NOT_OPTIONS, setting_parameters, with_run_options
from kernelseek.settings import Configuration, RunRequest, option

COMMANDS = Path(__file__).resolve().parents[2] / "kernelseek" / "commands"
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 200, 60


def test_command_modules_and_their_functions_are_short():
    too_long = []
    for path in sorted(COMMANDS.glob("*.py")):
        source = path.read_text()
        lines = len(source.splitlines())
        if lines > MAX_MODULE_LINES:
            too_long.append(f"{path.name}: {lines} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1  # signature, docstring and body
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{path.name}: {node.name} has {length} lines")
    assert not too_long, too_long


def _callbacks(group: typer.Typer, prefix: str = ""):
    for info in group.registered_commands:
        yield prefix + info.name, info.callback
    for sub in group.registered_groups:
        yield from _callbacks(sub.typer_instance, f"{prefix}{sub.name} ")


def test_every_command_is_a_module_level_function():
    callbacks = dict(_callbacks(app))
    assert set(callbacks) == {"init", "eval", "scenarios", "compare", "demo", "run", "resume", "ask", "fork", "runs",
                              "report", "experiment", "bank learn", "bank list", "bank show", "trace show",
                              "trace analyze"}
    for callback in callbacks.values():
        command = getattr(callback, "__wrapped__", callback)  # `run`: its options generated around it
        module = inspect.getmodule(command)
        assert "<locals>" not in command.__qualname__, command.__qualname__
        assert getattr(module, command.__name__) is command, f"{module.__name__}.{command.__name__}"


def _run_options() -> dict[str, click.Parameter]:
    run = get_command(app).commands["run"]
    return {flag.split("/")[0]: p for p in run.params for flag in p.opts}


def test_every_run_setting_is_a_run_option():
    options = _run_options()
    for name, field in RunRequest.model_fields.items():
        if name in NOT_OPTIONS:
            continue
        assert option(name) in options, f"the run setting {name} has no option {option(name)}"
        assert options[option(name)].help == field.description
    assert set(Configuration.model_fields) - set(RunRequest.model_fields) == set()
    assert set(NOT_OPTIONS) == {"task", "run_uuid"}  # task is the argument; a run's UUID is made, never given


def test_a_new_setting_becomes_an_option_without_cli_code():
    class Wider(RunRequest):
        warmup_steps: int = Field(2, description="Steps before the first decision point.")

    given = {}
    command = typer.Typer()
    command.command()(with_run_options(lambda task, settings: given.update(settings, task=task), model=Wider))
    result = CliRunner().invoke(command, ["rmsnorm_cpu", "--warmup-steps", "5", "--max-steps", "3"])
    assert result.exit_code == 0, result.output
    assert given == {"task": "rmsnorm_cpu", "warmup_steps": 5, "max_steps": 3, **{
        name: p.default for name, p in ((p.name, p) for p in setting_parameters(Wider))
        if p.default is not None and name not in ("warmup_steps", "max_steps")}}
    helps = {p.opts[0]: p.help for p in get_command(command).params}
    assert helps["--warmup-steps"] == "Steps before the first decision point."


def test_a_setting_no_option_can_parse_is_refused_when_the_options_are_made():
    class Odd(RunRequest):
        shapes: list[int] = Field(default_factory=list, description="Shapes.")

    try:
        setting_parameters(Odd)
    except TypeError as error:
        assert "shapes" in str(error) and "run_options.py" in str(error)
    else:
        raise AssertionError("a list[int] setting made an option")


def _help(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("command", [(), ("run",), ("eval",), ("fork",), ("bank", "list")])
def test_help_names_no_type_beside_a_flag(command):
    text = _help(*command)
    assert "--help" in text and "<bool>" not in text  # a flag takes no value
    assert "<int>" in _help("run")  # an option that takes one still says which


def test_the_scripted_examples_in_run_help_exist(tmp_path, monkeypatch):
    from kernelseek.models.scripted import script_path

    monkeypatch.chdir(tmp_path)  # found from any folder, as from the wheel
    scripts = re.findall(r"--model scripted/(\S+)", _help("run"))
    assert scripts and all(script_path(s).is_file() for s in scripts)
