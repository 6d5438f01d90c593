"""Situation-aware question choice (kernelseek/agent/chooser.py): the situation and its features, the
contextual policy's offer, a scripted chooser model that picks, and the policy that picks without one —
each recorded in the trace."""

from __future__ import annotations

import json

from loop_support import bank_copy, events, invoke, script

from kernelseek.agent.chooser import POLICY, chooser_model, parse_choice, report_facts, situation_of
from kernelseek.bank.model import load_bank, load_stats
from kernelseek.bank.policy import feature_stats, offer, record_run_outcomes

REPORT = """quick judgement of k.cpp on cpu: correct on all 12 scenarios; geomean speedup over torch 0.842x
  group small: 0.512x over 4 scenarios
  group large: 1.105x over 8 scenarios
  slowest: s1 0.40x, s2 0.51x"""


def test_the_situation_and_its_features():
    state = {"worker_words": "The kernel is memory-bound now; I will stop here.", "last_report": REPORT}
    situation = situation_of(state, "claimed_limit", "The kernel is memory-bound now;")
    assert situation.features == ["point:claimed_limit", "claim:memory", "report:below_baseline",
                                  "report:uneven_groups"]
    assert situation.slow_and_fast() == (["small 0.51x"], ["large 1.10x"])
    text = situation.describe()
    assert "slow groups: small 0.51x" in text and "Claimed limit: The kernel is memory-bound now;" in text
    failing = situation_of({"last_report": "quick judgement of k on cpu: INCORRECT. 3 scenarios failed"}, "failing", "3")
    assert failing.features == ["point:failing", "claim:none", "report:incorrect"]
    assert report_facts("")["correct"] is None


def test_a_chooser_reply_is_parsed_or_refused():
    offered = [{"id": "a"}, {"id": "b"}, {"id": "c"}]
    assert parse_choice('{"choice": 2, "reason": "it fits"}', offered) == (1, "it fits")
    assert parse_choice('Sure! {"choice": "c", "reason": "x"}', offered) == (2, "x")
    assert parse_choice('{"choice": 7}', offered)[0] is None
    assert parse_choice("the second one", offered) == (None, "the chooser's reply was not the JSON asked for")


class Cfg:
    def __init__(self, **kw):
        self.__dict__.update({"model": None, "worker_command": None, "chooser_model": None, **kw})


def test_which_model_chooses():
    assert chooser_model(Cfg(model="anthropic/claude-sonnet-4-5")) == "anthropic/claude-sonnet-4-5"  # the worker's own
    assert chooser_model(Cfg(model="anthropic/claude-sonnet-4-5", chooser_model="policy")) is None
    assert chooser_model(Cfg(model="scripted/w.json")) is None  # a scripted worker is no model to ask
    assert chooser_model(Cfg(model="scripted/w.json", chooser_model="scripted/c.json")) == "scripted/c.json"
    assert chooser_model(Cfg(worker_command="claude -p {prompt}")) is None


def test_the_contextual_policy_learns_per_situation(tmp_path):
    bank = bank_copy(tmp_path)
    fitting = sorted(q.id for q in load_bank(bank) if "claimed_limit" in q.fits)
    winner, loser = fitting[0], fitting[1]
    runs = {}
    for i in range(12):  # winner gained after memory claims; loser did not
        runs[f"r{i}"] = {"outcomes": [
            {"id": winner, "seq": 1, "gain": 1.3, "success": True, "features": ["claim:memory"]},
            {"id": loser, "seq": 2, "gain": 1.0, "success": False, "features": ["claim:memory"]}]}
    (tmp_path / "stats.json").write_text(json.dumps({"version": 1, "runs": runs}))
    assert feature_stats(load_stats(tmp_path / "stats.json"))[(winner, "claim:memory")] == {"scored": 12, "successes": 12}
    top = [offer("claimed_limit", [], seed=s, k=4, features=["claim:memory"], bank_dir=bank,
                 stats=tmp_path / "stats.json")[0]["id"] for s in range(40)]
    assert top.count(winner) > top.count(loser) and top.count(winner) >= 20
    offered = offer("claimed_limit", [], seed=3, k=4, features=["claim:memory"], bank_dir=bank, stats=tmp_path / "stats.json")
    assert len(offered) == 4 and all(q["id"] in fitting for q in offered)
    assert [q["score"] for q in offered] == sorted((q["score"] for q in offered), reverse=True)


def _session(tmp_path, monkeypatch, name: str, *extra: str):
    monkeypatch.setenv("KERNELSEEK_BANK", str(bank_copy(tmp_path)))
    worker = script(tmp_path / f"{name}-worker.json", [
        {"content": "I fused the passes. The kernel is memory-bound now; I will stop here."},
        {"content": "Counting the bytes again."}])
    runs = tmp_path / "runs"
    result = invoke(["run", "rmsnorm_cpu", "--model", worker, "--mode", "auto", "--no-judge-start", "--max-steps", "2",
                     "--bank-stats", str(tmp_path / "stats.json"), "--runs-dir", str(runs), "--run-id", name, *extra])
    assert result.exit_code == 0, result.output
    question, = events(runs / name, "question")
    decision, = events(runs / name, "decision_point")
    assert decision["kind"] == "claimed_limit"
    return runs / name, question


def test_a_scripted_chooser_model_is_offered_the_fitting_questions_and_picks_one(tmp_path, monkeypatch):
    chooser = script(tmp_path / "chooser.json", [
        {"content": '{"choice": 2, "reason": "the worker claims a memory bound; make it count the bytes"}'}])
    run, question = _session(tmp_path, monkeypatch, "chosen", "--chooser-model", chooser)
    fits = {q.id: q.fits for q in load_bank()}
    assert question["chooser"] == f"model:{chooser}"
    assert len(question["offered"]) == 4 and all("claimed_limit" in fits[i] for i in question["offered"])
    assert question["bank_id"] == question["offered"][1]  # the model's choice, not the policy's first
    assert question["reason"] == "the worker claims a memory bound; make it count the bytes"
    assert "claim:memory" in question["features"] and question["situation"]["claimed_limit"].startswith("The kernel")
    shown = invoke(["trace", "show", "chosen", "--runs-dir", str(run.parent)])
    assert shown.exit_code == 0 and "chosen by" in shown.output and "why:" in shown.output
    # the outcome the run recorded keeps the situation's features, so the policy learns per situation
    record_run_outcomes(run, tmp_path / "stats.json")
    outcome, = next(iter(load_stats(tmp_path / "stats.json")["runs"].values()))["outcomes"]
    assert outcome["id"] == question["bank_id"] and "claim:memory" in outcome["features"]
    data = json.loads(invoke(["trace", "analyze", str(run), "--json"]).output)
    assert data["choosers"] == [{"chooser": f"model:{chooser}", "asked": 1, "large_gains": 0, "mean_gain_after": None,
                                 "workers": "scripted"}]


def test_without_a_chooser_the_contextual_policy_picks(tmp_path, monkeypatch):
    _, question = _session(tmp_path, monkeypatch, "policy")
    assert question["chooser"] == POLICY and question["bank_id"] == question["offered"][0]
    assert question["reason"].startswith("highest sampled score") and "claim:memory" in question["reason"]


def test_an_unusable_chooser_reply_falls_back_to_the_policy(tmp_path, monkeypatch):
    chooser = script(tmp_path / "chooser.json", [{"content": "I like the third."}])
    _, question = _session(tmp_path, monkeypatch, "fallback", "--chooser-model", chooser)
    assert question["chooser"] == POLICY and question["bank_id"] == question["offered"][0]
    assert "not the JSON asked for, so the policy chose" in question["reason"]


def test_a_memory_limit_claimed_in_words_no_rule_quotes_gets_a_reject_limit_question(tmp_path, monkeypatch):
    """The loop end to end: the worker claims a memory limit in its own words (no rule holds "stream at what
    the HBM can physically sustain" or "nothing more to win"); the questioner hears the claim, reads it as a
    memory claim, and asks a question that rejects the limit, not one that only informs."""
    from kernelseek.agent.claims import CUES

    words = "The loads stream at what the HBM can physically sustain, so there is nothing more to win here."
    assert not any(phrase in c.pattern for c in CUES for phrase in ("physically sustain", "more to win", "stream at"))
    monkeypatch.setenv("KERNELSEEK_BANK", str(bank_copy(tmp_path)))
    worker = script(tmp_path / "worker.json", [{"content": words}, {"content": "Counting the bytes again."}])
    runs = tmp_path / "runs"
    result = invoke(["run", "rmsnorm_cpu", "--model", worker, "--mode", "auto", "--no-judge-start", "--max-steps", "2",
                     "--runs-dir", str(runs), "--run-id", "unquoted"])
    assert result.exit_code == 0, result.output
    decision, = events(runs / "unquoted", "decision_point")
    question, = events(runs / "unquoted", "question")
    assert decision["kind"] == "claimed_limit" and decision["detail"] == words
    assert "claim:memory" in question["features"]
    assert question["question_kind"] == "reject_limit", question["text"]
    assert question["step"] == decision["step"]
    # one scripted run is no evidence for the method: trace analyze says so, and names the worker scripted
    analysed = invoke(["trace", "analyze", str(runs / "unquoted")])
    assert analysed.exit_code == 0, analysed.output
    verdict = next(line for line in analysed.output.splitlines() if line.startswith("verdict: "))
    assert "insufficient evidence (0 large gain(s) in 1 run(s), fewer than the 5 a verdict needs" in verdict
    assert "the worker is scripted" in verdict
    data = json.loads(invoke(["trace", "analyze", str(runs / "unquoted"), "--json"]).output)
    assert data["runs"][0]["worker"] == "scripted" and data["verdict"]["status"] == "insufficient evidence"
