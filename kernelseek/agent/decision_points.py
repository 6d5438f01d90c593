"""Decision points: the moments the questioner asks one question.

    done           the worker ended its turn without asking for anything (it thinks it is finished)
    claimed_limit  the worker said a limit stops it ("bandwidth-bound", "at peak", "impossible", ...)
    plateau        no gain over N evaluations
    failing        M incorrect candidates in a row

The claimed-limit detector is rule-based (the patterns below); a model-based one can be added with
`limit_detector_model` in the configuration, and is asked only when the rules found nothing.
"""

from __future__ import annotations

import re

from kernelseek.agent.configuration import Configuration
from kernelseek.agent.state import State

LIMIT_PATTERNS = [
    r"\b(memory|bandwidth|compute|latency|dram|hbm)[- ]bound\b",
    r"\b(bound|limited) by (the )?(memory|bandwidth|dram|hbm|hardware|compute|latency)\b",
    r"\b(at|near|close to|reach(ed|es)?|hit(s|ting)?) (the )?(hardware'?s? )?(peak|roofline|ceiling|"
    r"theoretical (max(imum)?|limit|peak)|speed of light)\b",
    r"\b(theoretical|hardware) (limit|maximum|peak|ceiling)\b",
    r"\bimpossible\b",
    r"\b(can ?not|can't|cannot|won't|unable to) (be )?(made |go |get )?(any )?(faster|further|improved?|beat)\b",
    r"\bno (further |more )?(room|headroom)\b",
    r"\b(already )?(optimal|as fast as (it|this) (can|gets|will))\b",
    r"\b(this|that) is the (best|limit|maximum)\b",
    r"\bdiminishing returns\b",
]
_LIMIT = re.compile("|".join(f"(?:{p})" for p in LIMIT_PATTERNS), re.IGNORECASE)


def claimed_limit(text: str, model: str | None = None) -> str | None:
    """The sentence in which the worker claims a limit, or None."""
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text or ""):
        if _LIMIT.search(sentence):
            return sentence.strip()[:300]
    if model and text.strip():
        return _ask_model(text, model)
    return None


def _ask_model(text: str, model: str) -> str | None:
    from kernelseek.models import completion

    prompt = ("Does the following message from a programmer claim that the code cannot be made faster because "
              "of some limit (hardware, bandwidth, peak, impossibility)? Answer YES or NO on the first line, then "
              "quote the sentence.\n\n" + text[-4000:])
    reply = completion(model=model, messages=[{"role": "user", "content": prompt}])
    answer = (reply.choices[0].message.content or "").strip()
    return answer.split("\n", 1)[-1].strip()[:300] or "limit claimed" if answer.upper().startswith("YES") else None


def detect(state: State, cfg: Configuration, *, after_eval: bool) -> tuple[str, str] | None:
    """The decision point reached now, as (kind, detail), or None. `after_eval`: the harness just judged."""
    if not after_eval and state.get("worker_stopped"):
        sentence = claimed_limit(state.get("words_since_question", ""), cfg.limit_detector_model)
        if sentence:
            return "claimed_limit", sentence
        return "done", "the worker ended its turn: " + (state.get("worker_words") or "")[:200]
    if not after_eval:
        return None
    if state.get("incorrect_streak", 0) >= cfg.failing_evals:
        return "failing", f"{state['incorrect_streak']} incorrect candidates in a row"
    if state.get("evals_since_gain", 0) >= cfg.plateau_evals:
        return "plateau", f"no gain over the last {state['evals_since_gain']} evaluations"
    sentence = claimed_limit(state.get("words_since_question", ""))
    if sentence:
        return "claimed_limit", sentence
    return None
