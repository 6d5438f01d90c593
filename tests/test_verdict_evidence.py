"""How sure a verdict is (kernelseek/analysis/evidence.py, kernelseek/analysis/claim.py): intervals and an exact
permutation test checked against values computed by hand, "insufficient evidence" below the stated number of
large gains, and forks counted as causal evidence by `kernelseek trace analyze`, with a scripted worker named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelseek.analysis.evidence import MIN_LARGE_GAINS, Comparison, one_sided_p, rate_interval
from kernelseek.cli import app
from kernelseek.trace import TraceWriter


def test_the_jeffreys_interval_and_the_exact_test_match_known_values():
    rate, low, high = rate_interval(3, 10)
    assert rate == 0.3 and low == pytest.approx(0.093, abs=0.01) and high == pytest.approx(0.606, abs=0.01)
    assert rate_interval(0, 0) == (None, 0.0, 1.0)
    # Fisher's one-sided exact test of 8/10 against 1/10: 9 successes in 20; sum over x >= 8 of C(9,x) C(11,10-x) / C(20,10)
    assert one_sided_p(8, 10, 1, 10) == pytest.approx((9 * 55 + 1 * 11) / 184756)
    assert one_sided_p(1, 1, 0, 0) is None


def test_below_the_stated_number_of_large_gains_there_is_no_verdict():
    few = Comparison("direction", 4, 4, "inform", 0, 4, MIN_LARGE_GAINS - 1)
    assert few.outcome() == "insufficient evidence"
    assert Comparison("direction", 8, 10, "inform", 1, 10, 9).outcome() == "supported"
    assert Comparison("direction", 1, 10, "inform", 8, 10, 9).outcome() == "contradicted"
    assert Comparison("direction", 3, 6, "inform", 2, 6, 5).outcome() == "not settled"


def write_fork(folder: Path, name: str, kind: str, speedup: float) -> None:
    """A fork's trace as `kernelseek fork` writes it: it starts at the parent's decision point (best 1.0x
    there), asks one question of `kind`, and judges one candidate at `speedup`."""
    trace = TraceWriter(folder / name / "trace.jsonl")
    trace.write("run_start", step=4, key="run_start", task="rmsnorm_cpu", kernel="seed.cpp", arch="cpu", mode="none",
                graph="kernelseek", worker="scripted/worker.json", target=None, budgets={},
                run_id=name, fork={"parent": "parent", "step": 4, "best_speedup": 1.0})
    trace.write("decision_point", step=4, key="4:questioner:decision", kind="done", detail="the worker stopped",
                worker_words="Done.")
    trace.write("question", step=4, key="4:questioner:question", text=f"A {kind} question?", source="bank",
                bank_id=None, question_kind=kind, decision_point="done", fork=True)
    gained = speedup > 1.0
    trace.write("evaluation", step=5, key="5:harness:1", candidate=1, parent=0, path="kernel.cpp", sha256=None,
                judgement="full", correct=True, speedup=speedup, reason=None, best=gained, report=None)
    trace.write("run_end", step=6, key="run_end", reason="budget", steps=6, best_speedup=max(speedup, 1.0), cost_usd=0.0)


def test_trace_analyze_on_enough_forks_gives_the_causal_verdict_with_its_interval(tmp_path):
    forks = tmp_path / "experiment" / "forks"
    for r in range(6):
        write_fork(forks, f"parent-at4-layer_shift-r{r}", "layer_shift", 1.5 if r < 5 else 1.0)
        write_fork(forks, f"parent-at4-inform-r{r}", "inform", 1.0 if r < 5 else 1.4)
    result = CliRunner().invoke(app, ["trace", "analyze", str(tmp_path / "experiment")])
    assert result.exit_code == 0, result.output
    verdict = next(line for line in result.output.splitlines() if line.startswith("verdict: "))
    assert "by forks (same prefix, a different question): supported (6 large gain(s) over 12 fork(s)" in verdict
    assert "a large gain followed 5/6 layer-shift or reject-limit forks (0.83, 95% interval" in verdict
    assert "and 1/6 inform forks (0.17, 95% interval" in verdict and "one-sided permutation test p = 0.040" in verdict
    assert "the worker is scripted" in verdict
    # every table marks the scripted worker
    for title in ("questions by kind", "runs", "large gains"):
        block = result.output.split(f"# {title}")[1].split("\n\n")[0].splitlines()
        assert "worker" in block[1].split("\t")[0:3] or "workers" in block[1].split("\t"), title
        rows = [row for row in block[2:] if row.split("\t")[1] != "0"]  # a kind never asked has no worker
        assert rows and all("scripted" in row.split("\t") for row in rows), title
    data = json.loads(CliRunner().invoke(app, ["trace", "analyze", str(tmp_path / "experiment"), "--json"]).output)
    causal = data["verdict"]["forks"]
    assert data["verdict"]["status"] == "supported" and data["verdict"]["holds"] is True
    assert causal["count"] == 12 and causal["a"]["large"] == 5 and causal["b"]["large"] == 1
    low, high = causal["difference_interval"]
    assert 0 < low < causal["difference"] < high


def test_a_fork_s_gain_is_measured_against_the_parent_s_best_at_the_fork_point(tmp_path):
    from kernelseek.analysis.graph import analyze_run

    write_fork(tmp_path, "f", "reject_limit", 12.0)
    run = analyze_run(tmp_path / "f")
    gain, = run.large_gains
    assert gain.ratio == pytest.approx(12.0) and gain.question_seq is not None and run.plateau_step == 5


def test_too_few_forks_are_insufficient_evidence(tmp_path):
    for r in range(2):
        write_fork(tmp_path, f"ls-{r}", "layer_shift", 1.5)
        write_fork(tmp_path, f"inf-{r}", "inform", 1.0)
    result = CliRunner().invoke(app, ["trace", "analyze", str(tmp_path), "--json"])
    verdict = json.loads(result.output)["verdict"]
    assert verdict["status"] == "insufficient evidence" and verdict["holds"] is None
    assert "2 large gain(s) over 4 fork(s), fewer than the 5 a verdict needs" in verdict["line"]
