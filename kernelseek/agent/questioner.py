"""The questioner node: at a decision point, ask the worker exactly one short question.

human: `interrupt()` with the decision point, the best so far, the last harness report and the worker's
       last words; the person's answer comes back through `Command(resume=text)`. "/stop" ends the run;
       an empty answer lets the worker continue without a question; a question longer than
       MAX_MESSAGE_CHARS (500) is cut there.
auto:  the situation (decision point, the worker's words, the last report, the claimed limit) is assembled,
       the contextual policy offers the K questions that fit it best, and a chooser model picks one and
       says why (or the policy does, without one): `kernelseek.agent.chooser`. The question event records
       the offered ids, the chooser, the reason and the situation's features.
none:  no question (the no-question baseline): the worker is only told to continue.
"""

from __future__ import annotations

from typing import Any

from langgraph.types import interrupt

from kernelseek.agent import prompts, replay, snapshots
from kernelseek.agent.decision_points import detect
from kernelseek.agent.inbox import cap
from kernelseek.agent.run_store import Run
from kernelseek.agent.state import State

STOP_WORDS = ("/stop", "/quit", "/end")


def ask(state: State, run: Run, *, after_eval: bool, mode: str | None = None) -> dict[str, Any]:
    cfg, step = run.config, state.get("step", 0)
    mode = mode or cfg.mode
    # a node replayed after a crash uses what it recorded the first time (a model or the bank could differ)
    decided = _recorded(run, f"{step}:questioner:decision") or state.get("pending_decision")
    kind, detail = (decided["kind"], decided["detail"]) if decided else \
        detect(state, cfg, after_eval=after_eval) or ("done", "the worker ended its turn")  # a checkpoint from before
    worker_words = (state.get("worker_words") or "")[-2000:]
    snapshots.save(run.dir, run.workspace, step)  # what a fork from this decision point starts from
    run.trace.write("decision_point", step=step, key=f"{step}:questioner:decision", kind=kind, detail=detail,
                    worker_words=worker_words)
    best = prompts.describe_best(state.get("best"))
    question, bank_id, question_kind, source, note = "", None, None, None, ""
    chosen: dict[str, Any] = {}  # what the trace records of an auto-mode choice
    spent: dict[str, Any] = {}  # the chooser model's cost, counted against the run's budgets

    if mode == "human":
        context = {"best_speedup": (state.get("best") or {}).get("speedup"), "best": best,
                   "last_report": state.get("last_report", ""), "worker_words": worker_words}
        heard = _recorded(run, f"{step}:questioner:human")  # typed before a crash: not asked twice
        answer = heard["text"] if heard else interrupt(
            {"run_id": run.id, "step": step, "decision_point": kind, "detail": detail, **context})
        typed = str(answer or "").strip()
        text, cut = cap(typed)  # a question is short: a longer text is cut (the prompt warned the person)
        run.trace.write("human_message", step=step, key=f"{step}:questioner:human", text=text,
                        decision_point=kind, context=context, **({"truncated": len(typed)} if cut else {}))
        if text.lower() in STOP_WORDS:
            return {"end_reason": "stopped by the person at the prompt", "decision": {"kind": kind, "detail": detail},
                    "pending_decision": None,
                    "last_event": f"step {step}: {kind} — the person stopped the run"}
        question, source = text, "human"
    elif mode == "auto":
        from kernelseek.agent.chooser import choose, situation_of
        from kernelseek.bank import BankError
        from kernelseek.bank.policy import run_stats_file

        asked = _recorded(run, f"{step}:questioner:question")  # chosen before a crash: not chosen again
        try:
            if asked:
                question, bank_id, question_kind = asked["text"], asked["bank_id"], asked["question_kind"]
            else:
                situation = situation_of(state, kind, detail)
                choice = choose(situation, cfg, list(state.get("asked") or []), seed=cfg.seed * 100_003 + step,
                                stats=run_stats_file(cfg), use_stats=run_stats_file(cfg) is not None)
                question, bank_id, question_kind = choice.question["text"], choice.question["id"], choice.question["kind"]
                chosen = {"offered": [q["id"] for q in choice.offered], "chooser": choice.chooser,
                          "reason": choice.reason, "features": situation.features, "situation": situation.to_dict()}
                if choice.cost_usd or choice.tokens:
                    spent = {"cost_usd": state.get("cost_usd", 0.0) + choice.cost_usd,
                             "tokens": state.get("tokens", 0) + choice.tokens}
            source = "bank"
        except BankError as error:  # no question fits (or the bank broke mid-run): the worker is only nudged
            note = f"the bank gave no question ({error})"

    if question:
        run.trace.write("question", step=step, key=f"{step}:questioner:question", text=question, source=source,
                        bank_id=bank_id, question_kind=question_kind, decision_point=kind,
                        **({"chooser": "human"} if source == "human" else chosen))
    return {**spent, **question_update(state, cfg, kind, detail, question, bank_id, note)}


def question_update(state: State, cfg, kind: str, detail: str, question: str,  # noqa: ANN001
                    bank_id: str | None, note: str = "") -> dict[str, Any]:
    """The questioner's update: `question` put to the worker (or, when empty, the nudge to continue).
    `kernelseek fork` writes it into a past checkpoint as this node's update, with another question."""
    step = state.get("step", 0)
    best = prompts.describe_best(state.get("best"))
    if question:
        message = prompts.QUESTION.format(question=question)
    else:
        message = prompts.NUDGE.format(best=best, target=prompts.describe_target(cfg))
    messages = [*(state.get("messages") or []), {"role": "user", "content": message}]
    return {
        "messages": messages, "decision": {"kind": kind, "detail": detail}, "worker_stopped": False,
        "pending_decision": None, "steps_since_eval": 0,
        "words_since_question": "", "evals_since_gain": 0, "incorrect_streak": 0,
        "asked": [*(state.get("asked") or []), bank_id or question] if question else list(state.get("asked") or []),
        "last_question": question or state.get("last_question", ""),
        "last_event": f"step {step}: {kind} — " + (f"asked: {question}" if question else note or "no question"),
    }


def _recorded(run: Run, key: str) -> dict | None:
    return replay.recorded(run.trace, key)
