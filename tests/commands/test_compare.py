"""`kernelseek compare`: two judgements side by side, each scenario's ratio against its band, the groups'
sign counts, and one sentence for files that cannot be compared."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelseek.cli import app
from kernelseek.harness.compare import (
    BROKE,
    FASTER,
    FIXED,
    SLOWER,
    UNTIMED,
    WITHIN,
    CompareError,
    compare,
    load_judgement,
)

REPO = Path(__file__).resolve().parents[2]


def result(name: str, speedup: float | None, *, correct: bool = True, group: str = "g", holdout: bool = False,
           spread: float = 0.01) -> dict:
    return {"scenario": name, "group": group, "correct": correct, "speedup": speedup if correct else None,
            "holdout": holdout, "spread": {"candidate": spread, "base": spread}}


def judgement(*scenarios: dict, task: str = "t", arch: str = "sm90", baseline: str = "base",
              sha: str = "a") -> dict:
    return {"task": task, "arch": arch, "baseline": baseline, "judgement": "full", "sha256": sha,
            "device": {"name": "GPU"}, "scenarios": list(scenarios)}


BEFORE = judgement(result("up", 1.0), result("down", 1.0), result("same", 1.0), result("breaks", 1.0),
                   result("mends", None, correct=False), result("wide", 1.0, spread=0.1, group="h"),
                   result("gone", 1.0), result("held", 0.8, holdout=True, group="holdout_g"))
AFTER = judgement(result("up", 1.2), result("down", 0.9), result("same", 1.02), result("breaks", None, correct=False),
                  result("mends", 1.1), result("wide", 1.3, spread=0.1, group="h"), result("new", 1.0),
                  result("held", 0.88, holdout=True, group="holdout_g"), sha="b")


def test_each_scenario_gets_the_verdict_its_ratio_and_band_give():
    c = compare(BEFORE, AFTER)
    verdicts = {x.scenario: x.verdict for x in c.changes}
    # band = 4 spreads of 0.01 = 0.04: +20 % and -10 % are changes, +2 % is not; spreads of 0.1 make a 0.4 band
    assert verdicts == {"up": FASTER, "down": SLOWER, "same": WITHIN, "breaks": BROKE, "mends": FIXED,
                        "wide": WITHIN, "held": FASTER}
    up = next(x for x in c.changes if x.scenario == "up")
    assert up.ratio == pytest.approx(1.2) and up.band == pytest.approx(0.04)
    assert c.only_before == ["gone"] and c.only_after == ["new"]
    assert c.count(BROKE) == 1 and c.count(UNTIMED) == 0


def test_groups_carry_the_geomean_ratio_and_how_many_ratios_rose():
    c = compare(BEFORE, AFTER)
    g = c.groups["g"]
    assert (g["n"], g["timed"], g["higher"]) == (5, 3, 2)  # up, down, same timed in both; breaks and mends not
    assert g["ratio"] == pytest.approx((1.2 * 0.9 * 1.02) ** (1 / 3))
    assert c.suite_ratio == pytest.approx((1.2 * 0.9 * 1.02 * 1.3) ** (1 / 4))
    assert c.holdout_ratio == pytest.approx(1.1)


def test_a_hold_out_scenario_never_matches_a_suite_scenario_of_the_same_name():
    c = compare(judgement(result("x", 1.0)), judgement(result("x", 2.0, holdout=True)))
    assert c.changes == [] and c.only_before == ["x"] and c.only_after == ["x"]


def test_by_groups_scenarios_by_what_a_pattern_matches_in_their_names(tmp_path):
    before = judgement(result("x_d64_a", 1.0), result("y_d64_b", 1.0), result("z_d128", 1.0), result("plain", 1.0),
                       result("h_d64", 1.0, holdout=True))
    after = judgement(result("x_d64_a", 1.1), result("y_d64_b", 0.9), result("z_d128", 2.0), result("plain", 1.0),
                      result("h_d64", 1.5, holdout=True), sha="b")
    c = compare(before, after, by=r"_(d\d+)")  # its first group names the row
    assert {name: (g["n"], g["higher"]) for name, g in c.groups.items()} == {
        "d64": (2, 1), "d128": (1, 1), "(no match)": (1, 0), "d64 (hold-out)": (1, 1)}
    assert c.groups["d64"]["ratio"] == pytest.approx((1.1 * 0.9) ** 0.5)
    out = invoke(write(tmp_path, "a.json", before), write(tmp_path, "b.json", after), "--by", "(")
    assert out.exit_code == 2 and "--by '('" in out.stderr and "regular expression" in out.stderr


def test_judgements_of_different_tasks_or_baselines_are_refused_in_one_sentence():
    with pytest.raises(CompareError, match="task 't' and .* 'other'"):
        compare(judgement(task="t"), judgement(task="other"))
    with pytest.raises(CompareError, match="headline baseline 'base' and .* 'fa3'"):
        compare(judgement(), judgement(baseline="fa3"))


def test_the_same_kernel_twice_is_said_to_measure_only_noise():
    assert any("same kernel file" in n for n in compare(judgement(), judgement()).notes)


@pytest.mark.parametrize("content, words", [
    (None, "no such file"),
    ("not json", "not JSON"),
    ("[1, 2]", "not a judgement"),
    ('{"task": "t", "scenarios": [{"group": "g"}]}', "scenarios[0] has no scenario name"),
])
def test_a_file_that_is_not_a_judgement_is_named_with_the_fix(tmp_path, content, words):
    path = tmp_path / "j.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(CompareError, match=re.escape(words)) as error:
        load_judgement(path)
    assert str(path) in str(error.value) and "kernelseek eval --out" in str(error.value)


def test_a_gzipped_judgement_reads_as_the_judgement_and_a_truncated_one_is_named(tmp_path):
    path = tmp_path / "j.json.gz"
    path.write_bytes(gzip.compress(json.dumps(AFTER).encode()))
    assert load_judgement(path) == AFTER
    path.write_bytes(gzip.compress(json.dumps(AFTER).encode())[:40])
    with pytest.raises(CompareError, match="gzip file that does not unpack") as error:
        load_judgement(path)
    assert str(path) in str(error.value)


def test_a_directory_is_not_called_missing(tmp_path):
    with pytest.raises(CompareError, match="not a regular file"):
        load_judgement(tmp_path)


def invoke(*args: str):
    return CliRunner().invoke(app, ["compare", *args], env={"COLUMNS": "80"})


def write(tmp_path: Path, name: str, data: dict) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def test_in_a_pipe_every_scenario_is_one_tab_separated_line_and_a_broken_one_exits_1(tmp_path):
    out = invoke(write(tmp_path, "a.json", BEFORE), write(tmp_path, "b.json", AFTER))
    assert out.exit_code == 1  # "breaks" was correct before and is not after
    lines = out.stdout.splitlines()
    assert lines[0].split("\t") == ["file", "scenario", "group", "part", "before", "after", "ratio", "band", "verdict"]
    rows = {line.split("\t")[1]: line.split("\t") for line in lines[1:]}
    assert set(rows) == {"up", "down", "same", "breaks", "mends", "wide", "held"}
    assert rows["up"][6] == "1.2" and rows["up"][8] == FASTER and rows["held"][3] == "holdout"
    assert {row[0] for row in rows.values()} == {str(tmp_path / "b.json")}
    assert "1 scenarios only in" in out.stderr and "suite geomean ratio" in out.stderr


def test_json_output_is_the_whole_comparison_and_exit_0_when_nothing_broke(tmp_path):
    after = judgement(*[s for s in AFTER["scenarios"] if s["scenario"] != "breaks"], sha="b")
    out = invoke(write(tmp_path, "a.json", BEFORE), write(tmp_path, "b.json", after), "--json")
    assert out.exit_code == 0, out.stderr
    [data] = json.loads(out.stdout)
    assert {c["scenario"]: c["verdict"] for c in data["changes"]}["down"] == SLOWER
    assert data["groups"]["h"]["higher"] == 1


def test_several_judgements_against_one_make_a_column_each(tmp_path):
    base = write(tmp_path, "a.json", BEFORE)
    fast = write(tmp_path, "fast.json", judgement(*[result(s["scenario"], 2.0, group=s["group"], holdout=s["holdout"])
                                                   for s in BEFORE["scenarios"]], sha="f"))
    slow = write(tmp_path, "slow.json", judgement(*[result(s["scenario"], 0.5, group=s["group"], holdout=s["holdout"])
                                                   for s in BEFORE["scenarios"]], sha="s"))
    out = invoke(base, fast, slow, "--json")
    assert out.exit_code == 0, out.stderr
    fast_c, slow_c = json.loads(out.stdout)
    assert (fast_c["after"], slow_c["after"]) == (fast, slow)
    assert fast_c["suite_ratio"] > 1.5 and slow_c["suite_ratio"] < 0.6
    piped = invoke(base, fast, slow)
    files = [line.split("\t")[0] for line in piped.stdout.splitlines()[1:]]
    assert files.count(fast) == files.count(slow) == 8  # every scenario of BEFORE, once per AFTER


def test_bad_input_is_one_error_line_and_exit_2(tmp_path):
    out = invoke(str(tmp_path / "missing.json"), write(tmp_path, "b.json", AFTER))
    assert out.exit_code == 2
    assert out.stderr.strip().startswith("error:") and len(out.stderr.strip().splitlines()) == 1


def test_the_shipped_kernel_and_the_one_before_it_compare_from_their_gzipped_files():
    """v76 and v77 of benchmarks/results, judged in one call on an H100."""
    out = invoke(str(REPO / "benchmarks/results/v76-sm90-full-h100-beside-v77.json.gz"),
                 str(REPO / "benchmarks/results/v77-sm90-full-h100.json.gz"))
    assert out.exit_code == 0, out.stderr
    assert len(out.stdout.splitlines()) == 1 + 188 and "suite geomean ratio" in out.stderr


def test_two_recorded_hopper_judgements_compare_whole():
    """The real files of benchmarks/results: v67 (H200) and v73 (H100), both with the hold-out of seed 2."""
    before = load_judgement(REPO / "benchmarks/results/v67-sm90-full-holdout24-s2-h200.json")
    after = load_judgement(REPO / "benchmarks/results/v73-sealed-sm90-full-holdout24-s2-h100.json")
    c = compare(before, after)
    assert len(c.changes) == 212 and not c.only_before and not c.only_after
    assert sum(c.count(v) for v in (FASTER, SLOWER, WITHIN, BROKE, FIXED, UNTIMED)) == 212
    assert c.count(BROKE) == 0 and 0.9 < c.suite_ratio < 1.1
    assert sum(g["n"] for g in c.groups.values()) == 212
