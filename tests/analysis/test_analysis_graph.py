"""`kernelseek trace analyze`: the run graph, attribution of large gains, and the per-kind table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelseek.analysis.graph import analyze_run, gains_table, kind_table, run_table
from kernelseek.cli import app
from kernelseek.trace import TraceError

SESSIONS = Path(__file__).parents[1] / "fixtures" / "sessions"
A, B = SESSIONS / "session-a", SESSIONS / "session-b"

EXPECTED_KINDS = [
    {"kind": "layer_shift", "asked": 5, "large_gains": 4, "mean_gain_after": 1.1601, "workers": "scripted"},
    {"kind": "reject_limit", "asked": 5, "large_gains": 3, "mean_gain_after": 1.1841, "workers": "scripted"},
    {"kind": "inform", "asked": 4, "large_gains": 0, "mean_gain_after": 1.0068, "workers": "scripted"},
    {"kind": "other", "asked": 5, "large_gains": 0, "mean_gain_after": 1.0057, "workers": "scripted"},
]
EXPECTED_GAINS = [  # (run, candidate, ratio, kind of the question it is attributed to)
    ("session-a", "c2", 1.4286, "reject_limit"), ("session-a", "c8", 1.3115, "reject_limit"),
    ("session-a", "c10", 1.1875, "layer_shift"), ("session-a", "c12", 1.1042, "layer_shift"),
    ("session-b", "c1", 1.1333, "reject_limit"), ("session-b", "c7", 1.3889, "layer_shift"),
    ("session-b", "c8", 1.12, "layer_shift"), ("session-b", "c14", 1.2281, None),  # beyond K: unattributed
]


def test_the_attribution_table():
    runs = [analyze_run(A), analyze_run(B)]
    assert kind_table(runs) == EXPECTED_KINDS
    assert [(g["run"], g["candidate"], g["ratio"], g["question_kind"]) for g in gains_table(runs)] == EXPECTED_GAINS
    rows = {r["run"]: r for r in run_table(runs)}
    assert rows["session-a"] == {"run": "session-a", "worker": "scripted", "mode": "human", "steps": 13, "evaluations": 14, "wrong": 2,
                                 "model_calls": 13, "tool_calls": 29, "questions": 9, "large_gains": 4,
                                 "attributed": 4, "plateau_step": 12, "best_speedup": 1.06, "cost_usd": 0.16}
    assert (rows["session-b"]["evaluations"], rows["session-b"]["wrong"], rows["session-b"]["attributed"]) == (16, 2, 3)


def test_the_threshold_and_window_are_configurable():
    runs = [analyze_run(A, threshold=1.3), analyze_run(B, threshold=1.3)]
    assert [(g["candidate"], g["question_kind"]) for g in gains_table(runs)] == [
        ("c2", "reject_limit"), ("c8", "reject_limit"), ("c7", "layer_shift")]
    wide = analyze_run(B, k=10)  # c14 now falls inside the last claimed-limit question's window
    assert [g.question_seq is not None for g in wide.large_gains] == [True, True, True, True]


def test_the_run_graph():
    run = analyze_run(A)
    g = run.graph
    kinds = {}
    for _, data in g.nodes(data=True):
        kinds[data["kind"]] = kinds.get(data["kind"], 0) + 1
    assert kinds == {"step": 14, "candidate": 14, "evaluation": 22, "decision": 9, "question": 9, "gain": 8}
    # lineage: each edit started from the best candidate of its time
    assert g.edges["cand:c1", "cand:c2"]["rel"] == "edited_from"
    assert g.edges["cand:c2", "cand:c3"]["rel"] == "edited_from"
    assert set(g.predecessors("cand:c9")) >= {"cand:c8"}
    preceded = [(u, v) for u, v, d in g.edges(data=True) if d["rel"] == "preceded"]
    assert len(preceded) == 4
    question = next(u for u, v in preceded if v == "gain:c10")
    assert g.nodes[question]["question_kind"] == "layer_shift" and "compiler" in g.nodes[question]["text"]
    assert any(g.edges[u, question]["rel"] == "prompted" for u in g.predecessors(question))
    assert g.nodes["step:9"]["tool_calls"] == 2 and g.nodes["step:9"]["cost_usd"] == pytest.approx(0.01)


def test_the_claim_totals_plateau_steps_and_verdict_match_the_fixtures():
    from kernelseek.analysis.claim import CLAIM, totals, verdict

    runs = [analyze_run(A), analyze_run(B)]
    # what make_sessions.py wrote: 9 + 10 human messages (each put as a question), 29 + 31 tool calls on the
    # model's replies, 14 + 16 candidates of which 2 + 2 were wrong, 4 + 4 large gains
    assert totals(runs) == {"runs": 2, "human_messages": 19, "questions": 19, "questions_by_source": {"human": 19},
                            "tool_calls": 60, "evaluations": 30, "wrong_candidates": 4, "large_gains": 8}
    # the last large gains: a/c12 (x1.104 at step 12), b/c14 (x1.23 at step 14)
    assert [r.plateau_step for r in runs] == [12, 14]
    judged = verdict(runs)
    assert judged.holds is False and judged.line.startswith(f"{CLAIM}: fails (1 of 8 large gains: session-b c14")
    assert [(b["run"], b["candidate"], b["question_kind"]) for b in judged.breaking] == [("session-b", "c14", None)]
    # 8 large gains: enough for a verdict, with its counts, intervals and test, and the worker named scripted
    assert "7 of 8 large gains after one (95% interval of the share" in judged.line
    assert "a large gain followed 7/10 layer-shift or reject-limit questions (0.70, 95% interval 0.39-0.91)" in judged.line
    assert "and 0/4 inform questions (0.00, 95% interval 0.00-0.44)" in judged.line
    assert "difference +0.70 (95% interval +0.16 to +0.87), one-sided permutation test p = 0.035" in judged.line
    assert "the worker is scripted" in judged.line and judged.evidence["scripted_runs"] == 2
    # one run's 4 large gains are fewer than a verdict needs, whatever they followed
    one = verdict([runs[0]])
    assert one.holds is None and one.status == "insufficient evidence"
    assert one.line.startswith(f"{CLAIM}: insufficient evidence (4 large gain(s) in 1 run(s), fewer than the 5")
    # with a window of 10, c14 follows the claimed-limit question (reject_limit): the claim holds
    assert verdict([analyze_run(A, k=10), analyze_run(B, k=10)]).holds is True
    assert "insufficient evidence (0 large gain(s)" in verdict([analyze_run(A, threshold=2.0)]).line


def test_cli_analyze_prints_the_totals_and_the_verdict():
    result = CliRunner().invoke(app, ["trace", "analyze", str(A), str(B)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert ("totals over 2 run(s): 19 human messages, 19 questions (19 human), 60 tool calls, 30 evaluations, "
            "4 wrong candidates, 8 large gains") in result.output
    verdict_line = [line for line in result.output.splitlines() if line.startswith("verdict: ")]
    assert len(verdict_line) == 1 and "fails (1 of 8 large gains: session-b c14" in verdict_line[0]


def test_analyze_with_a_model_classifies_unrecorded_kinds(tmp_path, monkeypatch):
    import kernelseek.analysis.graph as graph_module

    model = tmp_path / "classifier.json"
    model.write_text(json.dumps([{"content": '{"kind": "inform", "rewrite": "A question."}'}]))
    graph_module._model_kind.cache_clear()
    run = analyze_run(A, model=f"scripted/{model}")
    assert {a.kind for a in run.asks} == {"inform"}  # every human question of the fixture records no kind
    result = CliRunner().invoke(app, ["trace", "analyze", str(A), "--json", "--model", f"scripted/{model}"])
    data = json.loads(result.output)
    assert data["classifier"] == f"model:scripted/{model}" and data["kinds"][2] == {
        "kind": "inform", "asked": 9, "large_gains": 4, "mean_gain_after": data["kinds"][2]["mean_gain_after"],
        "workers": "scripted"}
    # gains after inform questions break the claim, but one run's 4 large gains are too few for a verdict
    assert data["verdict"]["status"] == "insufficient evidence" and len(data["verdict"]["breaking"]) == 4
    graph_module._model_kind.cache_clear()


def test_cli_analyze_json_matches():
    result = CliRunner().invoke(app, ["trace", "analyze", str(A), str(B), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["kinds"] == EXPECTED_KINDS and len(data["large_gains"]) == 8 and data["k"] == 3
    assert data["totals"]["human_messages"] == 19 and data["verdict"]["holds"] is False
    assert [r["plateau_step"] for r in data["runs"]] == [12, 14]


def test_cli_analyze_table_and_graphml(tmp_path):
    result = CliRunner().invoke(app, ["trace", "analyze", str(A), str(B), "--graph", str(tmp_path)],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "questions by kind" in result.output and "reject_limit" in result.output
    import networkx as nx

    assert nx.read_graphml(tmp_path / "session-a.graphml").number_of_nodes() == 76


def broken_copy(tmp_path: Path, edit) -> Path:
    folder = tmp_path / "broken"
    shutil.copytree(A, folder)
    lines = (folder / "trace.jsonl").read_text().splitlines()
    edit(lines)
    (folder / "trace.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def corrupt_middle(lines):
    lines[20] = lines[20][:30]


def unknown_kind(lines):
    event = json.loads(lines[10])
    event["question_kind"] = "hint"
    lines[10] = json.dumps(event)


@pytest.mark.parametrize("edit, words", [
    (corrupt_middle, "line 21: not valid JSON"),
    (unknown_kind, "line 11: the question kind 'hint' is unknown"),
])
def test_bad_traces_give_one_sentence(tmp_path, edit, words):
    folder = broken_copy(tmp_path, edit)
    with pytest.raises(TraceError, match=words):
        analyze_run(folder)
    for args in (["trace", "analyze", str(folder)], ["report", str(folder), "--out", str(tmp_path / "r")]):
        result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
        assert result.exit_code == 1
        assert "Traceback" not in result.output and words in result.output
        assert len([line for line in result.output.splitlines() if line.strip()]) == 1


def test_a_truncated_trace_is_analysed_up_to_the_cut(tmp_path):
    def truncate(lines):
        del lines[60:]
        lines[-1] = lines[-1][:40]  # the crash cut the last line short

    run = analyze_run(broken_copy(tmp_path, truncate))
    assert len(run.events) == 59 and run.best is not None
