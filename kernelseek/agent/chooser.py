"""Situation-aware question choice (auto mode): the situation, the K questions that fit it, and who picks.

At a decision point the questioner assembles the *situation*: the decision point and its detail, the
worker's last words, the harness's last report (correct or not, its geomean, which groups are slow or
fast), and the claimed limit if there is one. From it come a few coarse *features*:

    point:<decision point>                        e.g. point:claimed_limit
    claim:<area>                                  memory, compute, launch, compiler or other (claim:none);
                                                  from the claiming clause, else the worker's words around it
    report:<state>                                incorrect, below_baseline, above_baseline or none
    report:uneven_groups                          the slowest group is below 0.8x the fastest

The contextual policy (`kernelseek.bank.policy.offer`: Thompson sampling per situation, with a prior from
the question's kind; a question that presupposes a claim only where one of its area was heard) scores
every fitting question for these features and offers the K best (`chooser_offer`, default 4). Then:

- with a chooser model — `--chooser-model NAME`, else the worker's own model when the worker is a real
  litellm model (not `scripted/...`, not an external CLI) — the model is shown the situation and the K
  questions and answers `{"choice": N, "reason": "one line"}`; a failed call or an unusable reply falls back
  to the policy, and the reason says so;
- without one (or `--chooser-model policy`), the policy asks its best-scored question.

The trace's question event records the offered ids, the choice, the chooser ("model:NAME" or
"policy:contextual-thompson"), the reason and the features, so `trace analyze` can compare choosers, and
a run records each question's features with its outcome so the policy learns per situation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

POLICY = "policy:contextual-thompson"
DEFAULT_OFFER = 4
UNEVEN = 0.8  # a report's slowest group below this fraction of its fastest: the work is uneven

CLAIM_AREAS = (  # first match wins
    ("memory", r"memory|bandwidth|bytes|dram|hbm|cache|loads?\b|global"),
    ("launch", r"launch|overhead|occupancy|small shapes?|waves?|fill the gpu|enough work"),
    ("compiler", r"compiler|registers?|spill"),
    ("compute", r"compute|math|arithmetic|tensor|flops|throughput|instructions?|serial"),
)
_GROUP = re.compile(r"^\s*group (\S+): ([0-9.]+)x", re.MULTILINE)
_GEOMEAN = re.compile(r"geomean speedup over \S+ ([0-9.]+)x")


def claim_area(sentence: str | None, context: str = "") -> str:
    """The area of a claimed limit: from the claiming clause, else from the words around it ("Every byte
    crosses the bus once; this cannot be pushed further." is a memory claim); "none" without a claim."""
    if not sentence:
        return "none"
    for text in (sentence, context):
        for area, pattern in CLAIM_AREAS:
            if re.search(pattern, text or "", re.IGNORECASE):
                return area
    return "other"


def report_facts(report: str) -> dict[str, Any]:
    """What a harness report says: correct (None: no report), the geomean, and the groups' speedups."""
    if not (report or "").strip():
        return {"correct": None, "speedup": None, "groups": {}}
    correct = "INCORRECT" not in report
    geomeans = [float(m) for m in _GEOMEAN.findall(report)]
    groups = {name: float(x) for name, x in _GROUP.findall(report)}
    return {"correct": correct, "speedup": geomeans[-1] if geomeans else None, "groups": groups}


@dataclass
class Situation:
    decision_point: str
    detail: str
    worker_words: str
    report: str
    claimed_limit: str | None
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def features(self) -> list[str]:
        features = [f"point:{self.decision_point}", f"claim:{claim_area(self.claimed_limit, self.worker_words[-600:])}"]
        correct, speedup, groups = self.facts.get("correct"), self.facts.get("speedup"), self.facts.get("groups") or {}
        if correct is None:
            features.append("report:none")
        elif not correct:
            features.append("report:incorrect")
        elif speedup is not None:
            features.append("report:below_baseline" if speedup < 1.0 else "report:above_baseline")
        if len(groups) >= 2 and min(groups.values()) < UNEVEN * max(groups.values()):
            features.append("report:uneven_groups")
        return features

    def slow_and_fast(self) -> tuple[list[str], list[str]]:
        groups = self.facts.get("groups") or {}
        slow = [f"{g} {x:.2f}x" for g, x in sorted(groups.items(), key=lambda i: i[1]) if x < 1.0]
        fast = [f"{g} {x:.2f}x" for g, x in sorted(groups.items(), key=lambda i: -i[1]) if x >= 1.0]
        return slow, fast

    def describe(self) -> str:
        """The situation in a few lines, as a chooser model is shown it."""
        slow, fast = self.slow_and_fast()
        correct = self.facts.get("correct")
        state = "no report yet" if correct is None else ("the last candidate was INCORRECT" if not correct else
                                                          f"correct, geomean {self.facts.get('speedup') or 0:.3f}x")
        lines = [f"Decision point: {self.decision_point} ({self.detail[:200]})",
                 f"The worker's last words: {self.worker_words[-600:] or '(none)'}",
                 f"The harness's last report: {state}" + (f"; slow groups: {', '.join(slow)}" if slow else "")
                 + (f"; fast groups: {', '.join(fast)}" if fast else ""),
                 f"Claimed limit: {self.claimed_limit or 'none'}"]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        slow, fast = self.slow_and_fast()
        return {"features": self.features, "claimed_limit": self.claimed_limit, "slow_groups": slow,
                "fast_groups": fast, "report_correct": self.facts.get("correct"),
                "report_speedup": self.facts.get("speedup")}


def situation_of(state: dict[str, Any], decision_point: str, detail: str) -> Situation:
    return Situation(decision_point=decision_point, detail=detail,
                     worker_words=" ".join(str(state.get("worker_words") or "").split()),
                     report=str(state.get("last_report") or ""),
                     claimed_limit=detail if decision_point == "claimed_limit" else None,
                     facts=report_facts(str(state.get("last_report") or "")))


@dataclass
class Choice:
    question: dict[str, Any]
    offered: list[dict[str, Any]]
    chooser: str
    reason: str
    cost_usd: float = 0.0
    tokens: int = 0


def chooser_model(cfg: Any) -> str | None:
    """The model that chooses: --chooser-model, else the built-in worker's real model; None: the policy."""
    named = getattr(cfg, "chooser_model", None)
    if named in ("policy", "none"):
        return None
    if named:
        return str(named)
    model = getattr(cfg, "model", None)
    if model and not str(model).startswith("scripted/") and not getattr(cfg, "worker_command", None):
        return str(model)
    return None


PROMPT = """You pick the one question to put to a coding agent that is making a GPU kernel faster. It has \
reached a decision point. The questions that move it to another layer of the program, or that dispute a \
limit it claimed, have preceded the large gains; pick the one that fits this situation best.

{situation}

Questions:
{questions}

Reply with JSON only: {{"choice": <the question's number>, "reason": "<one line: why this one, here>"}}"""


def parse_choice(content: str, offered: list[dict[str, Any]]) -> tuple[int | None, str]:
    """(index into offered, reason) from a chooser model's reply; (None, why) when it is unusable."""
    match = re.search(r"\{.*\}", content or "", re.DOTALL)
    try:
        data = json.loads(match.group(0)) if match else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return None, "the chooser's reply was not the JSON asked for"
    choice, reason = data.get("choice"), " ".join(str(data.get("reason") or "").split())[:240]
    if isinstance(choice, str):
        ids = [q["id"] for q in offered]
        if choice in ids:
            return ids.index(choice), reason
        choice = int(choice) if choice.strip().isdigit() else None
    if isinstance(choice, int) and not isinstance(choice, bool) and 1 <= choice <= len(offered):
        return choice - 1, reason or "(no reason given)"
    return None, f"the chooser named {data.get('choice')!r}, not one of the {len(offered)} questions offered"


def ask_model(model: str, situation: Situation, offered: list[dict[str, Any]], **kwargs: Any) -> tuple[int | None, str, float, int]:
    """(index or None, reason or why not, dollars, tokens): one call, no retries (the policy is the fallback)."""
    from kernelseek.models import completion, cost_of

    questions = "\n".join(f"{i}. {q['text']}" for i, q in enumerate(offered, 1))
    prompt = PROMPT.format(situation=situation.describe(), questions=questions)
    try:
        response = completion(model=model, messages=[{"role": "user", "content": prompt}], **kwargs)
    except Exception as error:  # noqa: BLE001 - any provider error: the policy chooses instead
        return None, f"the chooser model failed ({error.__class__.__name__})", 0.0, 0
    usage = getattr(response, "usage", None)
    tokens = int(getattr(usage, "total_tokens", 0) or 0)
    index, reason = parse_choice(response.choices[0].message.content or "", offered)
    return index, reason, float(cost_of(response) or 0.0), tokens


def choose(situation: Situation, cfg: Any, asked: list[str], *, seed: int, stats: Any, use_stats: bool,
           bank_dir: Any = None) -> Choice:
    """Offer the K fitting questions for the situation and pick one. Raises BankError when none fits."""
    from kernelseek.bank.policy import offer

    k = int(getattr(cfg, "chooser_offer", None) or DEFAULT_OFFER)
    offered = offer(situation.decision_point, asked, seed=seed, k=k, features=situation.features,
                    bank_dir=bank_dir, stats=stats, use_stats=use_stats)
    model = chooser_model(cfg)
    note = ""
    if model and len(offered) > 1:
        kwargs = dict(getattr(cfg, "model_kwargs", None) or {}) if model == getattr(cfg, "model", None) else {}
        index, reason, cost, tokens = ask_model(model, situation, offered, **kwargs)
        if index is not None:
            return Choice(offered[index], offered, f"model:{model}", reason, cost, tokens)
        note = f"; {reason}, so the policy chose"
        cost_tokens = (cost, tokens)
    else:
        cost_tokens = (0.0, 0)
    best = offered[0]
    reason = (f"highest sampled score ({best['score']:.3f}) of {len(offered)} offered for "
              f"{', '.join(situation.features)}{note}")
    return Choice(best, offered, POLICY, reason, *cost_tokens)
