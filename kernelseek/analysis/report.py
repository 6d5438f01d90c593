"""`kernelseek report RUN`: an HTML page and its PNG plots for one run.

Writes, into the output folder (default `<run>/report/`):

    report.html          one self-contained file (the plots inlined as data: URLs, as the experiment page
                         does, so it can be mailed or moved alone): the run's summary (with the best kernel's hold-out geomean beside its suite
                         geomean, and the gap between them; the totals, the plateau step and the
                         verdict line of `kernelseek.analysis.claim`), the per-kind table, the questions with
                         what followed them, the large gains with their attribution, the sanitizer
                         gate's verdicts, and the three plots
    best_speedup.png     best speedup over steps (whole steps on the axis), every correct candidate as a
                         grey dot, each question as a marker coloured by its kind (and the target as a
                         dashed line); the axis names the baseline the speedups are over
    scenarios.png        per-scenario speedups of the best kernel, read from the report JSON that the
                         best candidate's evaluation event points to (a note in the plot when none)
    cost.png             cumulative model dollars and tokens over wall-clock minutes (both axes from 0; a
                         run whose calls had no price says so instead of a dollar axis around 0)

matplotlib runs with the Agg backend; nothing needs a display.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from kernelseek.analysis.claim import totals, verdict  # noqa: E402
from kernelseek.analysis.graph import (  # noqa: E402
    RunAnalysis,
    analyze_run,
    elapsed_minutes,
    gains_table,
    kind_table,
    run_table,
)
from kernelseek.bank.outcomes import DEFAULT_K, DEFAULT_LARGE  # noqa: E402
from kernelseek.provenance import SCRIPTED_LABEL  # noqa: E402

KIND_COLOURS = {"layer_shift": "#1f77b4", "reject_limit": "#d62728", "inform": "#2ca02c", "other": "#7f7f7f"}
PLOT_FILES = ("best_speedup.png", "scenarios.png", "cost.png")


def resolve_report(analysis: RunAnalysis, report: str | None) -> Path | None:
    """The best candidate's report JSON: an absolute path, or relative to the run folder or the cwd."""
    if not report:
        return None
    path = Path(report)
    options = [path] if path.is_absolute() else [analysis.path.parent / path, Path.cwd() / path]
    return next((p for p in options if p.is_file()), None)


def baseline_name(analysis: RunAnalysis) -> str | None:
    """The baseline the run's speedups are over (the headline baseline its judgements name, e.g. 'torch'),
    from the first judgement's report JSON that names one."""
    for event in analysis.events:
        if event["type"] != "evaluation" or not event.get("report"):
            continue
        path = resolve_report(analysis, event["report"])
        try:
            name = json.loads(path.read_text(encoding="utf-8")).get("baseline") if path else None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
            continue
        if isinstance(name, str) and name:
            return name
    return None


def speedup_label(baseline: str | None) -> str:
    return f"speedup over {baseline}" if baseline else "speedup over the baseline"


def scenario_speedups(analysis: RunAnalysis, holdout: bool = False) -> tuple[list[tuple[str, float]], str | None]:
    """[(scenario, speedup)] of the best kernel's suite (its hold-out with holdout=True), and a note when
    they could not be read."""
    best = analysis.best
    if best is None:
        return [], "no candidate became the best"
    path = resolve_report(analysis, best.report)
    if path is None:
        return [], f"no report JSON found for the best candidate {best.id}"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return [], f"the report {path} is not valid JSON"
    scenarios = data.get("scenarios") if isinstance(data, dict) else None
    if isinstance(scenarios, dict):
        scenarios = [{"scenario": k, "speedup": v} for k, v in scenarios.items()]
    result = []
    for item in scenarios or []:
        if not isinstance(item, dict) or bool(item.get("holdout")) != holdout:
            continue
        name = item.get("scenario") or item.get("name")
        speedup = item.get("speedup")
        if name is not None and isinstance(speedup, int | float) and not isinstance(speedup, bool):
            result.append((str(name), float(speedup)))
    what = "hold-out" if holdout else "per-scenario"
    return result, None if result else f"the report {path} lists no {what} speedups"


def holdout_of_best(analysis: RunAnalysis) -> dict[str, Any] | None:
    """The best kernel's hold-out: {n, seed, correct, speedup, suite, gap} (gap = hold-out geomean /
    suite geomean, below 1 when the kernel does worse on shapes the suite lacks), or None when its
    judgement drew none. Read from its evaluation event, else from its report JSON."""
    best = analysis.best
    if best is None:
        return None
    found = None
    for event in analysis.events:
        if event["type"] == "evaluation" and str(event["candidate"]) == best.id and event.get("holdout"):
            if event.get("best") or found is None:
                found = (event["holdout"], event.get("speedup"))
    if found is None:
        path = resolve_report(analysis, best.report)
        try:
            data = json.loads(path.read_text(encoding="utf-8")) if path else None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            data = None
        if isinstance(data, dict) and isinstance(data.get("holdout"), dict):
            found = (data["holdout"], data.get("speedup"))
    if found is None:
        return None
    held, suite = found
    speedup = held.get("speedup")
    gap = speedup / suite if isinstance(speedup, int | float) and isinstance(suite, int | float) and suite else None
    return {"n": held.get("n"), "seed": held.get("seed"), "correct": held.get("correct"), "speedup": speedup,
            "suite": suite, "gap": gap}


def describe_holdout(held: dict[str, Any] | None) -> str:
    """'24/24 correct, geomean 0.81x vs the suite's 0.95x: 0.853x the suite's (seed 7)'."""
    if not held:
        return "no hold-out drawn"
    text = f"{held['correct']}/{held['n']} correct"
    if held.get("speedup") is not None:
        text += f", geomean {held['speedup']:.3f}x"
    if held.get("suite") is not None:
        text += f" vs the suite's {held['suite']:.3f}x"
    if held.get("gap") is not None:
        text += f": {held['gap']:.3f}x the suite's"
    return text + f" (seed {held['seed']})"


def sanitizer_rows(analysis: RunAnalysis) -> list[dict[str, Any]]:
    """One row per sanitizer gate run: the candidate, the verdict, each tool's status and the first reason."""
    rows = []
    for event in analysis.events:
        if event["type"] != "sanitizer":
            continue
        tools = event.get("tools") or {}
        rows.append({"candidate": event["candidate"], "step": event["step"],
                     "passed": "passed" if event["passed"] else "FAILED",
                     "tools": ", ".join(f"{tool}: {v.get('status')}" for tool, v in tools.items()) or None,
                     "reason": event.get("reason")})
    return rows


def describe_sanitizer_of_best(analysis: RunAnalysis) -> str:
    """'passed (memcheck, racecheck, initcheck, synccheck clean)', or why there is no verdict."""
    best = analysis.best
    if best is None:
        return "no best"
    runs = [e for e in analysis.events if e["type"] == "sanitizer" and str(e["candidate"]) == best.id]
    if not runs:
        return "not run (no sanitizer gate in this run)"
    last = runs[-1]
    tools = ", ".join(last.get("tools") or {})
    return f"passed ({tools} clean)" if last["passed"] else f"FAILED: {last.get('reason')}"


def plot_best_speedup(analysis: RunAnalysis, path: Path, baseline: str | None = None) -> None:
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=100)
    correct = [c for c in analysis.candidates if c.correct and c.speedup is not None]
    if correct:
        ax.scatter([c.step for c in correct], [c.speedup for c in correct], s=14, color="#bbbbbb",
                   label="correct candidate", zorder=2)
    best_points: list[tuple[int, float]] = []
    running = None
    for cand in analysis.candidates:
        if cand.best and cand.speedup is not None and (running is None or cand.speedup > running):
            running = cand.speedup
            best_points.append((cand.step, running))
    last_step = max(analysis.steps, best_points[-1][0] if best_points else 0)
    if best_points:
        xs = [p[0] for p in best_points] + [last_step]
        ys = [p[1] for p in best_points] + [best_points[-1][1]]
        ax.step(xs, ys, where="post", color="black", linewidth=2, label="best speedup", zorder=3)

    def best_at(step: int) -> float:
        values = [v for s, v in best_points if s <= step]
        return values[-1] if values else (best_points[0][1] if best_points else 1.0)

    seen_kinds: set[str] = set()
    for ask in analysis.asks:
        colour = KIND_COLOURS.get(ask.kind, "#000000")
        label = ask.kind if ask.kind not in seen_kinds else None
        seen_kinds.add(ask.kind)
        ax.axvline(ask.step, color=colour, alpha=0.25, linewidth=1, zorder=1)
        ax.scatter([ask.step], [best_at(ask.step)], marker="v", s=90, color=colour, edgecolors="black",
                   label=label, zorder=4)
    large = [g for g in analysis.gains if g.large]
    if large:
        ax.scatter([g.step for g in large], [g.speedup for g in large], marker="*", s=160, color="#ffbf00",
                   edgecolors="black", label="large gain", zorder=5)
    target = analysis.start.get("target")
    if isinstance(target, int | float) and not isinstance(target, bool):
        ax.axhline(float(target), color="#9467bd", linestyle="--", linewidth=1, label=f"target {target:g}")
    ax.set_xlabel("step")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # a step is a whole worker turn
    ax.set_xlim(left=-0.5, right=max(last_step, 1) + 0.5)
    ax.set_ylabel(speedup_label(baseline))
    ax.set_title(f"{analysis.run_id}: best speedup over steps, questions by kind")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # nothing labelled (no step judged): no legend, no warning
        ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_scenarios(analysis: RunAnalysis, path: Path,
                   baseline: str | None = None) -> tuple[list[tuple[str, float]], str | None]:
    speedups, note = scenario_speedups(analysis)
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=100)
    if speedups:
        names = [n for n, _ in speedups]
        values = [v for _, v in speedups]
        colours = ["#2ca02c" if v >= 1.0 else "#d62728" for v in values]
        ax.bar(range(len(values)), values, color=colours)
        ax.set_xticks(range(len(values)), names, rotation=45 if len(names) > 6 else 0, ha="right" if len(names) > 6 else "center", fontsize=8)
        ax.axhline(1.0, color="black", linewidth=1)
        ax.set_ylim(bottom=0)
        ax.set_ylabel(speedup_label(baseline))
        best = analysis.best
        ax.set_title(f"{analysis.run_id}: per-scenario speedups of the best kernel ({best.id if best else '?'})")
    else:
        ax.text(0.5, 0.5, note or "no data", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return speedups, note


def plot_cost(analysis: RunAnalysis, path: Path) -> None:
    minutes = elapsed_minutes(analysis.events)
    xs, dollars, tokens = [0.0], [0.0], [0]
    for minute, event in zip(minutes, analysis.events, strict=True):
        if event["type"] != "model_call":
            continue
        xs.append(minute)
        dollars.append(dollars[-1] + float(event.get("cost_usd") or 0))
        tokens.append(tokens[-1] + int(event.get("prompt_tokens") or 0) + int(event.get("completion_tokens") or 0))
    priced = any(e["type"] == "model_call" and e.get("cost_usd") is not None for e in analysis.events)
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=100)
    ax.plot(xs, dollars, color="#ff7f0e", linewidth=2,
            label="model dollars" if priced else "model dollars (no call had a price)")
    ax.set_xlabel("minutes since the run started")
    ax.set_ylabel("cumulative dollars")
    ax.set_xlim(left=0, right=max(xs[-1], 1e-3))
    ax.set_ylim(bottom=0, top=max(dollars[-1] * 1.1, 0.01))  # from $0; a run that spent nothing: $0-0.01
    other = ax.twinx()
    other.plot(xs, tokens, color="#17becf", linewidth=1.5, linestyle="--", label="tokens")
    other.set_ylabel("cumulative tokens")
    other.set_ylim(bottom=0, top=max(tokens[-1] * 1.1, 1))
    other.yaxis.set_major_locator(MaxNLocator(integer=True))
    lines = ax.get_legend_handles_labels()
    more = other.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], loc="upper left", fontsize=8)
    ax.set_title(f"{analysis.run_id}: cost over time")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _table(rows: list[dict[str, Any]], columns: list[tuple[str, str]], css: str) -> str:
    head = "".join(f"<th>{html.escape(title)}</th>" for _, title in columns)
    body = "".join(
        "<tr>" + "".join(f'<td data-col="{key}">{html.escape(_fmt(row.get(key)))}</td>' for key, _ in columns) + "</tr>"
        for row in rows)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


STYLE = """body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}
th{background:#f3f3f3}.warn{background:#fff3cd;border:1px solid #e0b000;padding:6px 10px}img{max-width:100%;border:1px solid #eee;margin:0.5em 0}
.kind-layer_shift{color:#1f77b4}.kind-reject_limit{color:#d62728}.kind-inform{color:#2ca02c}.kind-other{color:#7f7f7f}"""


def write_report(run: str | Path, out: str | Path | None = None, *, threshold: float = DEFAULT_LARGE,
                 k: int = DEFAULT_K) -> Path:
    """Write report.html and its PNGs; returns the HTML's path. Raises TraceError on a bad trace."""
    analysis = analyze_run(run, threshold=threshold, k=k)
    out = Path(out) if out is not None else analysis.path.parent / "report"
    out.mkdir(parents=True, exist_ok=True)
    baseline = baseline_name(analysis)
    plot_best_speedup(analysis, out / "best_speedup.png", baseline)
    speedups, note = plot_scenarios(analysis, out / "scenarios.png", baseline)
    plot_cost(analysis, out / "cost.png")

    def image(name: str, alt: str) -> str:  # inlined: the page is one file
        data = base64.b64encode((out / name).read_bytes()).decode()
        return f'<img id="{name.removesuffix(".png")}" alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'

    start = analysis.start
    summary = run_table([analysis])[0]
    facts = [("run", analysis.run_id), ("task", start.get("task")), ("kernel", start.get("kernel")),
             ("arch", start.get("arch")), ("baseline", baseline), ("mode", start.get("mode")),
             ("worker", f"{start.get('worker')} ({SCRIPTED_LABEL})" if analysis.scripted else start.get("worker")),
             ("target", start.get("target")), ("best speedup", summary["best_speedup"]),
             ("best candidate", analysis.best.id if analysis.best else None), ("steps", summary["steps"]),
             ("evaluations", summary["evaluations"]), ("wrong candidates", summary["wrong"]),
             ("model calls", summary["model_calls"]), ("model tool calls", summary["tool_calls"]),
             ("model dollars", summary["cost_usd"]), ("tokens", analysis.tokens)]
    counted, judged = totals([analysis]), verdict([analysis])
    facts += [("human messages", counted["human_messages"]),
              ("questions by source", ", ".join(f"{n} {src}" for src, n in counted["questions_by_source"].items())
               or "none"),
              ("large gains", counted["large_gains"]), ("plateau step", analysis.plateau_step)]
    held = holdout_of_best(analysis)
    facts += [("best hold-out", describe_holdout(held)),
              ("hold-out gap", None if not held or held["gap"] is None else f"{held['gap'] - 1:+.1%}")]
    facts.append(("best's sanitizer gate", describe_sanitizer_of_best(analysis)))
    end = next((e for e in analysis.events if e["type"] == "run_end"), None)
    if end:
        facts.append(("ended", end.get("reason")))
    fact_rows = "".join(f'<tr><th>{html.escape(n)}</th><td data-fact="{html.escape(n)}">{html.escape(_fmt(v))}</td></tr>'
                        for n, v in facts)
    asks = [{"step": a.step, "decision_point": a.decision_point, "kind": a.kind, "source": a.bank_id or a.source,
             "chooser": a.chooser,
             "text": a.text, "before": a.before, "after": a.after, "gain": a.gain,
             "large_gains": ", ".join(a.large_gains) or None} for a in analysis.asks]
    scen_rows = [{"scenario": n, "speedup": v} for n, v in speedups]
    held_rows = [{"scenario": n, "speedup": v} for n, v in sorted(scenario_speedups(analysis, holdout=True)[0],
                                                                    key=lambda item: item[1])]
    san_rows = sanitizer_rows(analysis)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>KernelSeek report: {html.escape(analysis.run_id)}</title><style>{STYLE}</style></head><body>",
        f"<h1>KernelSeek run {html.escape(analysis.run_id)}</h1>",
        f'<p class="warn" data-worker="scripted"><b>{html.escape(SCRIPTED_LABEL)}</b>: its words and kernels were '
        "fixed in advance, so this page shows the machinery working, not what a model does.</p>"
        if analysis.scripted else "",
        f'<table class="summary">{fact_rows}</table>',
        f'<p class="verdict" data-verdict="{ {True: "holds", False: "fails", None: "unjudged"}[judged.holds] }">'
        f"<b>Verdict:</b> {html.escape(judged.line)}</p>",
        "<h2>Best speedup over steps</h2>",
        image("best_speedup.png", f"best {speedup_label(baseline)} over steps, questions coloured by kind"),
        f"<h2>Questions by kind</h2><p>A large gain is a new best at least {threshold:g}x the best before it; "
        f"it is attributed to the latest question when it came within the next {k} evaluations and "
        "before the next question.</p>",
        _table(kind_table([analysis]), [("kind", "kind"), ("asked", "questions asked"),
                                       ("large_gains", "large gains that followed"),
                                       ("mean_gain_after", "mean gain after")], "kinds"),
        "<h2>Questions</h2>",
        _table(asks, [("step", "step"), ("decision_point", "decision point"), ("kind", "kind"),
                      ("source", "source"), ("chooser", "chosen by"), ("text", "question"), ("before", "best before"),
                      ("after", "best after"), ("gain", "gain"), ("large_gains", "large gains")], "questions"),
        "<h2>Large gains</h2>",
        _table(gains_table([analysis]), [("candidate", "candidate"), ("step", "step"), ("speedup", "speedup"),
                                         ("ratio", "gain"), ("question_kind", "after a question of kind"),
                                         ("question", "question")], "gains"),
        "<h2>Per-scenario speedups of the best kernel</h2>",
        image("scenarios.png", f"per-scenario {speedup_label(baseline)}s of the best kernel"),
        _table(scen_rows, [("scenario", "scenario"), ("speedup", "speedup")], "scenarios") if scen_rows
        else f"<p>{html.escape(note or '')}</p>",
        "<h2>Hold-out of the best kernel</h2>",
        f'<p data-holdout="best">{html.escape(describe_holdout(held))}. The hold-out is drawn from the task\'s '
        "scenario distribution, afresh for every full judgement, and never shown to the worker; the best is "
        "chosen on the suite alone, so the gap says how far the suite's speedup carries to unseen shapes.</p>",
        _table(held_rows, [("scenario", "hold-out scenario"), ("speedup", "speedup")], "holdout") if held_rows else "",
        "<h2>Sanitizer gate</h2>",
        "<p>A candidate that would have become the best ran first under compute-sanitizer (memcheck, racecheck, "
        "initcheck, synccheck) on the task's sanitizer suite; a finding kept it from becoming the best.</p>",
        _table(san_rows, [("candidate", "candidate"), ("step", "step"), ("passed", "verdict"), ("tools", "tools"),
                          ("reason", "first finding")], "sanitizer") if san_rows
        else "<p data-sanitizer='none'>No sanitizer gate ran in this run.</p>",
        "<h2>Cost over time</h2>",
        image("cost.png", "model dollars and tokens over time"),
        "</body></html>",
    ]
    page = out / "report.html"
    page.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return page
