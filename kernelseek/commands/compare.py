"""`kernelseek compare`: judgements of one task against a first one, scenario by scenario, each ratio against its
band; several at once make one table with a column each."""

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
    summarize,
)

console = Console()


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}x"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _counts(result: Comparison) -> str:
    verdicts = (FASTER, SLOWER, WITHIN, BROKE, FIXED, UNTIMED)
    return ", ".join(f"{result.count(v)} {v}" for v in verdicts if result.count(v)) or "no scenario in common"


def _part_rows(result: Comparison) -> list[tuple[str, float | None, str]]:
    """(label, geomean ratio, higher/timed) for the suite and the hold-out, where the comparison has them."""
    rows = []
    for label, part in (("all (suite)", False), ("all (hold-out)", True)):
        members = [c for c in result.changes if c.holdout == part]
        if members:
            summary = summarize(members)
            rows.append((label, summary["ratio"], f"{summary['higher']}/{summary['timed']}"))
    return rows


def _print_groups(results: list[Comparison]) -> None:
    """One row a group: its size and BEFORE's geomean, then each AFTER's geomean ratio and rise count."""
    first = results[0]
    title = f"{first.task} · {first.arch} · speedup over {first.baseline}, against {first.before}"
    one = len(results) == 1
    letters = [chr(ord("A") + i) if i < 26 else str(i + 1) for i in range(len(results))]  # column names for several
    columns = ["group", "scenarios", "before"] + (["after", "after/before", "higher"] if one else
                                                 [head for x in letters for head in (f"{x}/before", f"{x} higher")])
    names = list(dict.fromkeys(name for r in results for name in r.groups))  # every group, in order
    rows = []
    for name in names:
        g = next(r.groups[name] for r in results if name in r.groups)
        row = [name, g["n"], _x(g["before"])]
        for r in results:
            other = r.groups.get(name) or {}
            row += ([_x(other.get("after"))] if one else []) + [_ratio(other.get("ratio")),
                                                                 f"{other.get('higher', 0)}/{other.get('timed', 0)}"]
        rows.append(row)
    parts = [{label: (ratio, higher) for label, ratio, higher in _part_rows(r)} for r in results]
    for label in dict.fromkeys(label for p in parts for label in p):  # the suite's, then the hold-out's
        row = [label, "", ""] + ([""] if one else [])
        for p in parts:
            ratio, higher = p.get(label, (None, "-"))
            row += [_ratio(ratio), higher]
        rows.append(row)
    print_rows(console, title, columns, rows, right=[c for c in columns if c != "group"])
    if not one:
        for x, r in zip(letters, results, strict=True):
            note(console, f"{x} = {r.after}")


def _print_changes(result: Comparison, show_all: bool, several: bool) -> None:
    shown = [c for c in result.changes if show_all or c.verdict not in (WITHIN, UNTIMED)]
    shown.sort(key=lambda c: (c.ratio is not None, c.ratio or 0.0))
    if shown:
        rows = [[c.scenario, _x(c.before), _x(c.after), _ratio(c.ratio), f"±{c.band:.3f}" if c.band else "-",
                 c.verdict] for c in shown]
        title = ("scenarios" if show_all else "scenarios beyond their band (--all: every one)") + (
            f": {result.after}" if several else "")
        print_rows(console, title, ("scenario", "before", "after", "after/before", "band", "verdict"), rows,
                   right=("before", "after", "after/before", "band"))
    console.print(f"{result.after}: {_counts(result)}; suite geomean ratio {_ratio(result.suite_ratio)}"
                  + (f", hold-out {_ratio(result.holdout_ratio)}" if result.holdout_ratio else ""),
                  markup=False, highlight=False)


def _print_pipe(results: list[Comparison]) -> None:
    rows = [[r.after, c.scenario, c.group, "holdout" if c.holdout else "suite", _opt(c.before), _opt(c.after),
             _opt(c.ratio), _opt(c.band), c.verdict] for r in results for c in r.changes]
    for r in results:
        note(console, f"{r.task} · {r.arch} · {r.before} -> {r.after}: suite geomean ratio "
                      f"{_ratio(r.suite_ratio)}, hold-out {_ratio(r.holdout_ratio)}; {_counts(r)}")
    print_rows(console, "", ("file", "scenario", "group", "part", "before", "after", "ratio", "band", "verdict"), rows,
               titled=False)


def _opt(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def compare_command(
    before: Path = typer.Argument(..., help="The first judgement (a JSON `kernelseek eval --out` wrote)."),
    after: list[Path] = typer.Argument(..., help="The judgement(s) to compare with it, of the same task and arch: "
                                        "several make one table with a column each."),
    show_all: bool = typer.Option(False, "--all", help="List every scenario, not only the ones beyond "
                                  "their band."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparisons as JSON: a list, one per AFTER."),
    by: str = typer.Option(None, "--by", metavar="REGEX", help="Group the scenarios by what this regular "
                           "expression matches in their names (its first group, if it has one) instead of "
                           "by the judge's groups, e.g. --by 'd\\d+' for head dimensions; hold-out rows apart."),
) -> None:
    """Compare judgements of one task: per scenario, is AFTER faster, slower, or within the band?

    The measure is the ratio of the two speedups over the task's headline baseline
    (AFTER / BEFORE), each timed beside its own baseline, so two calls or two machines of
    one kind can be compared. A ratio counts as a change only outside its band, the sum of
    the four recorded spreads ((p90 - p10) / median of each implementation's trials). The
    band is conservative, so small real changes show in the groups instead: the geomean
    ratio, and how many scenarios moved up ("higher": 30/36 is a pattern, 18/36 is not).
    Suite and hold-out scenarios are matched by name (a hold-out only with the same seed);
    scenarios only one judgement has are counted, not compared. Several AFTERs make one
    group table with a column each (the candidates of one device call against one kernel).
    In a pipe: one tab-separated line per AFTER and scenario (every one), the summary on
    stderr. Exit status 1 when a scenario correct in BEFORE is incorrect in an AFTER, 2 on
    bad input. Examples:

        kernelseek compare benchmarks/results/seed-sm90-full-holdout24.json \\
            benchmarks/results/v67-sm90-full-holdout24-s2-h200.json
        kernelseek compare v28-d64.json v33-d64.json v36-d64.json
        kernelseek compare v24.json v37.json v38.json --by 'd\\d+'     # by head dimension
        kernelseek compare old.json new.json | sort -t$'\\t' -k7 -g | head
    """
    try:
        first = load_judgement(before)
        results = [compare(first, load_judgement(path), str(before), str(path), by=by) for path in after]
    except CompareError as error:
        fail(str(error))
    if as_json:
        print_json([r.to_dict() for r in results])
    elif console.is_terminal:
        _print_groups(results)
        for r in results:
            _print_changes(r, show_all, len(results) > 1)
    else:
        _print_pipe(results)
    for r in results:
        for line in r.notes + _unmatched(r):
            note(console, (f"{r.after}: " if len(results) > 1 else "") + line)
    raise typer.Exit(1 if any(r.count(BROKE) for r in results) else 0)


def register(app: typer.Typer, **_: typer.Typer) -> None:
    app.command("compare")(compare_command)


def _unmatched(result: Comparison) -> list[str]:
    lines = []
    for names, where in ((result.only_before, result.before), (result.only_after, result.after)):
        if names:
            lines.append(f"{len(names)} scenarios only in {where} (not compared), e.g. {names[0]}")
    return lines
