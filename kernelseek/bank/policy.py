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
4. Contextual (when the situation's features are given, `kernelseek.agent.chooser`): the *situation* is
   (decision point, the claimed limit's area, the last report's state), read from features such as
   `point:claimed_limit`, `claim:memory`, `report:below_baseline`. A question that presupposes a claim
   (`claims` in the bank: "You called it memory-bound") is eligible only at a claimed limit of an area it
   names (or of any area with [any]): never when nothing was claimed. Each question's posterior is
   Beta(prior + evidence):
   - the prior comes from its kind and the decision point (KIND_PRIOR; see `prior` for its weight): the
     method's claim that questions moving to another layer or rejecting a claimed limit precede the large
     gains, so at a claimed limit a reject_limit question starts ahead of an inform one, and a memory claim
     and a launch claim already differ through the questions each admits;
   - outcomes recorded in this exact situation count fully; outcomes of the same question in another
     known situation count POOL (a quarter) each, so they inform but never drown the situation's own
     record; outcomes with no recorded situation (older runs, the human sessions a question was learned
     from) count fully everywhere.
   One draw per question (Thompson sampling); `offer` returns the K best (what a chooser model picks
   from); the policy alone asks the first. A question that won 10 of 10 in one situation is asked there
   nearly every time, and elsewhere only as its pooled record earns.
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


# prior mean of "a gain follows" by decision point and kind (the method's claim; see the module docstring)
KIND_PRIOR: dict[str, dict[str, float]] = {
    "claimed_limit": {"reject_limit": 0.55, "layer_shift": 0.40, "inform": 0.15, "other": 0.10},
    "done": {"layer_shift": 0.45, "reject_limit": 0.35, "inform": 0.15, "other": 0.10},
    "plateau": {"layer_shift": 0.45, "reject_limit": 0.30, "inform": 0.20, "other": 0.10},
    "failing": {"other": 0.35, "layer_shift": 0.30, "inform": 0.20, "reject_limit": 0.15},
    "no_evaluation": {"other": 0.40, "layer_shift": 0.25, "inform": 0.15, "reject_limit": 0.15},
}
PRIOR_WEIGHT = 6.0  # an untried question's prior is worth this many outcomes; it fades as its own record grows
PRIOR_FADE = 2.0    # ... halving after this many of its own outcomes
POOL = 0.25         # the weight of one outcome of the question recorded in another situation


def prior(kind: str, decision_point: str, evidence: float = 0.0) -> tuple[float, float]:
    """Beta pseudo-counts of the kind prior for a question with `evidence` outcomes of its own. The weight
    is PRIOR_WEIGHT / (1 + evidence / PRIOR_FADE): firm while a question is untried, so that twenty untried
    questions do not out-draw one with a record of gains, and fading as the record grows, so that a
    question's own outcomes are not dragged toward its kind's mean."""
    mean = KIND_PRIOR.get(decision_point, {}).get(kind, 0.25)
    weight = PRIOR_WEIGHT / (1.0 + evidence / PRIOR_FADE)
    return mean * weight, (1 - mean) * weight


def situation_key(features: list[str] | tuple[str, ...]) -> tuple[str, str, str] | None:
    """(decision point, claim area, report state) from a situation's features; None if no point is named."""
    by_prefix: dict[str, str] = {}
    for feature in features:
        prefix, _, value = str(feature).partition(":")
        if prefix in ("point", "claim") or (prefix == "report" and value != "uneven_groups"):
            by_prefix.setdefault(prefix, value)
    if "point" not in by_prefix:
        return None
    return by_prefix["point"], by_prefix.get("claim", "none"), by_prefix.get("report", "none")


def posterior(question: Question, stats: dict[str, dict[str, Any]]) -> tuple[float, float]:
    """Beta parameters (alpha, beta) for a question from its learned and recorded outcomes, with a flat prior."""
    successes = failures = 0
    for source in (question.outcomes, stats.get(question.id, {})):
        scored = int(source.get("scored") or 0)
        wins = int(source.get("successes") or 0)
        successes += wins
        failures += max(scored - wins, 0)
    return 1.0 + successes, 1.0 + failures


def fits_the_claim(question: Question, decision_point: str, area: str | None) -> bool:
    """Whether a question's presupposed claim (`claims`) was made: only at a claimed limit, of a named area
    (`area` None: unknown, any area passes)."""
    if not question.claims:
        return True
    if decision_point != "claimed_limit" or area == "none":
        return False
    return area is None or "any" in question.claims or area in question.claims


def eligible(questions: list[Question], decision_point: str, asked: list[str], recent: int,
             area: str | None = None) -> list[Question]:
    fitting = [q for q in questions if decision_point in q.fits]
    if not fitting:
        raise BankError(f"the bank has no question that fits the decision point '{decision_point}'; "
                        "add one whose 'fits' names it.")
    fitting = [q for q in fitting if fits_the_claim(q, decision_point, area)] or \
        [q for q in fitting if not q.claims] or (fitting if decision_point == "claimed_limit" else [])
    if not fitting:  # never a question about a claim when nothing was claimed
        raise BankError(f"every question that fits the decision point '{decision_point}' presupposes a claimed "
                        "limit, and none was claimed; add one without 'claims'.")
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
SituationStats = dict[tuple[str, tuple[str, str, str] | None], dict[str, int]]


def feature_stats(data: dict[str, Any]) -> FeatureStats:
    """(bank id, situation feature) -> {scored, successes} over the recorded runs' outcomes."""
    totals: FeatureStats = {}
    for outcome in _scored_outcomes(data):
        for feature in outcome.get("features") or []:
            entry = totals.setdefault((outcome["id"], str(feature)), {"scored": 0, "successes": 0})
            entry["scored"] += 1
            entry["successes"] += bool(outcome.get("success"))
    return totals


def situation_stats(data: dict[str, Any]) -> SituationStats:
    """(bank id, situation key or None when unrecorded) -> {scored, successes} over the recorded outcomes."""
    totals: SituationStats = {}
    for outcome in _scored_outcomes(data):
        key = situation_key(outcome.get("features") or [])
        entry = totals.setdefault((outcome["id"], key), {"scored": 0, "successes": 0})
        entry["scored"] += 1
        entry["successes"] += bool(outcome.get("success"))
    return totals


def _scored_outcomes(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [outcome for run in data.get("runs", {}).values() for outcome in run.get("outcomes", [])
            if isinstance(outcome.get("gain"), int | float) and not isinstance(outcome.get("gain"), bool)]


def situational_posterior(question: Question, decision_point: str, situation: tuple[str, str, str] | None,
                          by_situation: SituationStats) -> tuple[float, float]:
    """Beta(alpha, beta) of a gain following `question` in `situation`: the kind prior, this situation's
    outcomes in full, other known situations' at POOL, unrecorded ones (and learned ones) in full."""
    wins = float(question.outcomes.get("successes") or 0)
    losses = max(float(question.outcomes.get("scored") or 0) - wins, 0.0)
    for (qid, key), counts in by_situation.items():
        if qid != question.id:
            continue
        weight = 1.0 if key is None or situation is None or key == situation else POOL
        won = counts.get("successes", 0)
        wins += weight * won
        losses += weight * max(counts.get("scored", 0) - won, 0)
    alpha, beta = prior(question.kind, decision_point, wins + losses)
    return alpha + wins, beta + losses


def rank(questions: list[Question], stats: dict[str, dict[str, Any]], decision_point: str, asked: list[str], *,
         seed: int, recent: int = DEFAULT_RECENT, features: tuple[str, ...] | list[str] = (),
         by_situation: SituationStats | None = None) -> list[tuple[float, Question]]:
    """The eligible questions with their sampled scores, best first. With `by_situation` (the recorded
    outcomes by situation) the posterior is the situational one; without, the question's overall record
    under a flat prior (`stats`, aggregated per question)."""
    if decision_point not in DECISION_POINTS:
        raise BankError(f"the decision point '{decision_point}' is unknown; use one of "
                        f"{', '.join(DECISION_POINTS)}.")
    situation = situation_key([f"point:{decision_point}", *features]) if features else None
    area = situation[1] if situation else (None if decision_point == "claimed_limit" else "none")
    pool = sorted(eligible(questions, decision_point, list(asked), recent, area), key=lambda q: q.id)
    rng = _rng(seed, decision_point, list(asked))
    scored = []
    for q in pool:
        params = situational_posterior(q, decision_point, situation, by_situation) if by_situation is not None \
            else posterior(q, stats)
        scored.append((rng.betavariate(*params), q))
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
                  features=list(features), by_situation=situation_stats(data))
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
