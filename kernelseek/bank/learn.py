"""`kernelseek bank learn RUNS...`: mine the human messages of human-mode runs into a bank file.

For each run (a run folder or its trace.jsonl), in the order given:

1. extract every `human_message` event that was put to the worker as a question (a `question` event
   with source "human" at its step; traces without question events keep every message) with its
   decision point and context (runs whose `run_start` says a mode other than "human" are skipped;
   messages sent with `kernelseek ask`, at decision point "interjection", are not questions and are
   skipped; a text is cut at MAX_MESSAGE_CHARS);
2. skip a message already learned (its session — the run's UUID, so a copied or renamed run folder is
   the same session — and event key are in some entry's provenance), so re-learning the same sessions
   adds nothing and leaves the file byte-for-byte unchanged;
3. classify it (`classify.py`: a model through litellm when one is configured, the documented rules
   otherwise), rewrite the operator- and vendor-specific words the term map knows (`bank/terms.yaml`:
   "the SASS" -> "the compiled instructions"; a model, when configured, rewrites first) and flag the
   ones left;
4. score it by what followed (`outcomes.py`: best speedup before it, best within the next K
   evaluations, their ratio);
5. merge it into the most similar entry of *any* bank file of the folder — the seed, other learned
   files, this one — when the two texts are near-duplicates (similarity >= the threshold: the larger of
   the character-level ratio and the word-set overlap of their normalized texts, for the message's
   words or its rewrite), combining provenance, decision points and outcomes; an entry of another file
   is not rewritten: the merge is recorded in this file's `merged` section (`model.py`) and applied
   when the bank loads. Otherwise add a new entry whose id is derived from its text.

The bank file (`bank/learned-<name>.yaml`) is read and validated first — a malformed one stops the
command with one sentence and is left untouched — and written back atomically only if it changed.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelseek.bank.classify import classify
from kernelseek.bank.model import (
    BankError,
    BankFile,
    Question,
    load_bank_file,
    load_bank_files,
    merge_into,
    outcomes_of,
    questions_of,
    write_bank_file,
)
from kernelseek.bank.outcomes import DEFAULT_K, DEFAULT_SUCCESS, candidates, next_seq, score_question
from kernelseek.bank.terms import load_terms
from kernelseek.trace import INTERJECTION, MAX_MESSAGE_CHARS, read_trace, trace_path

DEFAULT_SIMILARITY = 0.75
STOPWORDS = frozenset("""a an the is it its it's this that these those you your we our i me my to of in on
for and or but at by be are was were do does did have has had what which how why who so if then than
with as from not no yes can could would should will just really there here all any""".split())


@dataclass
class Message:
    session: str
    run: str  # the run's folder name when it was learned (the session is its UUID)
    key: str
    seq: int
    step: int
    text: str
    decision_point: str
    context: dict[str, Any]
    before: float | None
    after: float | None
    gain: float | None
    success: bool


@dataclass
class LearnSummary:
    bank_path: Path
    sessions: list[str] = field(default_factory=list)
    skipped_runs: list[str] = field(default_factory=list)
    messages: int = 0
    already: int = 0
    added: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    flagged: list[str] = field(default_factory=list)
    rewritten: list[str] = field(default_factory=list)  # new entries whose words the term map rewrote
    notes: list[str] = field(default_factory=list)
    changed: bool = False


def normalize(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower().replace("'", ""))
    return " ".join(w for w in words if w not in STOPWORDS)


def similarity(a: str, b: str) -> float:
    na, nb = normalize(a), normalize(b)
    if not na or not nb:
        return 1.0 if na == nb else 0.0
    ratio = difflib.SequenceMatcher(None, na, nb).ratio()
    sa, sb = set(na.split()), set(nb.split())
    jaccard = len(sa & sb) / len(sa | sb)
    return max(ratio, jaccard)


def run_id_of(path: Path, events: list[dict]) -> str:
    """The session's identity: the run's UUID (so a copied or renamed run folder is the same session and
    is not learned twice); a run made before UUIDs falls back to its recorded id or folder name."""
    from kernelseek.bank.policy import run_key

    return run_key(path.parent, events)


def extract(run: str | Path, *, k: int = DEFAULT_K, success: float = DEFAULT_SUCCESS) -> tuple[str, list[Message] | None]:
    """(session id, its human messages scored), or (id, None) when the run is not a human-mode run."""
    path = trace_path(run)
    events = read_trace(path)
    session = run_id_of(path, events)
    modes = [e.get("mode") for e in events if e["type"] == "run_start"]
    if modes and modes[0] != "human":
        return session, None
    cands = candidates(events)
    asks = [e["seq"] for e in events if e["type"] == "human_message"]
    # a message that was put to the worker has a human question event at its step with its text; one
    # without (the person typed "stop") is not a question. Traces without question events keep all.
    asked = {(e["step"], " ".join(str(e["text"]).split())) for e in events
             if e["type"] == "question" and e.get("source") == "human"}
    has_questions = any(e["type"] == "question" for e in events)
    messages = []
    for event in events:
        if event["type"] != "human_message":
            continue
        text = " ".join(str(event["text"]).split())
        if not text or (has_questions and (event["step"], text) not in asked):
            continue
        if event["decision_point"] == INTERJECTION:  # said at no decision point: not a question to reuse
            continue
        text = text[:MAX_MESSAGE_CHARS]
        scored = score_question(cands, event["seq"], k=k, success=success, until=next_seq(asks, event["seq"]))
        context = event["context"] if isinstance(event["context"], dict) else {}
        messages.append(Message(session=session, run=path.parent.name, key=str(event["key"]), seq=event["seq"], step=event["step"],
                                text=text, decision_point=str(event["decision_point"]), context=context,
                                before=scored.before, after=scored.after, gain=scored.gain,
                                success=scored.success))
    return session, messages


def learned_keys(questions: list[Question]) -> set[tuple[str, str]]:
    return {(str(p.get("session")), str(p.get("message")))
            for q in questions for p in q.provenance if p.get("source") == "session"}


def entry_id(name: str, text: str, taken: set[str]) -> str:
    digest = hashlib.sha1(normalize(text).encode()).hexdigest()
    base = f"{name}-{digest[:8]}"
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}-{n}", n + 1
    return candidate


def learned_bank_path(name: str, bank_dir: str | Path | None = None) -> Path:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_\-]*", name):
        raise BankError(f"the bank name '{name}' is not a word of letters, digits, '-' or '_'; pick another.")
    if bank_dir is None:
        from kernelseek.project import ProjectError, writable_bank_dir

        try:
            bank_dir = writable_bank_dir()
        except ProjectError as error:
            raise BankError(str(error)) from None
    return Path(bank_dir) / f"learned-{name}.yaml"


def learn(runs: list[str | Path], *, name: str = "humans", bank_dir: str | Path | None = None,
          model: str | None = None, k: int = DEFAULT_K, success: float = DEFAULT_SUCCESS,
          threshold: float = DEFAULT_SIMILARITY, dry_run: bool = False,
          **completion_kwargs: Any) -> LearnSummary:
    path = learned_bank_path(name, bank_dir)
    folder = path.parent
    others = [b for b in load_bank_files(folder) if b.path != path] if folder.is_dir() else []
    if path.exists():
        bank = load_bank_file(path)  # a malformed file stops here, untouched
    else:
        bank = BankFile(path=path, name=f"learned-{name}",
                        description="Questions learned from recorded human-mode sessions by "
                                    "`kernelseek bank learn`; review before relying on them.",
                        questions=[])
    everything = questions_of([*others, bank])  # also checks that the files agree (ids, merges)
    terms = load_terms(folder)
    summary = LearnSummary(bank_path=path)
    # read every trace first: a corrupted one stops the command before anything is written
    extracted = [extract(run, k=k, success=success) for run in runs]
    seen = learned_keys(everything)
    taken = {q.id for q in everything}
    own = {q.id: q for q in bank.questions}
    elsewhere = [q for q in everything if q.id not in own]  # seed and other learned files: merged, never rewritten
    for session, messages in extracted:
        if messages is None:
            summary.skipped_runs.append(session)
            continue
        summary.sessions.append(session)
        for message in messages:
            summary.messages += 1
            if (message.session, message.key) in seen:
                summary.already += 1
                continue
            seen.add((message.session, message.key))
            result = classify(message.text, model=model, terms=terms, **completion_kwargs)
            if result.note and result.note not in summary.notes:
                summary.notes.append(result.note)
            provenance = {"source": "session", "session": message.session, "run": message.run, "message": message.key,
                          "seq": message.seq, "step": message.step, "decision_point": message.decision_point,
                          "original": message.text, "method": result.method,
                          **({"rewrites": result.rewrites} if result.rewrites else {}),
                          "worker_words": _cap(message.context.get("worker_words")),
                          "before": _r(message.before), "after": _r(message.after), "gain": _r(message.gain),
                          "success": message.success}
            best, score = None, 0.0
            for question in [*bank.questions, *elsewhere]:  # this file's entries win a tie
                value = max(similarity(result.text, question.text), similarity(message.text, question.text))
                if value > score:
                    best, score = question, value
            if best is not None and score >= threshold:
                if best.id in own:
                    merge_into(best, [message.decision_point], [provenance])
                    for flag in result.flags:
                        if flag not in best.flags:
                            best.flags.append(flag)
                else:  # an entry of another file: recorded here, attached to it when the bank loads
                    entry = bank.merged.setdefault(best.id, {"fits": [], "provenance": []})
                    if message.decision_point not in best.fits and message.decision_point not in entry["fits"]:
                        entry["fits"].append(message.decision_point)
                    entry["provenance"].append(provenance)
                    merge_into(best, [message.decision_point], [provenance])  # later messages see it too
                summary.merged.append(best.id)
                continue
            qid = entry_id(name, result.text, taken)
            taken.add(qid)
            question = Question(id=qid, text=result.text, kind=result.kind, fits=[message.decision_point],
                                provenance=[provenance], flags=list(result.flags), source=path.name)
            question.outcomes = outcomes_of(question.provenance)
            bank.questions.append(question)
            own[qid] = question
            summary.added.append(qid)
            if result.flags:
                summary.flagged.append(qid)
            if result.rewrites:
                summary.rewritten.append(qid)
    summary.changed = bool(summary.added or summary.merged)
    if summary.changed and not dry_run:
        write_bank_file(bank)
    return summary


def _cap(text: Any, limit: int = 240) -> str | None:
    if not text:
        return None
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
