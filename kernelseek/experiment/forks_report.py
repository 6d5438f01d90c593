"""A forks experiment's table and page: `table.md`, `results.json`, `gains.png`, `index.html`.

One row per (decision point, question kind), then one per kind over all chosen decision points: forks
finished, the gain within K evaluations (median [min–max] over the repeats: the spread), how many forks
gained at all and how many gained by the large-gain threshold, the plateau step (median), the best at the
end, evaluations, wrong candidates and the worker ("scripted" when its replies were fixed in advance).

Then the causal verdict (`kernelseek.analysis.evidence`): the forks share their prefix and differ only in
the question, so "a large gain followed more of the layer-shift and reject-limit forks than of the inform
forks" is tested on them directly: counts, 95% intervals, the difference's interval and a one-sided exact
permutation test, and "insufficient evidence" below the stated number of large gains."""

from __future__ import annotations

import base64
import html
import json
import statistics
from pathlib import Path
from typing import Any

from kernelseek.experiment.forks import ForkMetrics, ForksExperiment
from kernelseek.experiment.report import COLOURS, fmt, markdown


def large(fork: ForkMetrics) -> bool:
    from kernelseek.bank.outcomes import DEFAULT_LARGE

    return fork.gain is not None and fork.gain >= DEFAULT_LARGE - 1e-9


def worker_of(forks: list[ForkMetrics]) -> str:
    labels = sorted({"scripted" if f.scripted else (f.worker or "unknown") for f in forks})
    return ", ".join(labels) or "—"


def causal_verdict(metrics: list[ForkMetrics]) -> dict[str, Any]:
    """The forks' test of the method's claim: layer-shift/reject-limit forks against inform forks."""
    from kernelseek.analysis.claim import CLAIM_KINDS
    from kernelseek.analysis.evidence import MIN_LARGE_GAINS, Comparison

    direction = [f for f in metrics if f.kind in CLAIM_KINDS]
    inform = [f for f in metrics if f.kind == "inform"]
    comparison = Comparison("layer-shift or reject-limit forks", sum(map(large, direction)), len(direction),
                            "inform forks", sum(map(large, inform)), len(inform), sum(map(large, metrics)))
    outcome = comparison.outcome()
    size = f"{comparison.large_gains} fork(s) with a large gain of {len(metrics)}" + (
        f", fewer than the {MIN_LARGE_GAINS} a verdict needs" if not comparison.enough else "")
    scripted = [f for f in metrics if f.scripted]
    note = (f" [{'the worker is' if len(scripted) == len(metrics) else f'{len(scripted)} forks have a'} scripted"
            f"{'' if len(scripted) == len(metrics) else ' worker'}: its replies were fixed in advance, so this shows "
            "the machinery, not what a model does]") if scripted else ""
    line = (f"large gains follow layer-shift and reject-limit questions more than inform ones, by forks: {outcome} "
            f"({size}; {comparison.sentence()}){note}")
    return {"line": line, "outcome": outcome, **comparison.to_dict()}


def summary(label_step: str, kind: str, forks: list[ForkMetrics]) -> dict[str, Any]:
    gains = [f.gain for f in forks if f.gain is not None]
    ends = [f.best for f in forks if f.best is not None]

    def median(values: list[float]) -> float | None:
        return round(statistics.median(values), 4) if values else None

    return {"step": label_step, "kind": kind, "forks": len(forks), "gain_median": median(gains),
            "gain_min": min(gains) if gains else None, "gain_max": max(gains) if gains else None,
            "gained": sum(1 for g in gains if g > 1.0 + 1e-9), "scored": len(gains), "large": sum(map(large, forks)),
            "plateau_median": median([f.plateau_step for f in forks if f.plateau_step is not None]),
            "worker": worker_of(forks), "best_median": median(ends),
            "evaluations_median": median([f.evaluations for f in forks]),
            "wrong_median": median([f.wrong for f in forks]),
            "questions": sorted({f.bank_id or f.question or "(none)" for f in forks})}


def rows_of(summaries: list[dict[str, Any]], k: int) -> tuple[list[str], list[list[str]]]:
    head = ["decision point", "question kind", "forks", f"gain within {k} evaluations: median [min–max]",
            "forks that gained", "large gains", "plateau step (median)", "best at the end (median)", "evaluations",
            "wrong", "worker", "questions asked"]
    rows = []
    for s in summaries:
        gain = f"{fmt(s['gain_median'])}x [{fmt(s['gain_min'])}–{fmt(s['gain_max'])}]" if s["gain_median"] else "—"
        rows.append([str(s["step"]), s["kind"], str(s["forks"]), gain, f"{s['gained']}/{s['scored']}",
                     f"{s['large']}/{s['forks']}", fmt(s["plateau_median"], 1),
                     f"{fmt(s['best_median'])}x" if s["best_median"] else "—", fmt(s["evaluations_median"], 1),
                     fmt(s["wrong_median"], 1), s["worker"], ", ".join(s["questions"])])
    return head, rows


def plot_gains(metrics: list[ForkMetrics], kinds: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    steps = sorted({m.step for m in metrics})
    for i, kind in enumerate(kinds):
        for j, step in enumerate(steps):
            ys = [m.gain for m in metrics if m.kind == kind and m.step == step and m.gain is not None]
            xs = [i + (j - (len(steps) - 1) / 2) * 0.15 for _ in ys]
            ax.plot(xs, ys, "o", color=COLOURS[j % len(COLOURS)], alpha=0.8,
                    label=f"step {step}" if i == 0 else None)
    ax.axhline(1.0, color="grey", linestyle=":", linewidth=0.8)
    ax.set_xticks(range(len(kinds)), kinds)
    ax.set_ylabel("gain within K evaluations (x the best at the fork)")
    ax.set_title("one dot per fork, one colour per decision point")
    ax.grid(alpha=0.3)
    if steps:
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_forks_report(experiment: ForksExperiment, metrics: list[ForkMetrics], out: Path, *,
                       missing: list[str] | None = None) -> dict[str, Any]:
    summaries = [summary(str(step), kind, [m for m in metrics if m.step == step and m.kind == kind])
                 for step in experiment.at for kind in experiment.kinds]
    per_kind = [summary("all", kind, [m for m in metrics if m.kind == kind]) for kind in experiment.kinds]
    rows_all = summaries + (per_kind if len(experiment.at) > 1 else [])
    head, rows = rows_of(rows_all, experiment.within_evals)
    results = {"experiment": experiment.name, "config": str(experiment.path), "run": str(experiment.run),
               "at": experiment.at, "kinds": experiment.kinds, "repeats": experiment.repeats,
               "within_evals": experiment.within_evals, "budgets": experiment.budgets, "mode": experiment.mode,
               "per_point": summaries, "per_kind": per_kind, "forks": [m.to_dict() for m in metrics],
               "verdict": causal_verdict(metrics), "missing": missing or []}
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.md").write_text(markdown(head, rows) + f"\nverdict: {results['verdict']['line']}\n")
    (out / "results.json").write_text(json.dumps(results, indent=1))
    plot_gains(metrics, experiment.kinds, out / "gains.png")
    image = base64.b64encode((out / "gains.png").read_bytes()).decode()

    def cells(row: list[str], tag: str) -> str:
        return "<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in row) + "</tr>"

    fork_head = ["fork", "step", "kind", "question", "best at the fork", f"best within {experiment.within_evals}",
                 "gain", "plateau step", "best at the end", "evaluations", "wrong", "steps", "dollars", "worker", "ended"]
    fork_rows = [[m.run_id, str(m.step), m.kind, m.question or "(no question)", fmt(m.before), fmt(m.within),
                  fmt(m.gain), fmt(m.plateau_step), fmt(m.best), str(m.evaluations), str(m.wrong), str(m.steps),
                  f"${m.cost_usd:.4f}", "scripted" if m.scripted else m.worker, m.end_reason or "not finished"]
                 for m in metrics]
    note = (f"<p class=warn>Not finished: {html.escape(', '.join(missing))}. Run the experiment again to finish "
            "them.</p>") if missing else ""
    budgets = ", ".join(f"{k} {v}" for k, v in experiment.budgets.items())
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>kernelseek forks {html.escape(experiment.name)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:80em}} table{{border-collapse:collapse;margin:1em 0}}
td,th{{border:1px solid #ccc;padding:.3em .6em;text-align:right}} td:first-child,th:first-child{{text-align:left}}
.warn{{color:#a00}} code{{background:#f4f4f4}}</style></head><body>
<h1>Forks experiment {html.escape(experiment.name)}</h1>
<p>Run <code>{html.escape(str(experiment.run))}</code> forked at its decision points of steps
{html.escape(', '.join(map(str, experiment.at)))}, {experiment.repeats} fork(s) per question kind, each with the
same budget after the fork point ({html.escape(budgets)}); later decision points: mode
<code>{html.escape(experiment.mode)}</code>. A fork's gain is the best within its first
{experiment.within_evals} evaluations over the parent's best at the fork point; medians and [min–max] over the
repeats.</p>
{note}
<h2>Verdict</h2>
<p id="verdict">{html.escape(results["verdict"]["line"])}</p>
<h2>Per decision point and question kind</h2>
<table id="kinds">{cells(head, "th")}{"".join(cells(r, "td") for r in rows)}</table>
<img id="gains" alt="gain per fork, by question kind" src="data:image/png;base64,{image}">
<h2>Per fork</h2>
<table id="forks">{cells(fork_head, "th")}{"".join(cells(r, "td") for r in fork_rows)}</table>
<p>Each fork is an ordinary run: <code>kernelseek trace show FORK_FOLDER</code> tells what it did.</p>
</body></html>
"""
    (out / "index.html").write_text(page)
    return results
