"""The question bank as data: YAML files under `bank/`, one per source, plus `stats.json`.

A bank file (`bank/seed.yaml`, `bank/learned-<name>.yaml`) is a mapping:

    name: seed                      # the source; defaults to the file's stem
    description: ...                # free text, optional
    questions:
      - id: ls-launch               # unique across every bank file; letters, digits, '-', '_', '.'
        text: Short question?       # one line, in our own words
        kind: layer_shift           # layer_shift | reject_limit | inform | other
        fits: [done, plateau]       # decision points: done | claimed_limit | plateau | failing | no_evaluation
        provenance:                 # where it came from: hand-written, or the sessions' messages
          - {source: hand-written}
          - {source: session, session: RUN_ID, message: EVENT_KEY, seq: 12, step: 4,
             decision_point: plateau, original: "the human's words"}
        flags: []                   # operator-specific words found and not rewritten (optional)
        claims: [memory]            # the claim it presupposes ("You called it memory-bound"): asked only at a
                                    #   claimed_limit whose claim is of that area (memory | compute | launch |
                                    #   compiler | other), or of any area with [any]; absent: needs no claim
        outcomes:                   # what followed it in the sessions it was learned from (optional)
          asked: 2                  #   times asked, times scored (a correct candidate existed before),
          scored: 2                 #   times a gain of at least X followed within K evaluations,
          successes: 1              #   and the mean gain ratio (best after / best before)
          mean_gain: 1.21

A learned file may also hold near-duplicates of entries in *other* bank files (a seed question, or one
learned into another file), so that a hand-written file is never rewritten by learning:

    merged:                         # entry id in another bank file -> what was learned about it
      oth-smaller-step:
        fits: [failing]             #   decision points added to it
        provenance: [{source: session, session: RUN_UUID, message: EVENT_KEY, ...}]

`load_bank` attaches these to the entry they name: its provenance grows, its fits gain the decision
points, and its outcomes are recomputed from all of its session provenance.

`stats.json` holds the outcome statistics of auto-mode runs. It belongs to the user, not to the
repository: it lives in the user's data directory (`$XDG_DATA_HOME/kernelseek/stats.json`, else
`~/.local/share/kernelseek/stats.json`) unless a path is given (`--bank-stats`). Entries are keyed by
the run's UUID (`run_uuid` in its config.json and its trace's run_start), so recording a run twice
(after a crash and a resume) replaces its entry instead of counting it twice, and two runs that share a
folder name never overwrite each other:

    {"version": 1, "runs": {"RUN_UUID": {"recorded": ISO_TIME, "run": FOLDER_NAME, "outcomes": [
        {"id": BANK_ID, "seq": 17, "before": 1.02, "after": 1.31, "gain": 1.28, "success": true}]}}}

Both formats are checked by the pydantic models of kernelseek/bank/schema.py: an unknown key anywhere (at the
top, in an entry, its outcomes or a `merged` entry; in stats.json, a run or an outcome) is refused in one
sentence naming the file and the field.

Every write goes to a temporary file in the same folder, is flushed to disk and renamed over the old
file, so a crash never leaves a half-written bank or stats file.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kernelseek.bank import schema
from kernelseek.files import atomic_write_text
from kernelseek.project import user_data_dir

STATS_FILE = "stats.json"
NOT_BANK_FILES = ("terms.yaml",)  # the term map (kernelseek.bank.terms) lives beside the bank files


class BankError(ValueError):
    """A bank or stats file that cannot be used; the message is one sentence naming file, entry, field."""


@dataclass
class Question:
    id: str
    text: str
    kind: str
    fits: list[str]
    provenance: list[dict[str, Any]] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    outcomes: dict[str, Any] = field(default_factory=dict)
    source: str = ""  # the bank file it was loaded from (not written)
    claims: list[str] = field(default_factory=list)  # the claim areas it presupposes ("any": a claim of any area)  # the bank file it was loaded from (not written)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "text": self.text, "kind": self.kind,
                                "fits": list(self.fits), "provenance": [dict(p) for p in self.provenance]}
        if self.flags:
            data["flags"] = list(self.flags)
        if self.claims:
            data["claims"] = list(self.claims)
        if self.outcomes:
            data["outcomes"] = dict(self.outcomes)
        return data


@dataclass
class BankFile:
    path: Path
    name: str
    description: str
    questions: list[Question]
    merged: dict[str, dict[str, Any]] = field(default_factory=dict)  # id in another file -> {fits, provenance}

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name}
        if self.description:
            data["description"] = self.description
        data["questions"] = [q.to_dict() for q in self.questions]
        if self.merged:
            data["merged"] = {qid: {"fits": list(m.get("fits") or []), "provenance": [dict(p) for p in m["provenance"]]}
                              for qid, m in self.merged.items()}
        return data


def outcomes_of(provenance: list[dict[str, Any]]) -> dict[str, Any]:
    """An entry's learned outcomes from its session provenance: asked, scored, successes, mean gain."""
    learned = [p for p in provenance if p.get("source") == "session"]
    gains = [p["gain"] for p in learned if isinstance(p.get("gain"), int | float) and not isinstance(p.get("gain"), bool)]
    return {"asked": len(learned), "scored": len(gains),
            "successes": sum(1 for p in learned if p.get("success")),
            "mean_gain": round(sum(gains) / len(gains), 4) if gains else None}


def merge_into(question: Question, fits: list[str], provenance: list[dict[str, Any]]) -> None:
    """Add what was learned about a near-duplicate to `question`: decision points, provenance, outcomes."""
    for point in fits:
        if point not in question.fits:
            question.fits.append(point)
    question.provenance.extend(dict(p) for p in provenance)
    question.outcomes = outcomes_of(question.provenance)


def default_bank_dir() -> Path:
    """`$KERNELSEEK_BANK` if set, else the project's `bank/`, else the package's (kernelseek/project.py)."""
    from kernelseek import project

    return project.bank_dir()


# --- validation: the models of kernelseek/bank/schema.py ------------------------------------------------

def parse_bank(data: Any, path: Path) -> BankFile:
    """Validate the parsed YAML of one bank file."""
    if problem := schema.file_problem(data):
        raise BankError(f"{path}: {problem}")
    questions = data["questions"]
    result: list[Question] = []
    seen: set[str] = set()
    for index, entry in enumerate(questions, 1):
        problem = schema.entry_problem(entry)
        label = entry.get("id") if isinstance(entry, dict) and isinstance(entry.get("id"), str) else None
        where = f"entry {index}" + (f" ('{label}')" if label else "")
        if problem:
            name, what = problem
            subject = f"the field '{name}'" if name else "it"
            raise BankError(f"{path}: {where}: {subject} {what}; fix that entry.")
        if entry["id"] in seen:
            raise BankError(f"{path}: {where}: the field 'id' repeats an earlier entry; give it a unique id.")
        seen.add(entry["id"])
        result.append(Question(id=entry["id"], text=" ".join(entry["text"].split()), kind=entry["kind"],
                               fits=list(entry["fits"]), provenance=list(entry.get("provenance") or []),
                               flags=list(entry.get("flags") or []),
                               outcomes=dict(entry.get("outcomes") or {}), source=path.name,
                               claims=list(entry.get("claims") or [])))
    merged = data.get("merged") or {}
    for qid, entry in merged.items():
        if problem := schema.merged_problem(entry):
            raise BankError(f"{path}: merged '{qid}' {problem}; fix that entry.")
    description = data.get("description") or ""
    return BankFile(path=path, name=str(data.get("name") or path.stem), description=str(description),
                    questions=result, merged={str(k): dict(v) for k, v in merged.items()})


_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CACHE: dict[Path, tuple[tuple[int, int], Any]] = {}


def _parsed_yaml(path: Path, text: str, stamp: tuple[int, int]) -> Any:
    """The parsed YAML of a bank file, cached by (mtime, size) so the policy can load it at every ask."""
    cached = _CACHE.get(path)
    if cached is not None and cached[0] == stamp:
        return copy.deepcopy(cached[1])
    data = yaml.load(text, Loader=_SafeLoader)  # noqa: S506 - a safe loader
    _CACHE[path] = (stamp, copy.deepcopy(data))
    return data


def load_bank_file(path: str | Path) -> BankFile:
    path = Path(path)
    try:
        stat = path.stat()
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BankError(f"{path}: no such bank file; check the path.") from None
    except (OSError, UnicodeDecodeError) as error:
        raise BankError(f"{path}: cannot be read ({error.__class__.__name__}); check the file.") from None
    try:
        data = _parsed_yaml(path.resolve(), text, (stat.st_mtime_ns, stat.st_size))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise BankError(f"{path}: not valid YAML{where}; fix the syntax there.") from None
    return parse_bank(data, path)


def bank_files(bank_dir: str | Path | None = None) -> list[Path]:
    bank_dir = Path(bank_dir) if bank_dir is not None else default_bank_dir()
    if not bank_dir.is_dir():
        raise BankError(f"{bank_dir}: no such bank folder; set KERNELSEEK_BANK or pass --bank-dir.")
    return sorted(p for p in bank_dir.glob("*.yaml") if not p.name.startswith(".") and p.name not in NOT_BANK_FILES)


def load_bank(bank_dir: str | Path | None = None) -> list[Question]:
    """Every question of every bank file in `bank_dir`, validated, with the near-duplicates learned files
    merged into them; ids must be unique across files."""
    return questions_of(load_bank_files(bank_dir), copy_questions=False)  # files just parsed: nobody else holds them


def load_bank_files(bank_dir: str | Path | None = None) -> list[BankFile]:
    return [load_bank_file(path) for path in bank_files(bank_dir)]


def questions_of(files: list[BankFile], *, copy_questions: bool = True) -> list[Question]:
    """The questions of `files` (copies, unless `copy_questions` is false), ids checked unique, each file's
    `merged` applied to its entry."""
    questions: list[Question] = []
    owner: dict[str, Path] = {}
    for bank in files:
        for question in bank.questions:
            if question.id in owner:
                raise BankError(f"{bank.path}: entry '{question.id}': the field 'id' is already used in "
                                f"{owner[question.id].name}; give it a unique id.")
            owner[question.id] = bank.path
            questions.append(copy.deepcopy(question) if copy_questions else question)
    by_id = {q.id: q for q in questions}
    for bank in files:
        for qid, merged in bank.merged.items():
            if qid not in by_id or owner[qid] == bank.path:
                raise BankError(f"{bank.path}: merged '{qid}' names no entry of another bank file; remove it or "
                                "restore that entry.")
            merge_into(by_id[qid], list(merged.get("fits") or []), merged["provenance"])
    return questions


# --- writing -----------------------------------------------------------------------------------------

def dump_bank(bank: BankFile) -> str:
    return yaml.safe_dump(bank.to_dict(), sort_keys=False, allow_unicode=True, width=100)


def write_bank_file(bank: BankFile) -> None:
    text = dump_bank(bank)
    parse_bank(yaml.safe_load(text), bank.path)  # never write what we could not read back
    atomic_write_text(bank.path, text)


# --- stats -------------------------------------------------------------------------------------------

def stats_path(stats: str | Path | None = None) -> Path:
    """The statistics file: `stats` itself when it names a .json file, `stats`/stats.json when it names a
    folder, else the user's data directory's stats.json."""
    if stats is None:
        return user_data_dir() / STATS_FILE
    stats = Path(stats).expanduser()
    return stats if stats.suffix == ".json" else stats / STATS_FILE


def load_stats(stats: str | Path | None = None) -> dict[str, Any]:
    path = stats_path(stats)
    if not path.exists():
        return {"version": 1, "runs": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BankError(f"{path}: not valid JSON; restore it from version control or delete it to "
                        "start the statistics afresh.") from None
    if problem := schema.stats_problem(data):
        raise BankError(f"{path}: {problem}")
    return data


@contextlib.contextmanager
def stats_lock(stats: str | Path | None = None) -> Iterator[None]:
    """An exclusive lock around read-modify-write of stats.json (runs may end at the same time): a
    flock on its folder itself, so no lock file is left beside the data."""
    folder = stats_path(stats).parent
    folder.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def save_stats(data: dict[str, Any], stats: str | Path | None = None) -> None:
    atomic_write_text(stats_path(stats), json.dumps(data, indent=1, sort_keys=True) + "\n")


def aggregate_stats(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per bank id: asked, scored, successes, mean_gain over every recorded auto-mode run."""
    totals: dict[str, dict[str, Any]] = {}
    for run in data.get("runs", {}).values():
        for outcome in run.get("outcomes", []):
            entry = totals.setdefault(outcome["id"], {"asked": 0, "scored": 0, "successes": 0, "gains": []})
            entry["asked"] += 1
            gain = outcome.get("gain")
            if isinstance(gain, int | float) and not isinstance(gain, bool):
                entry["scored"] += 1
                entry["gains"].append(float(gain))
                entry["successes"] += bool(outcome.get("success"))
    for entry in totals.values():
        gains = entry.pop("gains")
        entry["mean_gain"] = round(sum(gains) / len(gains), 4) if gains else None
    return totals
