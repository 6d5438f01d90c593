"""What a run is configured with. Saved as `runs/<id>/config.json`; every node reads it from there."""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

MODES = ("human", "auto", "none")
DEFAULT_HOLDOUT_GPU, DEFAULT_HOLDOUT_CPU = 24, 3
IDENTITY_FIELDS = ("run_uuid",)  # who a run is, not how it is configured (an experiment does not compare them)


class ConfigError(ValueError):
    """Bad run configuration; the message is one sentence naming the field and the fix."""


@dataclass
class Configuration:
    task: str  # the task folder (absolute path)
    kernel: str  # the kernel the run starts from (absolute path)
    arch: str = "cpu"
    model: str | None = None  # a litellm model name, e.g. "anthropic/claude-sonnet-4-5" or "scripted/<script>"
    worker_command: str | None = None  # an external coding CLI instead of the built-in worker
    mode: str = "auto"  # human: a person types the questions; auto: the bank; none: no questions
    graph: str = "kernelseek"  # the module under graphs/ that builds the graph
    target: float | None = None  # the run ends when the best speedup reaches it
    target_gain: float | None = None  # ... or when the best is this many times the starting kernel's speedup
    max_steps: int = 60  # worker turns (model calls, or external CLI invocations)
    max_dollars: float | None = 20.0
    max_tokens: int | None = None  # counts every model call, priced or not
    max_wall_s: float | None = None  # time spent working (not waiting for a person), across resumes
    max_evals: int | None = None
    plateau_evals: int = 4  # a decision point after this many evaluations without a gain
    failing_evals: int = 3  # a decision point after this many incorrect candidates in a row
    judge_start: bool = True  # judge the starting kernel first (quick), so "best" starts there
    holdout: int | None = None  # hold-out scenarios per full judgement (None: 24 on a GPU, 3 on the CPU)
    seed: int = 0  # the bank policy's seed
    shell_timeout_s: float = 300.0
    output_cap: int = 10_000  # characters of tool output the worker sees
    worker_timeout_s: float = 3600.0  # one external-CLI turn
    limit_detector_model: str | None = None  # optional model-based claimed-limit detector
    unconfined: bool = False  # the worker's shell runs without the sandbox (where bubblewrap is missing)
    model_kwargs: dict[str, Any] = field(default_factory=dict)  # passed to litellm.completion
    bank_stats: str | None = None  # the bank statistics file (default: the user's; scripted runs: none)
    model_retries: int = 6  # transient provider errors (rate limits, 5xx, timeouts) retried with backoff
    context_tokens: int | None = None  # the model's input window when litellm does not know it
    run_uuid: str | None = field(default_factory=lambda: str(uuid.uuid4()))  # None: a run made before UUIDs

    def validate(self) -> Configuration:
        if self.mode not in MODES:
            raise ConfigError(f"--mode '{self.mode}' is unknown; use one of {', '.join(MODES)}.")
        if bool(self.model) == bool(self.worker_command):
            raise ConfigError("give exactly one worker: --model NAME (built-in worker) or --worker-command CMD "
                              "(an external coding CLI).")
        if self.target is not None and self.target <= 0:
            raise ConfigError(f"--target {self.target} must be a positive speedup such as 1.16.")
        if self.target_gain is not None and self.target_gain <= 1:
            raise ConfigError(f"--target-gain {self.target_gain} must be above 1 (e.g. 1.3: 30% faster than the start).")
        if self.target_gain is not None and not self.judge_start:
            raise ConfigError("--target-gain needs the starting kernel judged; drop --no-judge-start.")
        if self.holdout is not None and (isinstance(self.holdout, bool) or not isinstance(self.holdout, int)
                                         or self.holdout < 0):
            raise ConfigError(f"holdout {self.holdout!r} must be a whole number of scenarios, 0 or more "
                              "(0: full judgements draw no hold-out sample).")
        for name in ("target", "target_gain", "max_dollars", "max_tokens", "max_wall_s", "max_evals",
                     "shell_timeout_s", "worker_timeout_s", "context_tokens"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or not math.isfinite(value) or value <= 0):
                raise ConfigError(f"--{name.removesuffix('_s').replace('_', '-')} {value!r} must be a finite "
                                  "number above 0 (or left out).")
        if isinstance(self.model_retries, bool) or not isinstance(self.model_retries, int) or self.model_retries < 0:
            raise ConfigError(f"model_retries {self.model_retries!r} must be a whole number, 0 or more.")
        for name in ("max_steps", "plateau_evals", "failing_evals"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be at least 1.")
        if not Path(self.kernel).is_file():
            raise ConfigError(f"{self.kernel}: no such kernel file; pass the kernel the run starts from.")
        return self

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Configuration:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=1))

    @classmethod
    def load(cls, path: Path) -> Configuration:
        try:
            data = json.loads(path.read_text())
            if isinstance(data, dict):
                data.setdefault("run_uuid", None)  # a run made before runs had a UUID keeps having none
            return cls.from_dict(data)
        except (OSError, json.JSONDecodeError, TypeError) as error:
            raise ConfigError(f"{path}: the run configuration cannot be read ({error}).") from None

    def holdout_size(self) -> int:
        """Hold-out scenarios each full judgement adds: the configured number, else 24 on a GPU and 3 on
        the CPU (whose task is small and whose judgements time every scenario for seconds)."""
        if self.holdout is not None:
            return self.holdout
        return DEFAULT_HOLDOUT_CPU if self.arch == "cpu" else DEFAULT_HOLDOUT_GPU

    def budgets(self) -> dict[str, Any]:
        return {"max_steps": self.max_steps, "max_dollars": self.max_dollars, "max_tokens": self.max_tokens,
                "max_wall_s": self.max_wall_s, "max_evals": self.max_evals}
