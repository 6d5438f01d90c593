"""The auto-mode policy and the outcome statistics it learns from."""

from __future__ import annotations

import collections
import json
import shutil
from pathlib import Path

import pytest
import yaml

from kernelseek.bank import record_run_outcomes, select_question
from kernelseek.bank.model import BankError, aggregate_stats, default_bank_dir, load_stats
from kernelseek.trace import DECISION_POINTS, TraceWriter


@pytest.fixture()
def seed_bank(tmp_path) -> Path:
    folder = tmp_path / "bank"
    folder.mkdir()
    shutil.copy(default_bank_dir() / "seed.yaml", folder / "seed.yaml")
    return folder


def small_bank(tmp_path: Path, ids: list[str], fits: list[str] | None = None) -> Path:
    folder = tmp_path / "small"
    folder.mkdir(exist_ok=True)
    questions = [{"id": qid, "text": f"Question {qid}?", "kind": "layer_shift", "fits": fits or ["plateau"]}
                 for qid in ids]
    (folder / "seed.yaml").write_text(yaml.safe_dump({"questions": questions}))
    return folder


def test_deterministic_under_a_seed(seed_bank):
    for point in DECISION_POINTS:
        first = select_question(point, ["ls-data-path"], seed=11, bank_dir=seed_bank)
        again = select_question(point, ["ls-data-path"], seed=11, bank_dir=seed_bank)
        assert first == again
    chosen = {select_question("plateau", [], seed=s, bank_dir=seed_bank)["id"] for s in range(30)}
    assert len(chosen) > 5  # different seeds explore different questions


def test_only_questions_that_fit_the_decision_point(seed_bank):
    from kernelseek.bank.model import load_bank

    fits = {q.id: q.fits for q in load_bank(seed_bank)}
    for point in DECISION_POINTS:
        for seed in range(25):
            question = select_question(point, [], seed=seed, bank_dir=seed_bank)
            assert point in fits[question["id"]]
            assert set(question) >= {"id", "text", "kind"}


def test_no_question_from_the_last_few_decision_points(seed_bank):
    for seed in range(10):
        asked: list[str] = []
        for _ in range(12):
            question = select_question("failing", asked, seed=seed, bank_dir=seed_bank)
            assert question["id"] not in asked[-3:]
            asked.append(question["id"])


def test_relaxes_when_the_bank_is_small(tmp_path):
    bank = small_bank(tmp_path, ["a", "b"])
    assert select_question("plateau", ["a", "b"], seed=1, bank_dir=bank)["id"] == "a"  # not the last one
    with pytest.raises(BankError, match="no question that fits the decision point 'done'"):
        select_question("done", [], seed=1, bank_dir=bank)
    with pytest.raises(BankError, match="the decision point 'stuck' is unknown"):
        select_question("stuck", [], seed=1, bank_dir=bank)


def write_stats(bank: Path, per_question: dict[str, tuple[int, int]]) -> None:
    runs = {}
    for qid, (wins, losses) in per_question.items():
        for i in range(wins + losses):
            win = i < wins
            runs.setdefault(f"run-{i}", {"outcomes": []})["outcomes"].append(
                {"id": qid, "seq": 1, "before": 1.0, "after": 1.3 if win else 1.0, "gain": 1.3 if win else 1.0,
                 "success": win})
    (bank / "stats.json").write_text(json.dumps({"version": 1, "runs": runs}))


def test_exploits_questions_that_preceded_gains(tmp_path):
    bank = small_bank(tmp_path, ["winner", "loser1", "loser2", "loser3"])
    write_stats(bank, {"winner": (9, 1), "loser1": (0, 10), "loser2": (1, 9), "loser3": (0, 10)})
    picks = collections.Counter(select_question("plateau", [], seed=s, bank_dir=bank, stats=bank)["id"] for s in range(200))
    assert picks["winner"] >= 180


def test_explores_untried_questions_over_proven_losers(tmp_path):
    bank = small_bank(tmp_path, ["untried", "loser"])
    write_stats(bank, {"loser": (0, 12)})
    picks = collections.Counter(select_question("plateau", [], seed=s, bank_dir=bank, stats=bank)["id"] for s in range(200))
    assert picks["untried"] >= 170 and picks["loser"] >= 1


def test_learned_outcomes_from_human_sessions_count_as_evidence(tmp_path):
    bank = small_bank(tmp_path, ["plain"])
    learned = {"questions": [{"id": "human-win", "text": "Which ceiling?", "kind": "reject_limit",
                              "fits": ["plateau"], "outcomes": {"asked": 6, "scored": 6, "successes": 6,
                                                                "mean_gain": 1.3}}]}
    (bank / "learned-humans.yaml").write_text(yaml.safe_dump(learned))
    write_stats(bank, {"plain": (0, 3)})
    picks = collections.Counter(select_question("plateau", [], seed=s, bank_dir=bank, stats=bank)["id"] for s in range(100))
    assert picks["human-win"] >= 90


def scripted_run(folder: Path, *, asks: list[tuple[str, str]], speedups: list[list[float]]) -> Path:
    """A run: seed 1.0, then per ask a question followed by candidates (each a new best if faster)."""
    writer = TraceWriter(folder / "trace.jsonl")
    writer.write("run_start", step=0, key="start", task="t", kernel="k", arch="cpu", mode="auto",
                 graph="kernelseek", worker="scripted", target=2.0, budgets={})
    best = 1.0
    n = 0

    def evaluate(speedup: float, step: int) -> None:
        nonlocal best, n
        is_best = speedup > best
        best = max(best, speedup)
        writer.write("evaluation", step=step, key=f"eval-{n}", candidate=f"c{n}", parent=None, path="x",
                     sha256="0", judgement="full", correct=True, speedup=speedup, reason=None, best=is_best or n == 0,
                     report=None)
        n += 1

    evaluate(1.0, 0)
    for i, ((point, qid), later) in enumerate(zip(asks, speedups, strict=True), start=1):
        writer.write("decision_point", step=i, key=f"dp-{i}", kind=point, detail="", worker_words="")
        writer.write("question", step=i, key=f"q-{i}", text="...", source="bank", bank_id=qid,
                     question_kind="layer_shift", decision_point=point)
        for speedup in later:
            evaluate(speedup, i)
    return folder


def test_record_run_outcomes_is_idempotent_per_run(tmp_path):
    bank = small_bank(tmp_path, ["a", "b"])
    run = scripted_run(tmp_path / "runs" / "r1", asks=[("plateau", "a"), ("plateau", "b")],
                       speedups=[[0.9, 1.3], [1.31, 1.2, 1.25]])
    record_run_outcomes(run, bank)
    stats = load_stats(bank)
    assert list(stats["runs"]) == ["r1"]
    outcomes = {o["id"]: o for o in stats["runs"]["r1"]["outcomes"]}
    assert outcomes["a"]["gain"] == pytest.approx(1.3) and outcomes["a"]["success"] is True
    assert outcomes["b"]["gain"] == pytest.approx(1.31 / 1.3, abs=1e-4) and outcomes["b"]["success"] is False
    before = (bank / "stats.json").read_bytes()
    record_run_outcomes(run, bank)  # a second call (a resume after a crash) counts nothing twice
    assert (bank / "stats.json").read_bytes() == before
    assert aggregate_stats(load_stats(bank))["a"] == {"asked": 1, "scored": 1, "successes": 1, "mean_gain": 1.3}


def test_record_survives_a_torn_trace_and_updates_a_partial_record(tmp_path):
    bank = small_bank(tmp_path, ["a", "b"])
    run = scripted_run(tmp_path / "runs" / "r2", asks=[("plateau", "a")], speedups=[[1.0]])
    record_run_outcomes(run, bank)  # recorded mid-run (e.g. after a crash)
    assert aggregate_stats(load_stats(bank))["a"]["successes"] == 0
    with open(run / "trace.jsonl", "a") as f:
        f.write('{"seq": 99, "type": "evalu')  # the crash cut the last line short
    record_run_outcomes(run, bank)
    # the run resumes: the torn tail is dropped, and a gain follows within K evaluations
    writer = TraceWriter(run / "trace.jsonl")
    writer.write("evaluation", step=2, key="late", candidate="late", parent=None, path="x", sha256="0",
                 judgement="full", correct=True, speedup=1.5, reason=None, best=True, report=None)
    record_run_outcomes(run, bank)
    totals = aggregate_stats(load_stats(bank))["a"]
    assert totals["asked"] == 1 and totals["successes"] == 1


def test_record_rejects_a_corrupted_stats_file_without_touching_it(tmp_path):
    bank = small_bank(tmp_path, ["a"])
    (bank / "stats.json").write_text("{not json")
    run = scripted_run(tmp_path / "runs" / "r3", asks=[("plateau", "a")], speedups=[[1.2]])
    with pytest.raises(BankError, match="stats.json: not valid JSON"):
        record_run_outcomes(run, bank)
    assert (bank / "stats.json").read_text() == "{not json"


def test_select_question_reads_the_environment_bank(tmp_path, monkeypatch):
    bank = small_bank(tmp_path, ["only"], fits=list(DECISION_POINTS))
    monkeypatch.setenv("KERNELSEEK_BANK", str(bank))
    assert select_question("done", [], seed=3)["id"] == "only"


def test_flagged_questions_only_when_nothing_else_fits(tmp_path):
    bank = small_bank(tmp_path, ["clean"])
    flagged = {"questions": [{"id": "flagged", "text": "Use TMA here.", "kind": "inform", "fits": ["plateau"],
                              "flags": ["tma"], "outcomes": {"asked": 9, "scored": 9, "successes": 9}}]}
    (bank / "learned-humans.yaml").write_text(yaml.safe_dump(flagged))
    assert {select_question("plateau", [], seed=s, bank_dir=bank)["id"] for s in range(20)} == {"clean"}
    (bank / "seed.yaml").write_text(yaml.safe_dump({"questions": [
        {"id": "clean", "text": "Which layer?", "kind": "layer_shift", "fits": ["done"]}]}))
    assert select_question("plateau", [], seed=1, bank_dir=bank)["id"] == "flagged"


def _record(args):
    run, bank = args
    record_run_outcomes(Path(run), Path(bank))


def test_runs_ending_at_the_same_time_all_get_recorded(tmp_path):
    import multiprocessing

    bank = small_bank(tmp_path, ["a"])
    runs = [scripted_run(tmp_path / "runs" / f"r{i}", asks=[("plateau", "a")], speedups=[[1.2]]) for i in range(8)]
    with multiprocessing.get_context("fork").Pool(4) as pool:
        pool.map(_record, [(str(run), str(bank)) for run in runs])
    assert sorted(load_stats(bank)["runs"]) == [f"r{i}" for i in range(8)]
    assert aggregate_stats(load_stats(bank))["a"]["successes"] == 8


# --- the bank applied by situation -------------------------------------------------------------------

MEMORY_CLAIM = ["point:claimed_limit", "claim:memory", "report:below_baseline"]
LAUNCH_CLAIM = ["point:claimed_limit", "claim:launch", "report:below_baseline"]


def situational_stats(path: Path, qid: str, features: list[str], wins: int, losses: int = 0) -> Path:
    runs = {f"run-{i}": {"outcomes": [{"id": qid, "seq": 1, "gain": 1.3 if i < wins else 1.0, "success": i < wins,
                                       "features": features}]} for i in range(wins + losses)}
    path.write_text(json.dumps({"version": 1, "runs": runs}))
    return path


def top_picks(point: str, features: list[str], bank: Path, stats: Path | None, n: int = 200) -> collections.Counter:
    from kernelseek.bank.policy import offer

    return collections.Counter(offer(point, [], seed=s, k=1, features=features, bank_dir=bank, stats=stats,
                                     use_stats=stats is not None)[0]["id"] for s in range(n))


def test_a_question_that_keeps_paying_in_a_situation_is_chosen_there_most_of_the_time(seed_bank, tmp_path):
    from kernelseek.bank.model import load_bank

    # an inform question, the kind the prior puts last at a claimed limit, won 10 of 10 after memory claims
    winner = next(q.id for q in load_bank(seed_bank) if q.kind == "inform" and "claimed_limit" in q.fits)
    stats = situational_stats(tmp_path / "stats.json", winner, MEMORY_CLAIM, wins=10)
    here = top_picks("claimed_limit", MEMORY_CLAIM, seed_bank, stats)
    elsewhere = top_picks("claimed_limit", LAUNCH_CLAIM, seed_bank, stats)
    without = top_picks("claimed_limit", MEMORY_CLAIM, seed_bank, None)
    print(f"\n10 of 10 after memory claims: chosen {here[winner]}/200 there, {elsewhere[winner]}/200 after a launch "
          f"claim, {without[winner]}/200 with no statistics")
    assert here[winner] >= 120                      # most of the time in its situation
    assert elsewhere[winner] < here[winner] / 2     # its record elsewhere counts only pooled
    assert without[winner] <= 10


def test_a_question_about_a_claim_is_never_asked_when_nothing_was_claimed(seed_bank):
    from kernelseek.bank.model import load_bank
    from kernelseek.bank.policy import offer

    bank = {q.id: q for q in load_bank(seed_bank)}
    about_a_claim = {qid for qid, q in bank.items() if q.claims}
    assert {"rl-memory-bound", "rl-how-far"} <= about_a_claim
    for point in ("done", "plateau", "failing", "no_evaluation"):
        for seed in range(60):
            offered = offer(point, [], seed=seed, k=50, features=[f"point:{point}", "claim:none"], bank_dir=seed_bank,
                            use_stats=False)
            assert not about_a_claim & {q["id"] for q in offered}, point
            assert select_question(point, [], seed=seed, bank_dir=seed_bank)["id"] not in about_a_claim
    # at a launch claim, "You called it memory-bound" is not asked; at a memory claim it may be
    launch = {q["id"] for s in range(60) for q in offer("claimed_limit", [], seed=s, k=50, features=LAUNCH_CLAIM,
                                                        bank_dir=seed_bank, use_stats=False)}
    memory = {q["id"] for q in offer("claimed_limit", [], seed=1, k=50, features=MEMORY_CLAIM, bank_dir=seed_bank,
                                     use_stats=False)}
    assert "rl-memory-bound" not in launch and "rl-overhead-floor" in launch
    assert "rl-memory-bound" in memory and "rl-overhead-floor" not in memory


def test_without_statistics_the_kind_prior_puts_reject_limit_first_at_a_claimed_limit(seed_bank):
    from kernelseek.bank.model import load_bank

    kinds = {q.id: q.kind for q in load_bank(seed_bank)}
    claimed = collections.Counter(kinds[i] for i in top_picks("claimed_limit", MEMORY_CLAIM, seed_bank, None).elements())
    failing = collections.Counter(kinds[i] for i in top_picks("failing", ["point:failing", "claim:none",
                                                                          "report:incorrect"], seed_bank, None).elements())
    print(f"\nno statistics: at a memory claim {dict(claimed)}; at failing {dict(failing)}")
    assert claimed["reject_limit"] > 100 and claimed["inform"] + claimed["other"] < 20
    assert failing["reject_limit"] < failing["other"] + failing["layer_shift"]
