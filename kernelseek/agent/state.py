"""The graph's state: plain JSON types only, so a checkpoint is readable and portable.

No reducers: every node returns the keys it changes and they replace the old values. The TypedDicts come
from typing_extensions, which pydantic (LangGraph Studio's schemas) needs on Python 3.11."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict


class StudioInput(TypedDict, total=False):
    """What a graph takes as input (LangGraph Studio's input form): nothing to start a new run from the
    settings, or the folder of an existing run to drive."""

    run_dir: str  # an existing run folder; empty: a new run is made from the settings (the context)


class State(TypedDict, total=False):
    run_dir: str  # runs/<id>/: configuration, trace, checkpoints, workspace, candidates, best
    step: int  # worker turns so far; trace events are keyed by it
    messages: list[dict[str, Any]]  # the worker's conversation (OpenAI-style message dicts)
    evaluate: bool  # the worker asked for a judgement: the harness node runs next
    evaluate_call: str | None  # the `evaluate` tool call the report answers (None: an external CLI's turn)
    worker_stopped: bool  # the worker ended its turn without asking for anything
    worker_words: str  # the worker's last words (its last non-empty text)
    words_since_question: str  # what it said since the last question (the claimed-limit detector reads it)
    n_candidates: int  # candidates snapshotted so far; candidate 0 is the starting kernel
    last_candidate: int | None  # the candidate the workspace holds an edit of (lineage parent)
    last_sha: str | None  # sha256 of the last candidate judged
    best: dict[str, Any] | None  # {candidate, speedup, quick_speedup, judgement, path}
    start_speedup: float | None  # the starting kernel's speedup (full judgement), if it was judged
    last_report: str  # the harness's last report, as the worker saw it
    evals: int
    evals_since_gain: int
    incorrect_streak: int
    cost_usd: float
    tokens: int
    unpriced_calls: int  # model calls litellm had no price for (counted by tokens only)
    elapsed_s: float  # time spent in nodes, summed across resumes
    asked: list[str]  # questions asked so far (bank ids, or the text of human questions)
    last_question: str
    decision: dict[str, str] | None  # the decision point being handled
    pending_decision: dict[str, str] | None  # {kind, detail}: detected once by the worker or harness node, read
    #                                         by the router and the questioner, cleared by the questioner
    steps_since_eval: int  # worker steps since the last evaluation (the no_evaluation decision point)
    last_event: str  # one line for the live view
    end_reason: str | None
    bank_note: str | None  # why the bank's statistics could not be updated, if they could not
    inbox_seen: int  # lines of the run's inbox.jsonl already delivered to the worker (`kernelseek ask`)
    cli_session: str | None  # the external CLI's own session id, once its JSON output named one


def initial_state(run_dir: str) -> State:
    return State(run_dir=run_dir, step=0, messages=[], evaluate=False, evaluate_call=None, worker_stopped=False, worker_words="",
                 words_since_question="", n_candidates=1, last_candidate=0, last_sha=None, best=None, start_speedup=None,
                 last_report="", evals=0, evals_since_gain=0, incorrect_streak=0, cost_usd=0.0, tokens=0,
                 unpriced_calls=0, elapsed_s=0.0, asked=[], last_question="", decision=None, pending_decision=None,
                 steps_since_eval=0,
                 last_event="started", end_reason=None, bank_note=None, inbox_seen=0, cli_session=None)
