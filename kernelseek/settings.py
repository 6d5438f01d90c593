"""What a run is configured with: a pydantic model, saved as `runs/<id>/config.json`.

The ground floor: it imports nothing of kernelseek but the translation of validation errors, so the harness, the bank, the checkpoints and the agent
all read a run's settings from here. The same fields, typed and described, are `kernelseek run`'s options
(generated from them in `kernelseek/commands/run_options.py`) and the settings form LangGraph Studio shows
(`RunContext` in `kernelseek.agent.context`). Any bad value or unknown key is a `ConfigError` of one
sentence that names the field (as its command-line option where there is one) and the fix.
"""

from __future__ import annotations

import json
import math
import uuid
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from kernelseek.validation import problem, sentence

MODES = ("human", "auto", "none")
DEFAULT_HOLDOUT_GPU, DEFAULT_HOLDOUT_CPU = 24, 3
FOLDER_KEYS = ("thread_id", "checkpoints")  # config.json's keys beside the settings: where its checkpoints are
IDENTITY_FIELDS = ("run_uuid",)  # who a run is, not how it is configured (an experiment does not compare them)
POSITIVE = ("target", "target_gain", "max_dollars", "max_tokens", "max_wall_s", "max_evals", "shell_timeout_s",
            "worker_timeout_s", "context_tokens")
AT_LEAST_ONE = ("max_steps", "plateau_evals", "failing_evals", "chooser_offer", "no_eval_steps")


class ConfigError(ValueError):
    """Bad run configuration; the message is one sentence naming the field and the fix."""


# fields whose `kernelseek run` option is not their name (the option's name is older than the field's)
OPTION_NAMES = {"plateau_evals": "--plateau", "failing_evals": "--failing", "model_kwargs": "--model-arg"}


def option(name: str) -> str:
    """A field as the command-line option that sets it (max_wall_s: --max-wall, plateau_evals: --plateau)."""
    return OPTION_NAMES.get(name) or "--" + name.removesuffix("_s").replace("_", "-")


def _sentence_for(name: str, value: Any) -> str | None:
    """The one sentence for a bad value of a field whose rule is known (a wrong type included)."""
    if name in POSITIVE:
        return f"{option(name)} {value!r} must be a finite number above 0 (or left out)."
    if name in AT_LEAST_ONE:
        return f"{option(name)} {value!r} must be a whole number, at least 1."
    if name == "holdout":
        return (f"holdout {value!r} must be a whole number of scenarios, 0 or more (0: full judgements draw no "
                "hold-out sample).")
    if name == "model_retries":
        return f"model_retries {value!r} must be a whole number, 0 or more."
    if name == "mode":
        return f"--mode '{value}' is unknown; use one of {', '.join(MODES)}."
    return None


def _fail(message: str) -> PydanticCustomError:
    return PydanticCustomError("config", message)


class Configuration(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", validate_assignment=False)

    # One declaration: each description is also `kernelseek run`'s help for the option (settings.option(name))
    # and the Studio form's, so it says what the setting does for a person at either.
    task: str = Field(description="The task folder (absolute path).")
    kernel: str = Field(description="The kernel the run starts from (absolute path).")
    arch: str = Field("cpu", description="Target: sm90, sm100 or cpu.")
    model: str | None = Field(None, description="Built-in worker: a litellm model, e.g. anthropic/claude-sonnet-4-5, "
                              "or scripted/PATH for a scripted model (tests).")
    worker_command: str | None = Field(None, description="External worker: a coding CLI command run in the "
                                       "workspace each turn; {prompt} or {prompt_file} is replaced, else the "
                                       "prompt is on stdin.")
    mode: Literal["human", "auto", "none"] = Field("auto", description="Who asks at decision points: human (a "
                                                   "person, at the prompt), auto (the question bank), none "
                                                   "(nobody).")
    graph: str = Field("kernelseek", description="The graph under graphs/ to run.")
    target: float | None = Field(None, description="End the run when the best speedup reaches this, e.g. 1.16.")
    target_gain: float | None = Field(None, description="Or end it when the best is this many times the starting "
                                      "kernel's speedup, e.g. 1.3.")
    max_steps: int = Field(60, description="Budget: worker turns (model calls, or external CLI invocations).")
    max_dollars: float | None = Field(20.0, description="Budget: model dollars (litellm's prices).")
    max_tokens: int | None = Field(None, description="Budget: model tokens, every call counted (also models "
                                   "litellm has no price for).")
    max_wall_s: float | None = Field(None, description="Budget: seconds of work (waiting for a person does not "
                                     "count), across resumes.")
    max_evals: int | None = Field(None, description="Budget: evaluations.")
    plateau_evals: int = Field(4, description="Decision point after this many evaluations without a gain.")
    failing_evals: int = Field(3, description="Decision point after this many incorrect candidates in a row.")
    judge_start: bool = Field(True, description="Judge the starting kernel first (quick), so the best starts "
                              "there.")
    holdout: int | None = Field(None, description="Hold-out scenarios per full judgement (default: 24 on a GPU, "
                                "3 on the CPU).")
    sanitize: bool | None = Field(None, description="Run compute-sanitizer (memcheck, racecheck, initcheck, "
                                  "synccheck) on a candidate before it becomes the best (default: on for a GPU "
                                  "target where compute-sanitizer is installed).")
    seed: int = Field(0, description="Seed of the question bank's policy.")
    shell_timeout_s: float = Field(300.0, description="Seconds one shell command of the worker may take.")
    output_cap: int = Field(10_000, description="Characters of tool output the worker sees.")
    worker_timeout_s: float = Field(3600.0, description="Seconds one turn of an external worker may take.")
    limit_detector_model: str | None = Field(None, description="Also ask this model whether the worker claims "
                                             "a limit when the rules find none.")
    chooser_model: str | None = Field(None, description="Auto mode: the model that picks the question for the "
                                      "situation among the ones offered (default: the worker's own model when it "
                                      "is a real one; 'policy': the contextual policy picks).")
    chooser_offer: int = Field(4, description="Auto mode: how many fitting questions are offered to the chooser.")
    no_eval_steps: int = Field(8, description="A decision point after this many worker steps without an "
                               "evaluation.")
    unconfined: bool = Field(False, description="Run the worker's shell without the sandbox, with your full "
                             "rights (only where bubblewrap is missing).")
    model_kwargs: dict[str, Any] = Field(default_factory=dict, description="Arguments for litellm.completion, "
                                         "e.g. {\"temperature\": 0.2} (as options: KEY=VALUE, VALUE read as JSON "
                                         "when it parses, e.g. temperature=0.2 or api_base=http://localhost:8000; "
                                         "repeatable).")
    bank_stats: str | None = Field(None, description="The bank statistics file this run reads and records into "
                                   "(default: ~/.local/share/kernelseek/stats.json; a scripted model records only "
                                   "into one named here).")
    model_retries: int = Field(6, description="Transient provider errors (rate limits, 5xx, timeouts) retried "
                               "with backoff.")
    context_tokens: int | None = Field(None, description="The model's input window in tokens, where litellm "
                                       "does not know it (the conversation is trimmed to fit).")
    # made anew for each run: no option, and no field of Studio's form (its JSON schema leaves it out)
    run_uuid: SkipJsonSchema[str | None] = Field(default_factory=lambda: str(uuid.uuid4()),
                                                 description="The run's unique id (empty: a run made before UUIDs).")

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as error:
            raise ConfigError(_one_sentence(error, data, type(self))) from None

    @model_validator(mode="after")
    def _check(self) -> Configuration:
        if bool(self.model) == bool(self.worker_command):
            raise _fail("give exactly one worker: --model NAME (built-in worker) or --worker-command CMD "
                        "(an external coding CLI).")
        if self.target is not None and self.target <= 0:
            raise _fail(f"--target {self.target} must be a positive speedup such as 1.16.")
        if self.target_gain is not None and self.target_gain <= 1:
            raise _fail(f"--target-gain {self.target_gain} must be above 1 (e.g. 1.3: 30% faster than the start).")
        if self.target_gain is not None and not self.judge_start:
            raise _fail("--target-gain needs the starting kernel judged; drop --no-judge-start.")
        if self.holdout is not None and self.holdout < 0:
            raise _fail(_sentence_for("holdout", self.holdout))
        for name in POSITIVE:
            value = getattr(self, name)
            if value is not None and (not math.isfinite(value) or value <= 0):
                raise _fail(_sentence_for(name, value))
        if self.model_retries < 0:
            raise _fail(_sentence_for("model_retries", self.model_retries))
        for name in AT_LEAST_ONE:
            if getattr(self, name) < 1:
                raise _fail(_sentence_for(name, getattr(self, name)))
        return self

    def validate(self) -> Configuration:  # noqa: D102 - the checks that look outside the model
        if not Path(self.kernel).is_file():
            raise ConfigError(f"{self.kernel}: no such kernel file; pass the kernel the run starts from.")
        return self

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Configuration:
        if not isinstance(data, dict):
            raise ConfigError(f"a run configuration is a mapping of settings, not {type(data).__name__}.")
        return cls(**data)

    def save(self, path: Path, **extra: Any) -> None:
        path.write_text(json.dumps({**self.to_dict(), **extra}, indent=1))

    @classmethod
    def load(cls, path: Path) -> Configuration:
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise ConfigError(f"{path}: the run configuration cannot be read ({error}).") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: the run configuration cannot be read (not a mapping of settings).")
        for key in FOLDER_KEYS:  # kept beside the settings, about the run folder (`Run`)
            data.pop(key, None)
        data.setdefault("run_uuid", None)  # a run made before runs had a UUID keeps having none
        try:
            return cls(**data)
        except ConfigError as error:
            raise ConfigError(f"{path}: {error}") from None

    def holdout_size(self) -> int:
        """Hold-out scenarios each full judgement adds: the configured number, else 24 on a GPU and 3 on
        the CPU (whose task is small and whose judgements time every scenario for seconds)."""
        if self.holdout is not None:
            return self.holdout
        return DEFAULT_HOLDOUT_CPU if self.arch == "cpu" else DEFAULT_HOLDOUT_GPU

    def budgets(self) -> dict[str, Any]:
        return {"max_steps": self.max_steps, "max_dollars": self.max_dollars, "max_tokens": self.max_tokens,
                "max_wall_s": self.max_wall_s, "max_evals": self.max_evals}


class RunRequest(Configuration):
    """A new run as a person asks for it, at `kernelseek run` or in LangGraph Studio's form: the task by name,
    the kernel and the arch left to the task's defaults, where the run's folder goes.
    `kernelseek.agent.make_run` turns it into the run's Configuration and its folder."""

    task: str = Field(description="Task folder, or a task's name: the project's here, else the package's.")
    kernel: str = Field("", description="The kernel the run starts from (default: the task's seed).")
    arch: str = Field("", description="Target: sm90, sm100 or cpu (default: the task's first).")
    runs_dir: str | None = Field(None, description="Where runs live (default: $KERNELSEEK_RUNS, else "
                                 "$XDG_DATA_HOME/kernelseek/runs or ~/.local/share/kernelseek/runs).")
    run_id: str | None = Field(None, description="Name the run (default: the time and a random suffix).")


def _one_sentence(error: ValidationError, data: dict[str, Any], model: type[BaseModel]) -> str:
    """pydantic's report as one sentence: the first problem, in the words of the field it is about."""
    found = problem(error, first=())
    name = found.field
    if found.kind == "extra_forbidden":
        return f"'{name}' is not a run setting; the settings are {', '.join(model.model_fields)}."
    if found.kind == "missing":
        return f"the setting '{name}' is missing: {model.model_fields[name].description}"
    value = data.get(name, found.value)
    return (found.kind != "config" and _sentence_for(name, value)) or sentence(found, name=f"the setting '{name}'")
