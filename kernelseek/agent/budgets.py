"""Every limit of a run, checked in one place."""

from __future__ import annotations

from kernelseek.agent.state import State
from kernelseek.settings import Configuration


def target_met(state: State, cfg: Configuration) -> str | None:
    speedup = (state.get("best") or {}).get("speedup") or 0.0
    if cfg.target is not None and speedup >= cfg.target:
        return f"target {cfg.target:g}x met"
    start = state.get("start_speedup")
    if cfg.target_gain is not None and start and speedup >= start * cfg.target_gain:
        return f"target gain {cfg.target_gain:g}x over the starting kernel met"
    return None


def exhausted(state: State, cfg: Configuration) -> str | None:
    """Why the run must end now (the target is met, or a budget is spent), or None."""
    if state.get("end_reason"):
        return state["end_reason"]
    if met := target_met(state, cfg):
        return met
    if state.get("step", 0) >= cfg.max_steps:
        return f"step budget spent ({cfg.max_steps} worker turns)"
    if cfg.max_dollars is not None and state.get("cost_usd", 0.0) >= cfg.max_dollars:
        return f"dollar budget spent (${cfg.max_dollars:g})"
    if cfg.max_tokens is not None and state.get("tokens", 0) >= cfg.max_tokens:
        return f"token budget spent ({cfg.max_tokens} tokens)"
    if cfg.max_wall_s is not None and state.get("elapsed_s", 0.0) >= cfg.max_wall_s:
        return f"wall-time budget spent ({cfg.max_wall_s:g} s)"
    if cfg.max_evals is not None and state.get("evals", 0) >= cfg.max_evals:
        return f"evaluation budget spent ({cfg.max_evals} evaluations)"
    return None
