"""`kernelseek bank learn|list|show`: the question bank from the command line."""

from __future__ import annotations

import difflib
import functools
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.progress import Progress

from kernelseek.bank.model import BankError, aggregate_stats, default_bank_dir, load_bank, load_stats
from kernelseek.bank.outcomes import DEFAULT_K, DEFAULT_SUCCESS
from kernelseek.commands.errors import fail as errors_fail
from kernelseek.commands.output import note as side_note
from kernelseek.commands.output import print_json, print_rows
from kernelseek.trace import DECISION_POINTS, QUESTION_KINDS, TraceError

console = Console()
errors = Console(stderr=True)

BankDir = Annotated[Path | None, typer.Option("--bank-dir", help="The bank folder (default: $KERNELSEEK_BANK "
                                               "or the repository's bank/).")]


def fail(message: str) -> NoReturn:
    """`errors.fail` with the bank commands' exit status, 1."""
    errors_fail(message, 1)


def resolve_run(run: str) -> Path:
    """A run folder, a trace file, or a run id under the runs folder (kernelseek.agent.run_store)."""
    from kernelseek.agent.run_store import default_runs_dir

    path = Path(run)
    if path.exists():
        return path
    under = default_runs_dir() / run
    if under.exists():
        return under
    raise TraceError(f"{run}: no such run folder, trace file or run id under {under.parent}/; "
                     "pass a run folder or a trace.jsonl.")


def learn_command(
    runs: Annotated[list[str], typer.Argument(help="Human-mode run folders, trace files or run ids.")],
    name: Annotated[str, typer.Option(help="Learn into bank/learned-NAME.yaml.")] = "humans",
    bank_dir: BankDir = None,
    model: Annotated[str | None, typer.Option(help="A litellm model to classify and rewrite the messages "
                                              "(default: $KERNELSEEK_BANK_MODEL; none: the rules).")] = None,
    k: Annotated[int, typer.Option("-k", help="Evaluations after a message that count as what followed it.")] = DEFAULT_K,
    success: Annotated[float, typer.Option(help="A gain ratio that counts as a success.")] = DEFAULT_SUCCESS,
    similarity: Annotated[float, typer.Option(help="Texts at least this similar are merged (0-1).")] = 0.75,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be learned; write nothing.")] = False,
) -> None:
    """Mine the human messages of recorded human-mode runs into a learned bank file."""
    from kernelseek.bank.classify import configured_model
    from kernelseek.bank.learn import learn

    try:
        paths = [resolve_run(run) for run in runs]
        with Progress(console=errors, transient=True) as progress:
            task = progress.add_task("learning from sessions", total=None)
            summary = learn(paths, name=name, bank_dir=bank_dir, model=model or configured_model(), k=k,
                            success=success, threshold=similarity, dry_run=dry_run)
            progress.update(task, completed=1, total=1)
    except (BankError, TraceError) as error:
        raise fail(str(error)) from None
    except OSError as error:
        raise fail(f"{error.filename or 'a file'}: {error.strerror or error}; nothing was written.") from None
    verb = "would write" if dry_run else ("wrote" if summary.changed else "left unchanged")
    console.print(f"{summary.messages} human messages in {len(summary.sessions)} session(s); "
                  f"{summary.already} already learned, {len(summary.added)} new entries, "
                  f"{len(summary.merged)} merged into near-duplicates (of any bank file); {verb} {summary.bank_path}.")
    if summary.skipped_runs:
        console.print(f"skipped (not human-mode runs): {', '.join(summary.skipped_runs)}")
    if summary.rewritten:
        console.print(f"operator or vendor words rewritten by the term map (bank/terms.yaml): {', '.join(summary.rewritten)}")
    if summary.flagged:
        console.print(f"flagged as operator-specific (review or rewrite them): {', '.join(summary.flagged)}")
    for note in summary.notes:
        console.print(f"note: {note}")


BankStats = Annotated[Path | None, typer.Option("--bank-stats", help="The outcome statistics of auto-mode runs "
                                                "(default: $XDG_DATA_HOME or ~/.local/share, kernelseek/stats.json).")]


def _load(bank_dir: Path | None, stats: Path | None = None):
    questions = load_bank(bank_dir)
    recorded = aggregate_stats(load_stats(stats))
    return questions, recorded


def list_command(
    kind: Annotated[str | None, typer.Option(help=f"Only this kind ({', '.join(QUESTION_KINDS)}).")] = None,
    fits: Annotated[str | None, typer.Option(help=f"Only questions for this decision point "
                                             f"({', '.join(DECISION_POINTS)}).")] = None,
    bank_dir: BankDir = None,
    bank_stats: BankStats = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the questions as JSON, with their statistics.")] = False,
) -> None:
    """Print the bank with its statistics: learned from sessions, and recorded from auto-mode runs.

    On a terminal a table; in a pipe one tab-separated line per question (the whole text) after a header
    line; --json for scripts."""
    try:
        if kind is not None and kind not in QUESTION_KINDS:
            raise BankError(f"the kind '{kind}' is unknown; use one of {', '.join(QUESTION_KINDS)}.")
        if fits is not None and fits not in DECISION_POINTS:
            raise BankError(f"the decision point '{fits}' is unknown; use one of {', '.join(DECISION_POINTS)}.")
        questions, stats = _load(bank_dir, bank_stats)
    except BankError as error:
        raise fail(str(error)) from None
    rows, records = [], []
    for q in questions:
        if (kind and q.kind != kind) or (fits and fits not in q.fits):
            continue
        run = stats.get(q.id, {})
        asked = int(q.outcomes.get("asked") or 0) + int(run.get("asked") or 0)
        wins = int(q.outcomes.get("successes") or 0) + int(run.get("successes") or 0)
        gains = [g for g in (q.outcomes.get("mean_gain"), run.get("mean_gain")) if g is not None]
        mean = sum(gains) / len(gains) if gains else None
        text = q.text + (f"  [flagged: {', '.join(q.flags)}]" if q.flags else "")
        rows.append((q.id, q.kind, ",".join(q.fits), asked, wins, "-" if mean is None else f"{mean:.3f}", text))
        records.append({"id": q.id, "kind": q.kind, "fits": list(q.fits), "text": q.text, "flags": list(q.flags),
                        "source": q.source, "asked": asked, "wins": wins, "mean_gain": mean,
                        "learned_outcomes": dict(q.outcomes), "auto_outcomes": dict(run)})
    if as_json:
        print_json(records)
        return
    print_rows(console, f"question bank: {bank_dir or default_bank_dir()}",
               ("id", "kind", "fits", "asked", "wins", "gain", "text"), rows, wide=("text",),
               right=("asked", "wins", "gain"))
    side_note(console, f"{len(rows)} of {len(questions)} questions; 'asked' and 'wins' add the human sessions they were "
         "learned from to the auto-mode runs recorded in your stats.json; 'gain' is the mean gain after.")


def show_command(
    question_id: Annotated[str, typer.Argument(metavar="ID", help="A question id (see `kernelseek bank list`).")],
    bank_dir: BankDir = None,
    bank_stats: BankStats = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the question as JSON.")] = False,
) -> None:
    """Print one question: its text, kind, decision points, provenance and outcome statistics."""
    try:
        questions, stats = _load(bank_dir, bank_stats)
    except BankError as error:
        raise fail(str(error)) from None
    by_id = {q.id: q for q in questions}
    q = by_id.get(question_id)
    if q is None:
        close = difflib.get_close_matches(question_id, list(by_id), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; see `kernelseek bank list`."
        raise fail(f"no question has the id '{question_id}'{hint}")
    run = stats.get(q.id)
    if as_json:
        print_json({"id": q.id, "source": q.source, "text": q.text, "kind": q.kind, "fits": list(q.fits),
                    "flags": list(q.flags), "learned_outcomes": dict(q.outcomes), "auto_outcomes": dict(run or {}),
                    "provenance": list(q.provenance)})
        return
    say = functools.partial(console.print, highlight=False, markup=False, soft_wrap=True)  # bank text is not markup
    say(f"{q.id} ({q.source})", style="bold")
    say(f"  text: {q.text}")
    say(f"  kind: {q.kind}")
    say(f"  fits: {', '.join(q.fits)}")
    if q.flags:
        say(f"  flagged operator-specific words: {', '.join(q.flags)}")
    if q.outcomes:
        say("  learned outcomes: " + ", ".join(f"{k}={v}" for k, v in q.outcomes.items()))
    if run:
        say("  auto-mode outcomes: " + ", ".join(f"{k}={v}" for k, v in run.items()))
    say("  provenance:")
    for p in q.provenance:
        if p.get("source") == "session":
            gain = p.get("gain")
            say(f"    - session {p.get('session')}, message {p.get('message')} (step {p.get('step')}, "
                f"{p.get('decision_point')}): \"{p.get('original')}\"; best before {p.get('before')}, "
                f"after {p.get('after')}, gain {gain}")
            if p.get("worker_words"):
                say(f"      the worker had said: \"{p['worker_words']}\"")
        else:
            say(f"    - {p.get('source')}")


def register(app: typer.Typer, *, bank_app: typer.Typer, trace_app: typer.Typer) -> None:
    bank_app.command("learn")(learn_command)
    bank_app.command("list")(list_command)
    bank_app.command("show")(show_command)


__all__ = ["fail", "register", "resolve_run"]

