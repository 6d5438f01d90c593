"""What the judge's child may report, checked in the parent.

The child runs candidate code, so nothing it sends is taken on trust: each record must have exactly
the expected fields with values of the expected types (finite, positive times), and the numbers a
verdict rests on (speedups, rates) are derived here from the raw times. A record that does not fit is
the child's failure (and so the candidate's), never a verdict.
"""

from __future__ import annotations

import math
from typing import Any


class RecordError(ValueError):
    """The child sent something that is not a valid record; the message says what."""


_RESULT_FIELDS = {"event", "scenario", "group", "correct", "reason", "traceback", "check", "timing", "sets",
                  "trials", "time_s", "spread", "eager_s", "lag_s", "beside_skipped", "baseline_timing", "wall_s"}


def _number(value: Any, what: str, *, positive: bool = False, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RecordError(f"{what} is not a finite number: {value!r:.60}")
    if positive and value <= 0:
        raise RecordError(f"{what} is not positive: {value!r}")
    return float(value)


def _table(value: Any, what: str, names: set[str] | None, **kind: bool) -> dict[str, float | None]:
    if not isinstance(value, dict):
        raise RecordError(f"{what} is not a table")
    for key, number in value.items():
        if not isinstance(key, str) or (names is not None and key not in names):
            raise RecordError(f"{what} names an unknown implementation: {key!r:.60}")
        _number(number, f"{what}[{key}]", **kind)
    return value


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise RecordError(f"{what} is not text")
    return value


def check_event(event: Any) -> str:
    if not isinstance(event, dict) or event.get("event") not in ("ready", "start", "result", "done"):
        raise RecordError(f"not a record: {str(event)[:80]}")
    return event["event"]


def check_bandwidth(value: Any) -> None:
    """The copy bandwidth a ready record reports: None (the task states no memory floor) or bytes/s."""
    _number(value, "copy_bandwidth_Bps", positive=True, optional=True)


def check_result(event: dict, scenario: str, implementations: set[str], headline: str | None) -> None:
    """Validate one result record for `scenario`. `implementations`: the names that may be timed
    (the candidate and the baselines); `headline`: the baseline every correct scenario must be timed
    against, or None when none can run here."""
    unknown = set(event) - _RESULT_FIELDS
    if unknown:
        raise RecordError(f"unexpected fields {sorted(unknown)[:5]}")
    if event.get("scenario") != scenario:
        raise RecordError(f"a result for {str(event.get('scenario'))[:60]!r} while {scenario!r} was running")
    if not isinstance(event.get("correct"), bool):
        raise RecordError("'correct' is not true or false")
    if "wall_s" in event:
        _number(event["wall_s"], "wall_s")
    if not event["correct"]:
        _text(event.get("reason"), "reason")
        return
    check = event.get("check")
    if not isinstance(check, dict) or set(check) != {"errors", "allowed", "relative_to"}:
        raise RecordError("a correct result without its check")
    _table(check["errors"], "check.errors", None, optional=True)
    _table(check["allowed"], "check.allowed", None, optional=True)
    _text(check["relative_to"], "check.relative_to")
    _text(event.get("timing"), "timing")
    for key in ("sets", "trials"):
        if not isinstance(event.get(key), int) or event[key] <= 0:
            raise RecordError(f"{key} is not a positive count")
    times = _table(event.get("time_s"), "time_s", implementations, positive=True)
    _table(event.get("eager_s"), "eager_s", implementations, positive=True)
    _table(event.get("spread"), "spread", implementations)
    if "lag_s" in event:
        _table(event["lag_s"], "lag_s", implementations)
    if "candidate" not in times or (headline is not None and headline not in times):
        raise RecordError("a correct result without the candidate's and the baseline's times")


def derive(result: dict, headline: str | None, flops: float) -> dict:
    """Add what follows from a valid correct result's times: speedups and TFLOP/s."""
    times = result["time_s"]
    candidate = times["candidate"]
    result["tflops"] = {name: flops / t / 1e12 for name, t in times.items()}
    if headline in times:
        result["speedup"] = times[headline] / candidate
    result["speedup_beside"] = {name: t / candidate for name, t in times.items()
                                if name not in ("candidate", headline)}
    return result


def derive_floor(result: dict, bytes_moved: float | None, bandwidth: float | None) -> dict:
    """Add the memory floor to a correct result: the bytes a kernel must move, the time that takes at the
    measured copy bandwidth, and the fraction of that floor each implementation reached (floor / time)."""
    if not result.get("correct") or not bytes_moved or not bandwidth:
        return result
    floor_s = bytes_moved / bandwidth
    result.update(bytes_moved=bytes_moved, floor_s=floor_s,
                  floor_fraction={name: floor_s / t for name, t in result["time_s"].items()})
    return result
