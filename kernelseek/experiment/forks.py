"""A forks experiment: the causal version of "large gains followed layer-shift and reject-limit questions".

For each chosen decision point of one recorded run, N forks per question kind, each with the same budget
counted from the fork point; what each fork gained within K evaluations is compared per kind. The file:

    name: my_forks                 # optional; default: the file's name
    forks:
      run: RUN                     # the recorded run: an id under the runs folder, or a folder
      at: [4, 9]                   # its decision points' steps (default: every one)
      kinds: [layer_shift, reject_limit, inform, none]   # the default; none: no question, only "continue"
      repeats: 3                   # forks per (step, kind); repeat r draws its bank question with seed r
      within_evals: 3              # K: the gain is the best within the fork's first K evaluations
      budgets: {max_steps: 10, max_evals: 3}   # each fork's, after the fork point (max_steps, max_evals, max_dollars)
      mode: none                   # who asks at the forks' later decision points: none (default) or auto
      bank: null                   # the bank folder the questions are drawn from (default: the bank, bank/)

A fork's *gain* is the best speedup among its first K candidates that became the best (or the parent's
best at the fork point, if none did) divided by the parent's best at the fork point. The forks are
ordinary runs under `<out>/forks/<run>-at<step>-<kind>-r<i>/`; run the command again after an
interruption and the finished ones are not run again. Table and page: `kernelseek.experiment.forks_report`.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelseek.experiment.config import ExperimentConfigError

FORK_FIELDS = {"run", "at", "kinds", "repeats", "within_evals", "budgets", "mode", "bank"}
FORK_BUDGETS = {"max_steps": "steps", "max_evals": "evals", "max_dollars": "dollars"}
FORK_MODES = ("none", "auto")


@dataclass
class ForksExperiment:
    path: Path
    name: str
    run: Path  # the parent run's folder
    at: list[int]
    kinds: list[str]
    repeats: int
    within_evals: int
    budgets: dict[str, Any] = field(default_factory=dict)
    mode: str = "none"
    bank: Path | None = None


def is_forks_experiment(path: Path) -> bool:
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return False  # load_experiment reports it
    return isinstance(data, dict) and "forks" in data


def _fail(path: Path, message: str) -> ExperimentConfigError:
    return ExperimentConfigError(f"{path}: {message}")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def load_forks_experiment(path: str | Path, runs_dir: Path | None = None) -> ForksExperiment:
    """Read and check a forks experiment file; one sentence naming the field on any mistake."""
    import yaml

    from kernelseek.agent.run_store import Run
    from kernelseek.forks import decision_points
    from kernelseek.forks.question import KINDS
    from kernelseek.settings import ConfigError

    path = Path(path)
    data = yaml.safe_load(path.read_text())
    extra = sorted(set(data) - {"name", "forks"})
    if extra:
        raise _fail(path, f"the field '{extra[0]}' cannot be in a forks experiment, which holds only name and forks "
                    "(the forks take everything else from the recorded run); compare graphs in another file.")
    name = data.get("name") or path.stem
    if not isinstance(name, str) or not name.replace("-", "").replace("_", "").isalnum():
        raise _fail(path, f"the field 'name' must be letters, digits, '-' and '_' (it names a folder), not {name!r}.")
    spec = data["forks"]
    if not isinstance(spec, dict):
        raise _fail(path, "the field 'forks' must be a mapping (run, at, kinds, repeats, within_evals, budgets, mode).")
    unknown = sorted(set(spec) - FORK_FIELDS)
    if unknown:
        raise _fail(path, f"the field 'forks.{unknown[0]}' is unknown; the fields are {', '.join(sorted(FORK_FIELDS))}.")
    ref = spec.get("run")
    if not isinstance(ref, str | Path) or not str(ref):
        raise _fail(path, "the field 'forks.run' is required: the recorded run's id or folder.")
    local = path.resolve().parent / str(ref)
    try:
        parent = Run.open(local if (local / "config.json").is_file() else str(ref), runs_dir)
    except ConfigError as error:
        raise _fail(path, f"the field 'forks.run': {error}") from None
    steps = [p.step for p in decision_points(parent.trace.path)]
    at = spec.get("at", steps)
    if not isinstance(at, list) or not at or not all(_whole(s) for s in at):
        raise _fail(path, "the field 'forks.at' must list the steps of decision points, e.g. [4].")
    missing = [s for s in at if s not in steps]
    if missing:
        raise _fail(path, f"the field 'forks.at' names step {missing[0]}, which is not a decision point of run "
                    f"{parent.id} (its decision points: {', '.join(map(str, steps)) or 'none'}).")
    kinds = spec.get("kinds", ["layer_shift", "reject_limit", "inform", "none"])
    if not isinstance(kinds, list) or not kinds or any(k not in KINDS for k in kinds):
        raise _fail(path, f"the field 'forks.kinds' must list question kinds among {', '.join(KINDS)}.")
    repeats, within = spec.get("repeats", 1), spec.get("within_evals", 3)
    for key, value in (("repeats", repeats), ("within_evals", within)):
        if not _whole(value) or value < 1:
            raise _fail(path, f"the field 'forks.{key}' must be a whole number, at least 1, not {value!r}.")
    budgets = spec.get("budgets") or {}
    if not isinstance(budgets, dict) or not budgets:
        raise _fail(path, "the field 'forks.budgets' must set each fork's budget after the fork point, e.g. "
                    "{max_steps: 10, max_evals: 3}.")
    for key, value in budgets.items():
        if key not in FORK_BUDGETS:
            raise _fail(path, f"the field 'forks.budgets.{key}' is unknown; use {', '.join(FORK_BUDGETS)}.")
        integer = key != "max_dollars"
        if (not _whole(value) if integer else (isinstance(value, bool) or not isinstance(value, int | float)
                                               or not math.isfinite(value))) or value <= 0:
            raise _fail(path, f"the field 'forks.budgets.{key}' must be a {'whole ' if integer else ''}number "
                        f"above 0, not {value!r}.")
    mode = spec.get("mode", "none")
    if mode not in FORK_MODES:
        raise _fail(path, f"the field 'forks.mode' must be none or auto (a fork in an experiment runs unattended), "
                    f"not {mode!r}.")
    bank = spec.get("bank")
    if bank is not None:
        bank = Path(str(bank)).expanduser()
        bank = bank if bank.is_absolute() else path.resolve().parent / bank
        if not bank.is_dir():
            raise _fail(path, f"the field 'forks.bank' names {bank}, which is not a folder; give a bank folder "
                        "(relative to the config file) or leave it out for the bank.")
    return ForksExperiment(path=path.resolve(), name=name, run=parent.dir, at=list(at), kinds=list(kinds),
                           repeats=repeats, within_evals=within, budgets=dict(budgets), mode=mode, bank=bank)


def fork_id(experiment: ForksExperiment, step: int, kind: str, repeat: int) -> str:
    return f"{experiment.run.name}-at{step}-{kind}-r{repeat}"


def prepare_forks(experiment: ForksExperiment, out: Path, *, create: bool = True) -> list[Any]:
    """The fork jobs, made where they do not exist yet (a fork cut off while being made is made again)."""
    from kernelseek.agent.run_store import Run
    from kernelseek.experiment.config import GraphSpec
    from kernelseek.experiment.runner import Job, finished
    from kernelseek.forks import create_fork, decision_points
    from kernelseek.forks import question as pick
    from kernelseek.forks.family import fork_info
    from kernelseek.forks.points import find_point

    parent = Run(experiment.run)
    points = decision_points(parent.trace.path)
    folder = out / "forks"
    folder.mkdir(parents=True, exist_ok=True)
    budgets = {FORK_BUDGETS[k]: v for k, v in experiment.budgets.items()}
    jobs = []
    for step in experiment.at:
        point = find_point(points, step, parent.id)
        for kind in experiment.kinds:
            for repeat in range(experiment.repeats):
                run_dir = folder / fork_id(experiment, step, kind, repeat)
                asked = pick.of_kind(kind, point, seed=repeat, bank_dir=experiment.bank)
                spec = GraphSpec(name=kind, model=parent.config.model, worker_command=parent.config.worker_command)
                info = fork_info(run_dir)
                if info and (run_dir / "checkpoints.sqlite").is_file():
                    _check_same(experiment, run_dir, info, asked)
                    jobs.append(Job(spec, repeat, run_dir, "finished" if finished(run_dir) else "partial"))
                    continue
                if not create:
                    jobs.append(Job(spec, repeat, run_dir, "new"))
                    continue
                if run_dir.exists():  # cut off while being made: it has no checkpoint, nothing in it ran
                    shutil.rmtree(run_dir)
                create_fork(parent, point, asked, runs_dir=folder, run_id=run_dir.name, mode=experiment.mode,
                            seed=repeat, **budgets)
                jobs.append(Job(spec, repeat, run_dir, "new"))
    return jobs


def _check_same(experiment: ForksExperiment, run_dir: Path, info: dict[str, Any], asked: dict[str, Any]) -> None:
    from kernelseek.settings import Configuration

    have = (info.get("question") or {}).get("text") or ""
    if have != asked["text"]:
        raise ExperimentConfigError(f"{experiment.path}: the fork {run_dir} asked “{have}” and the bank now draws "
                                    f"“{asked['text']}”; restore the bank, or pass another --out.")
    config = Configuration.load(run_dir / "config.json")
    if config.mode != experiment.mode:
        raise ExperimentConfigError(f"{experiment.path}: the fork {run_dir} was made with forks.mode = {config.mode} "
                                    f"and the file now gives {experiment.mode}; restore it, or pass another --out.")


@dataclass
class ForkMetrics:
    run_id: str
    step: int
    kind: str
    repeat: int
    question: str
    bank_id: str | None
    before: float | None  # the parent's best at the fork point
    within: float | None  # the best within K evaluations (before, if none of them became the best)
    gain: float | None
    best: float | None  # the fork's best at its end
    evaluations: int
    wrong: int
    steps: int
    cost_usd: float
    end_reason: str | None
    worker: str = ""                 # the fork's worker (the parent's): a model, scripted/<file>, or a command
    plateau_step: int | None = None  # the fork's last step with a large gain over the best before it

    @property
    def scripted(self) -> bool:
        return self.worker.startswith("scripted/")

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def fork_metrics(run_dir: Path, kind: str, repeat: int, k: int) -> ForkMetrics:
    from kernelseek.analysis.graph import analyze_events
    from kernelseek.bank.outcomes import candidates
    from kernelseek.trace import read_trace

    events = read_trace(run_dir / "trace.jsonl")
    start = next(e for e in events if e["type"] == "run_start")
    fork = start["fork"]
    cands = candidates(events)
    before = fork.get("best_speedup")
    later = [c.speedup for c in cands[:k] if c.best and c.speedup is not None]
    within = max([before, *later]) if before is not None else (max(later) if later else None)
    end = next((e for e in events if e["type"] == "run_end"), None)
    question = fork.get("question") or {}
    steps = (end["steps"] - fork["step"]) if end else max((e["step"] for e in events), default=0) - fork["step"]
    return ForkMetrics(
        run_id=run_dir.name, step=fork["step"], kind=kind, repeat=repeat, question=question.get("text") or "",
        bank_id=question.get("bank_id"), before=before, within=within,
        gain=round(within / before, 4) if before and within else None,
        best=(end or {}).get("best_speedup"), evaluations=len(cands), wrong=sum(1 for c in cands if not c.correct),
        steps=steps, cost_usd=round(sum(float(e["cost_usd"] or 0) for e in events if e["type"] == "model_call"), 6),
        end_reason=(end or {}).get("reason"), worker=str(start.get("worker") or ""),
        plateau_step=analyze_events(events, run_id=run_dir.name, k=k).plateau_step)


def collect_forks(experiment: ForksExperiment, jobs: list[Any]) -> tuple[list[ForkMetrics], list[str]]:
    from kernelseek.experiment.runner import finished

    metrics, missing = [], []
    for job in jobs:
        if finished(job.run_dir):
            metrics.append(fork_metrics(job.run_dir, job.graph.name, job.repeat, experiment.within_evals))
        else:
            missing.append(job.label)
    return metrics, missing
