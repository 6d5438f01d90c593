"""`kernelseek trace analyze RUNS...`: which questions preceded which gains, and whether the claim holds."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from kernelseek.bank.outcomes import DEFAULT_K, DEFAULT_LARGE, DEFAULT_SUCCESS
from kernelseek.commands.bank import fail
from kernelseek.commands.output import print_json
from kernelseek.trace import TraceError

errors = Console(stderr=True)

Threshold = Annotated[float, typer.Option(help="A new best at least this many times the best before it is a "
                                          "large gain.")]
K = Annotated[int, typer.Option("-k", help="Evaluations after a question that count as what followed it.")]


def analyze_command(
    runs: Annotated[list[str], typer.Argument(help="Run folders, trace files, run ids, or folders that hold "
                                              "runs (searched recursively, e.g. runs/ or an experiment's).")],
    threshold: Threshold = DEFAULT_LARGE,
    k: K = DEFAULT_K,
    success: Annotated[float, typer.Option(help="A gain ratio that counts as a success.")] = DEFAULT_SUCCESS,
    as_json: Annotated[bool, typer.Option("--json", help="Print the tables as JSON.")] = False,
    graph: Annotated[Path | None, typer.Option(help="Also write each run's graph as GraphML into this folder.")] = None,
    model: Annotated[str | None, typer.Option(help="A litellm model that classifies the questions whose trace "
                                              "records no kind (default: $KERNELSEEK_BANK_MODEL; none: the "
                                              "documented rules).")] = None,
) -> None:
    """Which questions preceded which gains, and whether the method's claim holds.

    A folder that is not a run is searched for runs below it; what holds no run is skipped with one line
    (on stderr), and so is a run whose trace cannot be read when it was found by that search. On a
    terminal tables; in a pipe tab-separated rows under a `# title` line, each table ended by a blank
    line; --json for scripts.

    Prints the totals (human messages, questions by source, tool calls, evaluations, wrong candidates),
    the per-kind table, the runs with their plateau step (the last step that improved the best by at least
    the threshold), each large gain with its question, and one verdict line that says how sure it is: the
    counts, 95% intervals and a one-sided permutation test of "a large gain followed layer-shift and
    reject-limit questions more often than inform ones"; "insufficient evidence" below 5 large gains;
    "holds" / "fails" (naming the gains that break it) otherwise. Forks (same prefix, a different question)
    are the causal evidence and decide where present. A scripted worker is named in the tables and the verdict.

        kernelseek trace analyze ~/.local/share/kernelseek/runs | cat
        kernelseek trace analyze RUN_A RUN_B --json | jq .verdict
    """
    from kernelseek.analysis.claim import totals, verdict
    from kernelseek.analysis.graph import chooser_table, gains_table, kind_table, run_table
    from kernelseek.bank.classify import configured_model
    from kernelseek.commands.analysis_runs import analyse_runs, write_graphml
    from kernelseek.commands.analysis_view import print_analysis

    model = model or configured_model()
    try:
        analyses, skipped = analyse_runs(runs, threshold=threshold, k=k, success=success, model=model)
    except TraceError as error:
        raise fail(str(error)) from None
    for line in skipped:
        errors.print(Text(line), soft_wrap=True)
    if not analyses:
        raise fail(f"no run to analyse in {', '.join(runs)}; pass run folders, trace files, run ids or folders "
                   "that hold runs.")
    kinds, per_run, gains = kind_table(analyses), run_table(analyses), gains_table(analyses)
    counted, judged, choosers = totals(analyses), verdict(analyses), chooser_table(analyses)
    if graph is not None:
        write_graphml(analyses, graph)
    if as_json:
        return print_json({"threshold": threshold, "k": k, "classifier": f"model:{model}" if model else "rules",
                           "totals": counted, "kinds": kinds, "choosers": choosers, "runs": per_run,
                           "large_gains": gains, "verdict": judged.to_dict(), "skipped": skipped})
    print_analysis(counted, kinds, choosers, per_run, gains, judged.line, threshold, k)


def register(app: typer.Typer, *, trace_app: typer.Typer, **_: typer.Typer) -> None:
    trace_app.command("analyze")(analyze_command)
