"""Output for people and for scripts: complete plain rows in a pipe, --json, --version, trace analyze over
folders, and bad input (NaN outcomes, markup in questions, wrongly typed trace fields, brackets in errors)."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from kernelseek import __version__
from kernelseek.bank.model import BankError, load_bank, load_stats
from kernelseek.cli import app
from kernelseek.harness.task import load_task
from kernelseek.trace import TraceError, read_trace

REPO = Path(__file__).resolve().parents[2]
SESSIONS = Path(__file__).parents[1] / "fixtures" / "sessions"
LONG = "a-run-name-long-enough-that-an-80-column-table-would-cut-or-fold-it-0123456789"


def run_in_a_pipe(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    """The real command with stdout a pipe (as `kernelseek ... | cat`), in an 80-column world."""
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": str(REPO)}
    env.pop("FORCE_COLOR", None)
    env.pop("TTY_COMPATIBLE", None)
    return subprocess.run([sys.executable, "-m", "kernelseek", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(params=[pytest.param("pipe", marks=pytest.mark.slow), "in_process"])
def cli(request, monkeypatch):
    """The command as `run_in_a_pipe` runs it (a child process: a few seconds, most of it importing torch),
    or in this process with stdout and stderr captured, which is not a terminal either: the same code path,
    in a fraction of the time. The child's variant runs in the full suite."""
    if request.param == "pipe":
        return run_in_a_pipe

    def in_process(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
        monkeypatch.chdir(cwd)
        monkeypatch.delenv("FORCE_COLOR", raising=False)
        monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
        result = CliRunner().invoke(app, list(args), env={"COLUMNS": "80"})
        return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)

    return in_process


def test_bank_list_in_a_pipe_prints_every_question_whole():
    result = run_in_a_pipe("bank", "list")  # a real pipe in the quick suite too: this command is cheap to start
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    questions = load_bank()
    assert lines[0].split("\t") == ["id", "kind", "fits", "asked", "wins", "gain", "text"]
    assert len(lines) == len(questions) + 1
    rows = {line.split("\t")[0]: line.split("\t") for line in lines[1:]}
    for q in questions:
        assert len(rows[q.id]) == 7 and rows[q.id][6].startswith(q.text)  # the whole text, on its row
    assert "questions" in result.stderr  # the count goes beside, not into the rows


def test_scenarios_in_a_pipe_is_one_line_per_scenario(cli):
    result = cli("scenarios", "flash_attn_fwd", "--arch", "sm90")
    assert result.returncode == 0, result.stderr
    suite = load_task("flash_attn_fwd").scenarios("sm90")
    lines = result.stdout.splitlines()
    assert len(lines) == len(suite) + 1  # `| wc -l`: a header and 188 rows
    assert [line.split("\t")[0] for line in lines[1:]] == [s.name for s in suite]
    assert all(len(line.split("\t")) == 4 for line in lines)


def _copy_run(source: Path, folder: Path) -> None:
    """A recorded session under another run id (its folder's name)."""
    shutil.copytree(source, folder)
    trace = folder / "trace.jsonl"
    trace.write_text(trace.read_text().replace(f'"run_id": "{source.name}"', f'"run_id": "{folder.name}"', 1))


def _runs_folder(tmp_path: Path) -> Path:
    """runs/ as a user has it: runs, an experiment's runs one level down, and things that are not runs."""
    runs = tmp_path / "runs"
    _copy_run(SESSIONS / "session-a", runs / LONG)
    _copy_run(SESSIONS / "session-b", runs / "experiments" / "demo" / "kernelseek-r0")
    (runs / "experiments" / "demo" / "table.md").parent.mkdir(parents=True, exist_ok=True)
    (runs / "experiments" / "demo" / "table.md").write_text("| not a run |\n")
    (runs / "scratch").mkdir()
    (runs / "notes.txt").write_text("not a run either\n")
    return runs


def test_trace_analyze_finds_runs_in_folders_and_prints_complete_rows(tmp_path, cli):
    runs = _runs_folder(tmp_path)
    result = cli("trace", "analyze", str(runs))
    assert result.returncode == 0, result.stderr
    blocks, prose, lines = {}, [], result.stdout.splitlines()
    while lines:  # prose lines, or a table: `# title`, a header, rows, a blank line
        line = lines.pop(0)
        if not line.startswith("# "):
            prose.append(line)
            continue
        header = lines.pop(0).split("\t")  # an empty table: a blank line at once
        rows = []
        while header != [""] and lines and lines[0]:
            rows.append(dict(zip(header, lines.pop(0).split("\t"), strict=True)))
        lines = lines[1:] if header != [""] else lines
        blocks[line[2:].split(" (")[0]] = rows
    assert prose[0].startswith("totals over 2 run(s)") and prose[-1].startswith("verdict: ")
    assert {r["run"] for r in blocks["runs"]} == {LONG, "kernelseek-r0"}  # names whole, nested runs found
    assert len(blocks["large gains and the question before them"]) == 8
    # as the README writes it, with runs/experiments/ present: the folders that are not runs are skipped
    listed = sorted(str(p) for p in runs.iterdir())
    result = cli("trace", "analyze", *listed)
    assert result.returncode == 0, result.stderr
    skipped = [line for line in result.stderr.splitlines() if line.startswith("skipped")]
    assert skipped == [f"skipped {runs / 'notes.txt'}: not a run (a run is a folder with a trace.jsonl, or the trace itself)",
                       f"skipped {runs / 'scratch'}: not a run (no trace.jsonl in it or below it)"]
    assert LONG in result.stdout and "kernelseek-r0" in result.stdout


def test_trace_analyze_skips_a_broken_run_it_found_but_not_one_it_was_given(tmp_path):
    runs = _runs_folder(tmp_path)
    broken = runs / "broken"
    shutil.copytree(SESSIONS / "session-a", broken)
    (broken / "trace.jsonl").write_text((broken / "trace.jsonl").read_text().replace('"step": 3', '"step": "3"', 1))
    result = CliRunner().invoke(app, ["trace", "analyze", str(runs), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert len(data["runs"]) == 2 and len(data["skipped"]) == 1 and "the field 'step' is \"3\"" in data["skipped"][0]
    result = CliRunner().invoke(app, ["trace", "analyze", str(broken)])
    assert result.exit_code == 1 and "not a whole number" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(app, ["trace", "analyze", str(runs / "scratch")])
    assert result.exit_code == 1 and "no run to analyse" in result.output


def test_json_on_the_listing_commands():
    result = CliRunner().invoke(app, ["bank", "list", "--json"])
    assert result.exit_code == 0
    listed = json.loads(result.stdout)
    assert {q["id"] for q in listed} == {q.id for q in load_bank()} and all("text" in q for q in listed)
    result = CliRunner().invoke(app, ["bank", "show", listed[0]["id"], "--json"])
    assert json.loads(result.stdout)["text"] == listed[0]["text"]
    result = CliRunner().invoke(app, ["scenarios", "rmsnorm_cpu", "--arch", "cpu", "--json"])
    scenarios = json.loads(result.stdout)
    assert [s["name"] for s in scenarios] == [s.name for s in load_task("rmsnorm_cpu").scenarios("cpu")]
    assert scenarios[0]["params"] == {"rows": 1, "cols": 4096}


def test_version():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"kernelseek {__version__}"


# --- the review's bad input -------------------------------------------------------------------------

def _bank(tmp_path: Path, **entry) -> Path:
    good = {"id": "q1", "text": "Which layer?", "kind": "layer_shift", "fits": ["plateau"]}
    (tmp_path / "seed.yaml").write_text(yaml.safe_dump({"questions": [{**good, **entry}]}))
    return tmp_path


@pytest.mark.parametrize("value", [math.nan, math.inf, -1])
def test_a_bank_file_with_nan_or_negative_outcomes_is_refused_in_one_sentence(tmp_path, value):
    bank = _bank(tmp_path, outcomes={"asked": 2, "mean_gain": value})
    with pytest.raises(BankError, match="'mean_gain' = .*not a finite number of 0 or more"):
        load_bank(bank)
    result = CliRunner().invoke(app, ["bank", "list", "--bank-dir", str(bank)])
    assert result.exit_code == 1 and "Traceback" not in result.output and "mean_gain" in result.output


def test_stats_with_nan_gains_are_refused(tmp_path):
    stats = tmp_path / "stats.json"
    stats.write_text('{"version": 1, "runs": {"u1": {"outcomes": [{"id": "q1", "gain": NaN}]}}}')
    with pytest.raises(BankError, match="'gain' = nan"):
        load_stats(stats)


@pytest.mark.parametrize("text", ["Is it [/bold] or [bold]not[/]?", "Why [red]this[/red] limit [x]?"])
def test_question_text_is_printed_as_written_not_as_markup(tmp_path, monkeypatch, text):
    bank = _bank(tmp_path, text=text)
    for terminal in ("1", "0"):
        monkeypatch.setenv("TTY_COMPATIBLE", terminal)
        result = CliRunner().invoke(app, ["bank", "list", "--bank-dir", str(bank)], env={"COLUMNS": "300"})
        assert result.exit_code == 0, result.output
        assert text in result.stdout
        result = CliRunner().invoke(app, ["bank", "show", "q1", "--bank-dir", str(bank)], env={"COLUMNS": "300"})
        assert result.exit_code == 0, result.output
        assert f"text: {text}" in result.stdout


@pytest.mark.parametrize("field, value, words", [
    ("step", "3", "the field 'step' is \"3\", not a whole number"),
    ("time", 5, "the field 'time' is 5, not a string"),
    ("speedup", "fast", "field 'speedup' is \"fast\", not a number or null"),
    ("correct", "yes", "field 'correct' is \"yes\", not true or false"),
    ("cost_usd", "free", "field 'cost_usd' is \"free\", not a number or null"),
    ("tool_calls", "none", "field 'tool_calls' is \"none\", not a list"),
    ("detail", None, "field 'detail' is null, not a string"),
])
def test_wrongly_typed_trace_fields_give_one_sentence(tmp_path, field, value, words):
    folder = tmp_path / "run"
    shutil.copytree(SESSIONS / "session-a", folder)
    lines = (folder / "trace.jsonl").read_text().splitlines()
    for i, line in enumerate(lines):
        event = json.loads(line)
        if field in event:
            event[field] = value
            lines[i] = json.dumps(event)
            break
    (folder / "trace.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=f"line {i + 1}: .*{words[-20:]}"):
        read_trace(folder / "trace.jsonl")
    for args in (["trace", "show", str(folder)], ["trace", "analyze", str(folder)]):
        result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
        assert result.exit_code in (1, 2) and "Traceback" not in result.output, result.output
        assert words in result.output


def test_error_messages_keep_their_brackets(tmp_path):
    config = tmp_path / "exp.yaml"
    config.write_text("name: x\ntask: rmsnorm_cpu\ngraphs: [[kernelseek]]\n")
    result = CliRunner().invoke(app, ["experiment", str(config)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "(e.g. [kernelseek, tool_rich, no_question])" in result.output
