"""`kernelseek compare`: two judgements of one task, scenario by scenario, each ratio against its band."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from kernelseek.commands.errors import fail
from kernelseek.commands.output import note, print_json, print_rows
from kernelseek.harness.compare import (
    BROKE,
    FASTER,
    FIXED,
    SLOWER,
    UNTIMED,
    WITHIN,
    CompareError,
    Comparison,
    compare,
    load_judgement,
)

console = Console()


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}x"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _counts(result: Comparison) -> str:
    verdicts = (FASTER, SLOWER, WITHIN, BROKE, FIXED, UNTIMED)
    return ", ".join(f"{result.count(v)} {v}" for v in verdicts if result.count(v)) or "no scenario in common"


def _print_people(result: Comparison, show_all: bool) -> None:
    title = f"{result.task} · {result.arch} · speedup over {result.baseline}: {result.before} -> {result.after}"
    groups = [[name, g["n"], _x(g["before"]), _x(g["after"]), _ratio(g["ratio"]), f"{g['higher']}/{g['timed']}"]
              for name, g in result.groups.items()]
    for label, part, ratio in (("all (suite)", False, result.suite_ratio), ("all (hold-out)", True, result.holdout_ratio)):
        members = [c for c in result.changes if c.holdout == part]
        if members:
            timed = [c for c in members if c.ratio]
            groups.append([label, len(members), "", "", _ratio(ratio), f"{sum(c.ratio > 1 for c in timed)}/{len(timed)}"])
    print_rows(console, title, ("group", "scenarios", "before", "after", "after/before", "higher"), groups,
               right=("scenarios", "before", "after", "after/before", "higher"))
    shown = [c for c in result.changes if show_all or c.verdict not in (WITHIN, UNTIMED)]
    shown.sort(key=lambda c: (c.ratio is not None, c.ratio or 0.0))
    if shown:
        rows = [[c.scenario, _x(c.before), _x(c.after), _ratio(c.ratio), f"±{c.band:.3f}" if c.band else "-",
                 c.verdict] for c in shown]
        print_rows(console, "scenarios" + ("" if show_all else " beyond their band (--all: every one)"),
                   ("scenario", "before", "after", "after/before", "band", "verdict"), rows,
                   right=("before", "after", "after/before", "band"))


def _print_pipe(result: Comparison) -> None:
    rows = [[c.scenario, c.group, "holdout" if c.holdout else "suite", _opt(c.before), _opt(c.after), _opt(c.ratio),
             _opt(c.band), c.verdict] for c in result.changes]
    note(console, f"{result.task} · {result.arch} · {result.before} -> {result.after}: suite geomean ratio "
                  f"{_ratio(result.suite_ratio)}, hold-out {_ratio(result.holdout_ratio)}; {_counts(result)}")
    print_rows(console, "", ("scenario", "group", "part", "before", "after", "ratio", "band", "verdict"), rows,
               titled=False)


def _opt(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def register(app: typer.Typer, **_: typer.Typer) -> None:
    @app.command("compare")
    def compare_command(
        before: Path = typer.Argument(..., help="The first judgement (a JSON `kernelseek eval --out` wrote)."),
        after: Path = typer.Argument(..., help="The second judgement, of the same task and arch."),
        show_all: bool = typer.Option(False, "--all", help="List every scenario, not only the ones beyond "
                                      "their band."),
        as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
    ) -> None:
        """Compare two judgements of one task: per scenario, is AFTER faster, slower, or within the band?

        The measure is the ratio of the two speedups over the task's headline baseline
        (AFTER / BEFORE), each timed beside its own baseline, so two calls or two machines of
        one kind can be compared. A ratio counts as a change only outside its band, the sum of
        the four recorded spreads ((p90 - p10) / median of each implementation's trials). The
        band is conservative, so small real changes show in the groups instead: the geomean
        ratio, and how many scenarios moved up ("higher": 30/36 is a pattern, 18/36 is not).
        Suite and hold-out scenarios are matched by name (a hold-out only with the same seed);
        scenarios only one judgement has are counted, not compared. In a pipe: one
        tab-separated line per scenario (every one), the summary on stderr. Exit status 1 when
        a scenario correct in BEFORE is incorrect in AFTER, 2 on bad input. Examples:

            kernelseek compare evals/results/v20-sm90-full-holdout24-s2.json \\
                evals/results/v24-sm90-full-holdout24-s2.json
            kernelseek compare old.json new.json | sort -t$'\\t' -k6 -g | head
        """
        try:
            result = compare(load_judgement(before), load_judgement(after), str(before), str(after))
        except CompareError as error:
            fail(str(error))
        if as_json:
            print_json(result.to_dict())
        elif console.is_terminal:
            _print_people(result, show_all)
            console.print(f"{_counts(result)}; suite geomean ratio {_ratio(result.suite_ratio)}"
                          + (f", hold-out {_ratio(result.holdout_ratio)}" if result.holdout_ratio else ""),
                          markup=False, highlight=False)
        else:
            _print_pipe(result)
        for line in result.notes + _unmatched(result):
            note(console, line)
        raise typer.Exit(1 if result.count(BROKE) else 0)


def _unmatched(result: Comparison) -> list[str]:
    lines = []
    for names, where in ((result.only_before, result.before), (result.only_after, result.after)):
        if names:
            lines.append(f"{len(names)} scenarios only in {where} (not compared), e.g. {names[0]}")
    return lines
