"""The auto-mode policy: which bank question to ask at a decision point.

1. Only questions whose `fits` names the decision point are eligible, and none of the ids asked in the
   last `recent` decision points of this run (if that leaves nothing, the rule relaxes to "not the
   last one asked", then to any fitting question). Questions flagged as operator-specific are used
   only when nothing else fits.
2. Thompson sampling on "a gain of at least X within K evaluations" (see `outcomes.py`): each eligible
   question gets a Beta(1 + successes, 1 + failures) posterior, counting the outcomes recorded in
   `stats.json` from auto-mode runs and the ones learned from the human sessions it came from; one
   draw per question, the highest draw is asked. `stats.json` is the user's (`model.stats_path`):
   a run records into it, keyed by its run UUID, only when it uses a real model or `--bank-stats`
   names the file (`run_stats_file`); a scripted-model run without it neither reads nor records any. Untried questions (Beta(1, 1)) keep being explored;
   questions that preceded gains are exploited.
3. Deterministic: the random generator is seeded from (seed, decision point, the ids asked so far), so
   the same run state always gets the same question, including after a resume.
4. Contextual (when the situation's features are given, `kernelseek.agent.chooser`): besides the
   question's own posterior, each (question, feature) pair — e.g. (rl-how-far, claim:memory),
   (ls-launch-cost, report:uneven_groups) — has a Beta(1 + successes, 1 + failures) posterior from the
   recorded outcomes of that question asked in situations with that feature (a run records each bank
   question's features in stats.json); the question's score is the mean of one draw from each, so a
   question that preceded gains in situations like this one is preferred. `offer` returns the K best
   scores (what a chooser model picks from); the policy alone asks the first.
"""

from __future__ import annotations

import hashlib
import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelseek.bank.model import (
    BankError,
    Question,
    aggregate_stats,
    load_bank,
    load_stats,
    save_stats,
    stats_lock,
    stats_path,
)
from kernelseek.bank.outcomes import DEFAULT_K, DEFAULT_SUCCESS, candidates, next_seq, score_question
from kernelseek.settings import Configuration
from kernelseek.trace import DECISION_POINTS, read_trace, trace_path

DEFAULT_RECENT = 3


def posterior(question: Question, stats: dict[str, dict[str, Any]]) -> tuple[float, float]:
    """Beta parameters (alpha, beta) for a question from its learned and recorded outcomes."""
    successes = failures = 0
    for source in (question.outcomes, stats.get(question.id, {})):
        scored = int(source.get("scored") or 0)
        wins = int(source.get("successes") or 0)
        successes += wins
        failures += max(scored - wins, 0)
    return 1.0 + successes, 1.0 + failures


def eligible(questions: list[Question], decision_point: str, asked: list[str], recent: int) -> list[Question]:
    fitting = [q for q in questions if decision_point in q.fits]
    if not fitting:
        raise BankError(f"the bank has no question that fits the decision point '{decision_point}'; "
                        "add one whose 'fits' names it.")
    clean = [q for q in fitting if not q.flags] or fitting
    recent_ids = set(asked[-recent:]) if recent > 0 else set()
    for exclude in (recent_ids, set(asked[-1:])):
        pool = [q for q in clean if q.id not in exclude]
        if pool:
            return pool
    return clean


def _rng(seed: int, decision_point: str, asked: list[str]) -> random.Random:
    digest = hashlib.sha256(f"{seed}|{decision_point}|{','.join(asked)}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


FeatureStats = dict[tuple[str, str], dict[str, int]]


def feature_stats(data: dict[str, Any]) -> FeatureStats:
    """(bank id, situation feature) -> {scored, successes} over the recorded runs' outcomes."""
    totals: FeatureStats = {}
    for run in data.get("runs", {}).values():
        for outcome in run.get("outcomes", []):
            gain = outcome.get("gain")
            if not isinstance(gain, int | float) or isinstance(gain, bool):
                continue
            for feature in outcome.get("features") or []:
                entry = totals.setdefault((outcome["id"], str(feature)), {"scored": 0, "successes": 0})
                entry["scored"] += 1
                entry["successes"] += bool(outcome.get("success"))
    return totals


def rank(questions: list[Question], stats: dict[str, dict[str, Any]], decision_point: str, asked: list[str], *,
         seed: int, recent: int = DEFAULT_RECENT, features: tuple[str, ...] | list[str] = (),
         by_feature: FeatureStats | None = None) -> list[tuple[float, Question]]:
    """The eligible questions with their sampled scores, best first."""
    if decision_point not in DECISION_POINTS:
        raise BankError(f"the decision point '{decision_point}' is unknown; use one of "
                        f"{', '.join(DECISION_POINTS)}.")
    pool = sorted(eligible(questions, decision_point, list(asked), recent), key=lambda q: q.id)
    rng = _rng(seed, decision_point, list(asked))
    by_feature = by_feature or {}
    scored = []
    for q in pool:
        draws = [rng.betavariate(*posterior(q, stats))]
        for feature in features:
            counts = by_feature.get((q.id, feature), {})
            wins, n = int(counts.get("successes", 0)), int(counts.get("scored", 0))
            draws.append(rng.betavariate(1.0 + wins, 1.0 + max(n - wins, 0)))
        scored.append((sum(draws) / len(draws), q))
    return sorted(scored, key=lambda d: (d[0], d[1].id), reverse=True)


def choose(questions: list[Question], stats: dict[str, dict[str, Any]], decision_point: str,
           asked: list[str], *, seed: int, recent: int = DEFAULT_RECENT) -> Question:
    return rank(questions, stats, decision_point, asked, seed=seed, recent=recent)[0][1]


def offer(decision_point: str, asked: list[str], *, seed: int, k: int, features: list[str],
          bank_dir: Path | None = None, recent: int = DEFAULT_RECENT, stats: str | Path | None = None,
          use_stats: bool = True) -> list[dict[str, Any]]:
    """The K fitting questions the contextual policy scores highest for this situation, best first:
    [{id, text, kind, fits, source, score}]. Raises BankError (one sentence)."""
    questions = load_bank(bank_dir)
    data = load_stats(stats) if use_stats else {"runs": {}}
    ranked = rank(questions, aggregate_stats(data), decision_point, list(asked), seed=seed, recent=recent,
                  features=list(features), by_feature=feature_stats(data))
    return [{"id": q.id, "text": q.text, "kind": q.kind, "fits": list(q.fits), "source": q.source,
             "score": round(score, 4)} for score, q in ranked[:max(k, 1)]]


def select_question(decision_point: str, asked: list[str], *, seed: int, bank_dir: Path | None = None,
                    recent: int = DEFAULT_RECENT, stats: str | Path | None = None,
                    use_stats: bool = True) -> dict[str, Any]:
    """The question to ask now: {id, text, kind, fits, source}. Raises BankError (one sentence).
    `stats` is the statistics file (default: the user's); `use_stats=False` reads none."""
    questions = load_bank(bank_dir)
    recorded = aggregate_stats(load_stats(stats)) if use_stats else {}
    question = choose(questions, recorded, decision_point, list(asked), seed=seed, recent=recent)
    return {"id": question.id, "text": question.text, "kind": question.kind, "fits": list(question.fits),
            "source": question.source}


def run_stats_file(config: Any) -> Path | None:
    """Where a run's outcome statistics go (and come from): its `bank_stats` path when given, else the
    user's stats file; None for a scripted-model run that did not name one (it records nothing)."""
    if getattr(config, "bank_stats", None):
        return stats_path(config.bank_stats)
    if str(getattr(config, "model", None) or "").startswith("scripted/"):
        return None
    return stats_path()


def run_key(run_dir: str | Path, events: list[dict[str, Any]]) -> str:
    """A run's identity for statistics and learning: the UUID in its run_start event or its config.json;
    for a run made before runs had one, its recorded run id, else its folder name."""
    for event in events:
        if event["type"] == "run_start" and event.get("run_uuid"):
            return str(event["run_uuid"])
    config = Path(run_dir) / "config.json"
    try:
        uuid = json.loads(config.read_text()).get("run_uuid") if config.is_file() else None
    except (OSError, ValueError, AttributeError):
        uuid = None
    if uuid:
        return str(uuid)
    return next((str(e["run_id"]) for e in events if e["type"] == "run_start" and e.get("run_id")),
                Path(run_dir).name)


def run_outcomes(run_dir: str | Path, *, k: int = DEFAULT_K,
                 success: float = DEFAULT_SUCCESS) -> tuple[str, list[dict[str, Any]]]:
    """(run key (its UUID), the scored outcome of every bank question the run asked)."""
    path = trace_path(run_dir)
    events = read_trace(path)
    key = run_key(path.parent, events)
    cands = candidates(events)
    asks = [e["seq"] for e in events if e["type"] == "question"]
    outcomes = []
    for event in events:
        if event["type"] == "question" and event.get("source") == "bank" and event.get("bank_id"):
            scored = score_question(cands, event["seq"], k=k, success=success, until=next_seq(asks, event["seq"]))
            features = event.get("features")
            outcomes.append({"id": str(event["bank_id"]), **scored.to_dict(),
                             **({"features": [str(f) for f in features]} if isinstance(features, list) else {})})
    return key, outcomes


def record_run_outcomes(run_dir: Path, stats: str | Path | None = None, *, k: int = DEFAULT_K,
                        success: float = DEFAULT_SUCCESS) -> Path | None:
    """Score the bank questions a run asked and store them in the statistics file under the run's UUID.
    `stats` names the file (a .json path, or a folder holding stats.json); without it the run's own
    configuration decides (`run_stats_file`). Returns the file recorded into, or None.

    Idempotent: the run's entry is replaced, never added to, so calling it again (after a crash and a
    resume, or after every evaluation to keep the statistics current) never counts a question twice.
    """
    run_dir = Path(run_dir)
    if stats is None:
        target = run_stats_file(Configuration.load(run_dir / "config.json"))
        if target is None:
            return None
    else:
        target = stats_path(stats)
    key, outcomes = run_outcomes(run_dir, k=k, success=success)
    with stats_lock(target):
        data = load_stats(target)
        previous = data["runs"].get(key)
        if not outcomes and previous is None:
            return target
        if previous is not None and previous.get("outcomes") == outcomes:
            return target
        data["runs"][key] = {"recorded": datetime.now(UTC).isoformat(timespec="seconds"),
                             "run": trace_path(run_dir).parent.name, "outcomes": outcomes}
        save_stats(data, target)
    return target
