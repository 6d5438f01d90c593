"""Two judgements of one task side by side: per scenario, is the second kernel faster, slower, or within
the noise of the two measurements?

The measure is the ratio of the two speedups over the headline baseline (after / before). Each speedup was
timed beside its own baseline, interleaved in one process, so the ratio holds between two calls or two
machines of one kind, where a ratio of raw times would carry the drift between them. Its noise is read from
what the judge recorded: every timed implementation has a `spread`, (p90 - p10) / median over its trials,
and the band of a ratio of two speedups is the sum of the four. That is a conservative band: a change
beyond it is real; one within it is not called a gain or a loss, though it may be one. Small changes show
in a group instead: how many of its scenarios moved the same way (a sign count, which assumes nothing
about the size of the noise), beside the group's geomean ratio.

Scenarios are matched by name, the suite's and the hold-out's apart (hold-out names carry their seed, so
two different samples share none). Judgements of different tasks, archs or headline baselines are refused.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernelseek.harness.judge import geomean

GZIP_MAGIC = b"\x1f\x8b"

FASTER, SLOWER, WITHIN, BROKE, FIXED, UNTIMED = "faster", "slower", "within band", "broke", "fixed", "untimed"


class CompareError(ValueError):
    """A judgement file that cannot be compared: one sentence naming the file and the fix."""


@dataclass
class ScenarioChange:
    scenario: str
    group: str
    holdout: bool
    before: float | None  # speedup over the baseline, or None when incorrect or untimed
    after: float | None
    ratio: float | None  # after / before
    band: float | None  # the relative band the ratio must leave to count as a change
    verdict: str  # faster, slower, within band, broke, fixed or untimed


@dataclass
class Comparison:
    before: str  # the files, as given
    after: str
    task: str
    arch: str
    baseline: str | None
    changes: list[ScenarioChange] = field(default_factory=list)
    # group -> {n, timed, higher (ratios above 1), before, after, ratio (geomeans of the timed ones)}
    groups: dict[str, dict] = field(default_factory=dict)
    suite_ratio: float | None = None  # geomean of the suite's ratios
    holdout_ratio: float | None = None
    only_before: list[str] = field(default_factory=list)  # scenarios one judgement has and the other not
    only_after: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the reader should know (other device, other kernel file)

    def count(self, verdict: str) -> int:
        return sum(c.verdict == verdict for c in self.changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_judgement(path: str | Path) -> dict[str, Any]:
    """A judgement's JSON (what `kernelseek eval --out` writes, or it gzipped), checked enough to compare."""
    path = Path(path)
    if not path.is_file():
        what = "not a regular file" if path.exists() else "no such file"
        raise CompareError(f"{path}: {what}; pass a judgement written by `kernelseek eval --out FILE`.")
    raw = path.read_bytes()
    if raw[:2] == GZIP_MAGIC:  # the stored judgements of benchmarks/results are gzipped
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as error:
            raise CompareError(f"{path}: a gzip file that does not unpack ({error}); pass a judgement written by "
                               "`kernelseek eval --out FILE`, gzipped whole or not at all.") from None
    try:
        data = json.loads(raw.decode(errors="replace"))
    except json.JSONDecodeError as error:
        raise CompareError(f"{path}: not JSON ({error.msg}, line {error.lineno}); pass a judgement written by "
                           "`kernelseek eval --out FILE`.") from None
    if not isinstance(data, dict) or not isinstance(data.get("scenarios"), list) or not data.get("task"):
        raise CompareError(f"{path}: not a judgement (no task or no scenarios list); pass a file written by "
                           "`kernelseek eval --out FILE`.")
    for index, result in enumerate(data["scenarios"]):
        if not isinstance(result, dict) or not isinstance(result.get("scenario"), str):
            raise CompareError(f"{path}: scenarios[{index}] has no scenario name (edited?); pass a judgement "
                               "written by `kernelseek eval --out FILE`.")
    return data


def compare(before: dict[str, Any], after: dict[str, Any], before_name: str = "before",
            after_name: str = "after", by: str | None = None) -> Comparison:
    """Every scenario both judgements have, with its verdict; group and overall geomeans of the ratios.
    `by`, a regular expression, groups the scenarios by what it matches in their names instead of by the
    judge's groups (e.g. `d\\d+`: by head dimension), the hold-out's apart from the suite's."""
    pattern = _pattern(by)
    for key, what in (("task", "task"), ("arch", "arch"), ("baseline", "headline baseline")):
        if before.get(key) != after.get(key):
            raise CompareError(f"{before_name} has {what} {before.get(key)!r} and {after_name} {after.get(key)!r}; "
                               f"compare two judgements of one task on one arch against one baseline.")
    result = Comparison(before=before_name, after=after_name, task=before["task"], arch=before.get("arch", ""),
                        baseline=before.get("baseline"))
    result.notes = _notes(before, after)
    old = {(bool(s.get("holdout")), s["scenario"]): s for s in before["scenarios"]}
    new = {(bool(s.get("holdout")), s["scenario"]): s for s in after["scenarios"]}
    result.only_before = [key[1] for key in old if key not in new]
    result.only_after = [key[1] for key in new if key not in old]
    for key, later in new.items():
        if key in old:
            result.changes.append(_change(old[key], later, result.baseline, pattern))
    result.groups = _groups(result.changes)
    result.suite_ratio = geomean([c.ratio for c in result.changes if not c.holdout and c.ratio])
    result.holdout_ratio = geomean([c.ratio for c in result.changes if c.holdout and c.ratio])
    return result


def _pattern(by: str | None) -> re.Pattern | None:
    if by is None:
        return None
    try:
        return re.compile(by)
    except re.error as error:
        raise CompareError(f"--by {by!r} is not a regular expression ({error}); pass one such as 'd\\d+' "
                           "(group by head dimension).") from None


def _group(old: dict, new: dict, pattern: re.Pattern | None) -> str:
    if pattern is None:
        return str(new.get("group") or old.get("group") or "")
    found = pattern.search(new["scenario"])
    name = (found.group(1) if found and pattern.groups else found.group(0)) if found else "(no match)"
    return f"{name} (hold-out)" if new.get("holdout") else name


def _change(old: dict, new: dict, baseline: str | None, pattern: re.Pattern | None = None) -> ScenarioChange:
    change = ScenarioChange(scenario=new["scenario"], group=_group(old, new, pattern),
                            holdout=bool(new.get("holdout")), before=_speedup(old), after=_speedup(new),
                            ratio=None, band=None, verdict=UNTIMED)
    was, now = bool(old.get("correct")), bool(new.get("correct"))
    if was and not now:
        change.verdict = BROKE
    elif now and not was:
        change.verdict = FIXED
    elif change.before and change.after:
        change.ratio = change.after / change.before
        change.band = _spread(old, baseline) + _spread(new, baseline)
        if abs(change.ratio - 1.0) <= change.band:
            change.verdict = WITHIN
        else:
            change.verdict = FASTER if change.ratio > 1.0 else SLOWER
    return change


def _speedup(result: dict) -> float | None:
    value = result.get("speedup") if result.get("correct") else None
    return float(value) if _number(value) and value > 0 else None


def _spread(result: dict, baseline: str | None) -> float:
    """The relative spread of one speedup: the candidate's spread plus the baseline's (0 where not recorded)."""
    spread = result.get("spread") if isinstance(result.get("spread"), dict) else {}
    return sum(float(spread[k]) for k in ("candidate", baseline) if k in spread and _number(spread[k]))


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def summarize(changes: list[ScenarioChange]) -> dict:
    """A set of changes in numbers: {n, timed, higher (ratios above 1), before, after, ratio (geomeans of
    the timed ones)}; what a group row, and the suite's or the hold-out's, shows."""
    timed = [c for c in changes if c.ratio]
    return {"n": len(changes), "timed": len(timed), "higher": sum(c.ratio > 1.0 for c in timed),
            "before": geomean([c.before for c in timed]), "after": geomean([c.after for c in timed]),
            "ratio": geomean([c.ratio for c in timed])}


def _groups(changes: list[ScenarioChange]) -> dict[str, dict]:
    groups: dict[str, list[ScenarioChange]] = {}
    for change in changes:
        groups.setdefault(change.group, []).append(change)
    return {name: summarize(members) for name, members in groups.items()}


def _notes(before: dict, after: dict) -> list[str]:
    notes = []
    gpu = [(j.get("device") or {}).get("name") for j in (before, after)]
    if gpu[0] and gpu[1] and gpu[0] != gpu[1]:
        notes.append(f"judged on different devices ({gpu[0]}, {gpu[1]}): each speedup is against its own "
                     "device's baseline, but the two devices may favour different kernels.")
    if before.get("sha256") and before.get("sha256") == after.get("sha256"):
        notes.append("both judgements are of the same kernel file (same sha256): every difference is "
                     "measurement noise or drift, a yardstick for the band.")
    if before.get("judgement") != after.get("judgement"):
        notes.append(f"one judgement is {before.get('judgement')}, the other {after.get('judgement')}: only the "
                     "scenarios both have are compared.")
    return notes
