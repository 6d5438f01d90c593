"""The experiment's table and page: `table.md`, `results.json`, `curves.png` and `index.html` (one page,
the plot embedded, so it can be mailed or attached as one file)."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

from kernelseek.experiment.metrics import RunMetrics, graph_summary, level_key

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


def fmt(value: Any, digits: int = 3, suffix: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}{suffix}"
    return f"{value}{suffix}"


def count(value: float | None) -> str:
    """A median count: whole numbers as such, halves with one decimal."""
    if value is None:
        return "—"
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def money(value: float | None, unpriced: bool, tokens: float | None = None) -> str:
    """Dollars; for a model litellm has no price for, the tokens instead."""
    if value is None:
        return "—"
    if unpriced and not value:
        return f"unpriced, {tokens:,.0f} tok" if tokens is not None else "unpriced"
    return f"${value:.4f}"


def table_rows(summaries: list[dict[str, Any]], levels: list[float], basis: str) -> tuple[list[str], list[list[str]]]:
    unit = "× start" if basis == "start" else "x"
    head = ["graph", "runs", "best speedup: median [min–max]"]
    for level in levels:
        head += [f"steps to {level:g}{unit}", f"$ to {level:g}{unit}"]
    head += ["plateau step", "evaluations", "wrong", "tool calls", "questions", "steps", "dollars", "worker"]
    rows = []
    for s in summaries:
        unpriced = s["unpriced_calls"] > 0
        best = f"{fmt(s['best_speedup_median'])}x [{fmt(s['best_speedup_min'])}–{fmt(s['best_speedup_max'])}]" \
            if s["best_speedup_median"] is not None else "—"
        row = [s["graph"], f"{s['finished']}/{s['runs']}", best]
        for level in levels:
            r = s["reach"][level_key(level)]
            row += [f"{count(r['median_steps'])} ({r['reached']}/{r['of']})",
                    money(r["median_cost_usd"], unpriced, r["median_tokens"]) if r["reached"] else "—"]
        row += [count(s.get("plateau_median")), count(s["evaluations_median"]), count(s["wrong_median"]),
                count(s["tool_calls_median"]), count(s["questions_median"]), count(s["steps_median"]),
                money(s["cost_usd_median"], unpriced, s["tokens_median"]), str(s.get("workers") or "—")]
        rows.append(row)
    return head, rows


def markdown(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def plot_curves(runs: list[RunMetrics], graphs: list[str], levels: list[float], basis: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    for i, graph in enumerate(graphs):
        colour = COLOURS[i % len(COLOURS)]
        labelled = False
        for run in (r for r in runs if r.graph == graph and r.curve):
            xs, ys = zip(*run.curve, strict=True)
            ax.step(xs, ys, where="post", color=colour, alpha=0.85, linewidth=1.8,
                    label=None if labelled else graph)
            ax.plot(xs, ys, "o", color=colour, markersize=3)
            for step in run.question_steps:  # a question: a triangle on the curve where it was asked
                value = next((b for s, b in reversed(run.curve) if s <= step), ys[0])
                ax.plot([step], [value], "v", color=colour, markersize=8, markeredgecolor="black")
            labelled = True
    if basis == "baseline":
        for level in levels:
            ax.axhline(level, color="grey", linestyle=":", linewidth=0.8)
    ax.set_xlabel("step (worker turn)")
    ax.set_ylabel("best speedup over the baseline")
    ax.set_title("best speedup over steps: one line per run, one colour per graph, ▼ a question")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # no run with a curve: no legend (matplotlib warns on an empty one)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _judged_on(runs: list[RunMetrics]) -> str:
    """The hardware the runs' judgements recorded: 'NVIDIA H100 ... (driver ...) (3 runs)', one part per kind."""
    seen: dict[str, int] = {}
    for run in runs:
        if run.hardware:
            seen[run.hardware] = seen.get(run.hardware, 0) + 1
    return "; ".join(f"{what} ({n} run{'s' if n != 1 else ''})" for what, n in seen.items())


def scripted_warning(scripted: list[str]) -> str:
    """The sentence that heads every table of an experiment whose named graphs have scripted workers (the
    terminal's, table.md's and the page's), so that their numbers are never read as a model's; '' for none."""
    return (f"SCRIPTED models ({', '.join(scripted)}): their replies are fixed, so no claim about the method "
            "follows from these numbers.") if scripted else ""


def write_report(experiment: Any, runs: list[RunMetrics], out: Path, *, missing: list[str] | None = None) -> dict:
    """Write table.md, results.json, curves.png and index.html under `out`; return the results."""
    graphs = [g.name for g in experiment.graphs]
    summaries = [graph_summary(g, [r for r in runs if r.graph == g], experiment.levels) for g in graphs]
    head, rows = table_rows(summaries, experiment.levels, experiment.level_basis)
    from kernelseek import provenance

    workers = {g.name: provenance.worker(g.model, g.worker_command) for g in experiment.graphs}
    for summary, name in zip(summaries, graphs, strict=True):
        summary["worker"] = workers[name]
    scripted = [name for name, w in workers.items() if w["kind"] == "scripted"]
    made_by = "\n".join(f"- {name}: {provenance.describe(w)}" for name, w in workers.items())
    env = provenance.environment()
    git = env["git"]
    built = (f"kernelseek {env['packages']['kernelseek']}, " +
             (f"commit {git['commit'][:12]}{' (with uncommitted changes)' if git['dirty'] else ''}" if git
              else "no git checkout") + f", Python {env['python']}")
    from kernelseek.harness.gpu_info import describe

    here = describe(env["hardware"])
    judged = _judged_on(runs)
    hardware = f"Judged on {judged}; the report written on {here}." if judged else f"Written on {here}."
    warning = f"**{scripted_warning(scripted)}**\n\n" if scripted else ""
    table = warning + markdown(head, rows) + f"\nWorkers:\n{made_by}\n\nProduced by {built}.\n{hardware}\n"
    results = {"experiment": experiment.name, "config": str(experiment.path), "task": experiment.task,
               "arch": experiment.arch, "levels": experiment.levels, "level_basis": experiment.level_basis,
               "graphs": summaries, "runs": [r.to_dict() for r in runs], "missing": missing or [],
               "provenance": {"workers": workers, "scripted": scripted, **env,
                              "judged_on": {r.run_id: r.hardware for r in runs}}}
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.md").write_text(table)
    (out / "results.json").write_text(json.dumps(results, indent=1))
    plot_curves(runs, graphs, experiment.levels, experiment.level_basis, out / "curves.png")
    image = base64.b64encode((out / "curves.png").read_bytes()).decode()

    def cells(row: list[str], tag: str) -> str:
        return "<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in row) + "</tr>"

    run_head = ["run", "graph", "seed", "ended", "start", "best", "steps", "evaluations", "wrong", "tool calls",
                "questions", "dollars", "tokens", "tools used"]
    run_rows = [[r.run_id, r.graph, str(r.seed), r.end_reason or "not finished", fmt(r.start_speedup),
                 fmt(r.best_speedup), str(r.steps), str(r.evaluations), str(r.wrong), str(r.tool_calls),
                 str(r.questions), f"${r.cost_usd:.4f}", str(r.tokens),
                 ", ".join(f"{k} {v}" for k, v in sorted(r.tool_counts.items()))] for r in runs]
    basis = ("multiples of each run's starting speedup" if experiment.level_basis == "start"
             else "speedups over the baseline")
    note = (f"<p class=warn>Not finished: {html.escape(', '.join(missing))}. Run the experiment again to finish "
            "them.</p>") if missing else ""
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>kernelseek experiment {html.escape(experiment.name)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:80em}} table{{border-collapse:collapse;margin:1em 0}}
td,th{{border:1px solid #ccc;padding:.3em .6em;text-align:right}} td:first-child,th:first-child{{text-align:left}}
.warn{{color:#a00}} code{{background:#f4f4f4}}</style></head><body>
<h1>Experiment {html.escape(experiment.name)}</h1>
<p>Task <code>{html.escape(Path(experiment.task).name)}</code> on <code>{html.escape(experiment.arch)}</code>, from
<code>{html.escape(Path(experiment.kernel).name)}</code>; {experiment.repeats} repeat(s) per graph; config
<code>{html.escape(str(experiment.path))}</code>. Levels are {basis}. Medians over the finished repeats; steps and
dollars to a level are over the repeats that reached it (reached/finished in brackets).</p>
{note}
{f'<p class=warn><b>{html.escape(scripted_warning(scripted))}</b></p>' if scripted else ''}
<h2>Per graph</h2>
<table id="graphs">{cells(head, "th")}{"".join(cells(r, "td") for r in rows)}</table>
<h2>Best speedup over steps</h2>
<img id="curves" alt="best speedup over steps, one colour per graph" src="data:image/png;base64,{image}">
<h2>Per run</h2>
<table id="runs">{cells(run_head, "th")}{"".join(cells(r, "td") for r in run_rows)}</table>
<p>Each run is an ordinary run: <code>kernelseek trace show RUN_FOLDER</code> tells what it did.</p>
<h2>Provenance</h2>
<ul id="provenance">{"".join(f"<li>{html.escape(name)}: {html.escape(provenance.describe(w))}</li>" for name, w in workers.items())}
<li>produced by {html.escape(built)}</li>
<li>hardware: {html.escape(hardware)}</li>
<li>packages: {html.escape(", ".join(f"{k} {v}" for k, v in env["packages"].items() if v))}</li></ul>
</body></html>
"""
    (out / "index.html").write_text(page)
    return results
