"""An experiment's figures from run traces written by hand: per-run metrics, the per-graph medians and spreads,
and the table and page that show them."""

from __future__ import annotations

import json
from pathlib import Path

from kernelseek.experiment.config import Experiment, GraphSpec
from kernelseek.experiment.metrics import graph_summary, run_metrics
from kernelseek.experiment.report import write_report
from kernelseek.trace import TraceWriter


def fake_run(folder: Path, *, start: float, gains: list[tuple[int, float]], steps: int, cost: float | None = 0.01,
             wrong_at: tuple[int, ...] = (), questions: tuple[int, ...] = (), tools: tuple[str, ...] = (),
             end: bool = True) -> Path:
    """A trace: the start judged, one model call per step (with `tools` at step 1 and evaluate where a
    candidate is judged), wrong candidates, gains (step, new best) and questions."""
    t = TraceWriter(folder / "trace.jsonl")
    common = dict(path="p", sha256="s", report="r", reason=None)
    t.write("run_start", step=0, key="start", task="t", kernel="k", arch="cpu", mode="auto", graph="g", worker="w",
            target=None, budgets={})
    t.write("evaluation", step=0, key="e0q", candidate=0, parent=None, judgement="quick", correct=True,
            speedup=start * 1.1, best=False, **common)
    t.write("evaluation", step=0, key="e0f", candidate=0, parent=None, judgement="full", correct=True, speedup=start,
            best=True, **common)
    judged = {s for s, _ in gains} | set(wrong_at)
    n, best = 0, start
    for step in range(1, steps + 1):
        calls = [{"name": name, "arguments": {}} for name in (tools if step == 1 else ())]
        if step in judged:
            calls.append({"name": "evaluate", "arguments": {}})
        t.write("model_call", step=step, key=f"m{step}", model="m", prompt_tokens=100, completion_tokens=10,
                cost_usd=cost, content="", tool_calls=calls)
        if step in judged:
            n += 1
            gain = dict(gains).get(step)
            t.write("evaluation", step=step, key=f"e{n}", candidate=n, parent=n - 1, judgement="quick",
                    correct=step not in wrong_at, speedup=None if step in wrong_at else (gain or best * 0.9),
                    best=False, **common)
            if gain:
                best = gain
                t.write("evaluation", step=step, key=f"e{n}f", candidate=n, parent=n - 1, judgement="full",
                        correct=True, speedup=gain, best=True, **common)
        if step in questions:
            t.write("decision_point", step=step, key=f"d{step}", kind="done", detail="", worker_words="")
            t.write("question", step=step, key=f"q{step}", text="Where does the time go?", source="bank",
                    bank_id="b1", question_kind="layer_shift", decision_point="done")
    if end:
        t.write("run_end", step=steps, key="end", reason="step budget spent", best_speedup=best, steps=steps,
                cost_usd=(cost or 0) * steps)
    return folder


def test_run_metrics(tmp_path):
    run = fake_run(tmp_path / "a", start=2.0, gains=[(3, 2.3), (5, 2.6)], steps=6, wrong_at=(2,), questions=(4,),
                   tools=("compiled_code", "profile"))
    m = run_metrics(run, graph="kernelseek", repeat=0, seed=7, levels=[1.1, 1.2, 2.0], basis="start")
    assert m.finished and m.start_speedup == 2.0 and m.best_speedup == 2.6 and m.steps == 6
    assert m.curve == [(0, 2.0), (3, 2.3), (5, 2.6), (6, 2.6)]
    assert m.evaluations == 3 and m.wrong == 1 and m.questions == 1 and m.question_steps == [4]
    assert m.tool_calls == 5 and m.tool_counts == {"compiled_code": 1, "profile": 1, "evaluate": 3}
    assert m.reach["1.1"] == {"step": 3, "cost_usd": 0.03, "tokens": 330}  # 2.3 >= 1.1 * 2.0
    assert m.reach["1.2"] == {"step": 5, "cost_usd": 0.05, "tokens": 550}  # 2.6 >= 2.4
    assert m.reach["2"] is None
    assert m.cost_usd == 0.06 and m.tokens == 660 and m.unpriced_calls == 0
    absolute = run_metrics(run, graph="g", repeat=0, seed=0, levels=[2.5], basis="baseline")
    assert absolute.reach["2.5"]["step"] == 5
    unfinished = run_metrics(fake_run(tmp_path / "b", start=1.0, gains=[], steps=2, end=False, cost=None),
                             graph="g", repeat=0, seed=0, levels=[], basis="start")
    assert not unfinished.finished and unfinished.steps == 2 and unfinished.unpriced_calls == 2


def test_summary_table_and_page(tmp_path):
    runs = [
        run_metrics(fake_run(tmp_path / "k0", start=2.0, gains=[(2, 2.5)], steps=3, questions=(1,)),
                    graph="kernelseek", repeat=0, seed=0, levels=[1.2], basis="start"),
        run_metrics(fake_run(tmp_path / "k1", start=2.0, gains=[(4, 3.0)], steps=5, questions=(1, 3)),
                    graph="kernelseek", repeat=1, seed=1, levels=[1.2], basis="start"),
        run_metrics(fake_run(tmp_path / "k2", start=2.0, gains=[], steps=6, wrong_at=(2, 3)),
                    graph="kernelseek", repeat=2, seed=2, levels=[1.2], basis="start"),
        run_metrics(fake_run(tmp_path / "t0", start=2.2, gains=[], steps=6, wrong_at=(5,),
                             tools=("profile", "search_docs", "lessons")),
                    graph="tool_rich", repeat=0, seed=0, levels=[1.2], basis="start"),
    ]
    s = graph_summary("kernelseek", runs[:3], [1.2])
    assert s["finished"] == 3 and s["best_speedup_median"] == 2.5
    assert (s["best_speedup_min"], s["best_speedup_max"]) == (2.0, 3.0)
    assert s["reach"]["1.2"] == {"reached": 2, "of": 3, "median_steps": 3.0, "median_cost_usd": 0.03,
                                 "median_tokens": 330.0}
    assert s["evaluations_median"] == 1 and s["wrong_median"] == 0 and s["questions_median"] == 1

    experiment = Experiment(path=tmp_path / "e.yaml", name="demo", task="/t/rmsnorm_cpu", kernel="/k/seed.cpp",
                            arch="cpu", graphs=[GraphSpec("kernelseek", "m", None), GraphSpec("tool_rich", "m", None)],
                            repeats=3, seeds=[0, 1, 2], levels=[1.2], level_basis="start")
    results = write_report(experiment, runs, tmp_path / "out", missing=["tool_rich-r1", "tool_rich-r2"])
    assert [g["graph"] for g in results["graphs"]] == ["kernelseek", "tool_rich"]
    table = (tmp_path / "out" / "table.md").read_text()
    # the plateau step (median over the runs with a large gain: steps 2 and 4) and the worker are columns
    assert s["plateau_median"] == 3 and s["workers"] == "w"
    assert "| kernelseek | 3/3 | 2.500x [2.000–3.000] | 3 (2/3) | $0.0300 | 3 | 1 | 0 | 1 | 1 | 5 | $0.0500 | w |" in table
    assert "| tool_rich | 1/1 | 2.200x [2.200–2.200] | — (0/1) | — | — | 1 | 1 | 4 | 0 | 6 | $0.0600 | w |" in table
    page = (tmp_path / "out" / "index.html").read_text()
    assert "2.500x [2.000–3.000]" in page and "Not finished: tool_rich-r1, tool_rich-r2" in page
    assert 'src="data:image/png;base64,' in page and (tmp_path / "out" / "curves.png").stat().st_size > 5000
    assert "profile 1, search_docs 1, lessons 1, evaluate 1" not in page  # tools are listed sorted
    assert "evaluate 1, lessons 1, profile 1, search_docs 1" in page
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["runs"][1]["curve"] == [[0, 2.0], [4, 3.0], [5, 3.0]] and saved["missing"] == ["tool_rich-r1",
                                                                                                "tool_rich-r2"]
