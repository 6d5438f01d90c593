"""Decision points: the moments the questioner asks one question.

    done           the worker ended its turn without asking for anything (it thinks it is finished)
    claimed_limit  the worker said a limit stops it ("bandwidth-bound", "at peak", "impossible", ...)
    plateau        no gain over N evaluations
    failing        M incorrect candidates in a row
    no_evaluation  N worker steps without an evaluation (a worker that keeps editing without judging)

`detect` is called once per worker step and once per judgement, by the node itself (`graph.py`); the
router and the questioner read what it found from the state (`pending_decision`).

The claimed-limit detector is `kernelseek.agent.claims` (rules, measured on a labelled corpus; a model
as well when `limit_detector_model` is configured).
"""

from __future__ import annotations

from kernelseek.agent.claims import claimed_limit
from kernelseek.agent.state import State
from kernelseek.settings import Configuration

__all__ = ["claimed_limit", "detect"]


def detect(state: State, cfg: Configuration, *, after_eval: bool) -> tuple[str, str] | None:
    """The decision point reached now, as (kind, detail), or None. `after_eval`: the harness just judged."""
    if not after_eval and state.get("worker_stopped"):
        sentence = claimed_limit(state.get("words_since_question", ""), cfg.limit_detector_model)
        if sentence:
            return "claimed_limit", sentence
        return "done", "the worker ended its turn: " + (state.get("worker_words") or "")[:200]
    if not after_eval:
        steps = state.get("steps_since_eval", 0)
        if steps >= cfg.no_eval_steps:
            return "no_evaluation", f"{steps} worker steps without an evaluation"
        return None
    if state.get("incorrect_streak", 0) >= cfg.failing_evals:
        return "failing", f"{state['incorrect_streak']} incorrect candidates in a row"
    if state.get("evals_since_gain", 0) >= cfg.plateau_evals:
        return "plateau", f"no gain over the last {state['evals_since_gain']} evaluations"
    sentence = claimed_limit(state.get("words_since_question", ""))
    if sentence:
        return "claimed_limit", sentence
    return None
